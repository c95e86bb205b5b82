/**
 * Which model failures are outages (serve.md §5 "Outages are not attempts"): the model never
 * accepted the request, so the run ends `model_unavailable` and its batch counts no attempt.
 */
import { describe, expect, test } from "bun:test";
import { COMMAND_TEMPFAIL_EXIT, MODEL_UNAVAILABLE, isModelUnavailable, unavailableRunCode } from "../../../src/serve/models/availability.ts";
import { ModelError } from "../../../src/serve/models/types.ts";

const http = (status: number) => new ModelError("http", `model HTTP ${status}`, { status });

describe("an outage, not the request's fault", () => {
  test.each([
    ["connect error", new ModelError("connect", "refused")],
    ["request timeout", new ModelError("timeout", "timed out")],
    ["command could not start", new ModelError("spawn", "ENOENT")],
    ["408", http(408)],
    ["429", http(429)],
    ["500", http(500)],
    ["503", http(503)],
    ["599", http(599)],
    [`command exit ${COMMAND_TEMPFAIL_EXIT} (EX_TEMPFAIL)`, new ModelError("exit", "exited 75", { exitCode: COMMAND_TEMPFAIL_EXIT })],
  ])("%s", (_, error) => {
    expect(isModelUnavailable(error)).toBe(true);
    expect(unavailableRunCode(error, 0)).toBe(MODEL_UNAVAILABLE);
  });
});

describe("counts as an attempt", () => {
  test.each([
    ["400", http(400)],
    ["401", http(401)],
    ["413", http(413)],
    ["a malformed response", new ModelError("protocol", "not JSON")],
    ["command exit 1", new ModelError("exit", "exited 1", { exitCode: 1 })],
    ["an abort", new ModelError("aborted", "aborted")],
    ["not a model error", new Error("boom")],
  ])("%s", (_, error) => {
    expect(isModelUnavailable(error)).toBe(false);
    expect(unavailableRunCode(error, 0)).toBeUndefined();
  });

  test("an outage after the model answered a turn of the run", () => {
    expect(unavailableRunCode(http(503), 1)).toBeUndefined();
  });
});
