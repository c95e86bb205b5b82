/** The two faces of a report (verify.md "Verdicts and exit status"): text with the verdict first, and one JSON document. */
import { describe, expect, test } from "bun:test";
import { VERDICT_EXIT, VERIFY_USAGE_EXIT, lossFinding, unknownFinding, verdictOf } from "../../../src/verify/findings.ts";
import { NON_AUTHENTICATION_NOTE, renderJson, renderText } from "../../../src/verify/render.ts";
import type { VerifyReport } from "../../../src/verify/verify-capture.ts";

const report = (over: Partial<VerifyReport> = {}): VerifyReport => ({
  verdict: "closed",
  reasons: [],
  session_id: "abc",
  server: { exit_code: 7, signal: null },
  decisions: { written: 3, dropped: 0, verified: 3 },
  ...over,
});

describe("verdicts", () => {
  test("any unknown finding wins over a loss; a loss alone is incomplete; nothing is closed", () => {
    const u = unknownFinding("decision_digest_mismatch", "decisions.ndjson", "m");
    const l = lossFinding("decision_events_lost", "decisions.ndjson", "m");
    expect(verdictOf([])).toBe("closed");
    expect(verdictOf([l])).toBe("incomplete");
    expect(verdictOf([l, u])).toBe("unknown");
    expect(verdictOf([u, l])).toBe("unknown");
  });

  test("exit statuses are public API: 0 / 1 / 2, usage 64", () => {
    expect(VERDICT_EXIT).toEqual({ closed: 0, incomplete: 1, unknown: 2 });
    expect(VERIFY_USAGE_EXIT).toBe(64);
  });
});

describe("text", () => {
  test("the verdict alone on the first line, then one line per finding, then the note", () => {
    const reasons = [
      unknownFinding("decision_count_mismatch", "decisions.ndjson", "11 complete lines but session-stop says 12 written"),
      lossFinding("decision_events_lost", "decisions.ndjson", "lost"),
    ];
    const lines = renderText(report({ verdict: "unknown", reasons })).split("\n");
    expect(lines[0]).toBe("unknown");
    expect(lines).toContain("✗ decisions.ndjson: 11 complete lines but session-stop says 12 written");
    expect(lines).toContain("! decisions.ndjson: lost");
    expect(lines.at(-1)).toBe(`note: ${NON_AUTHENTICATION_NOTE}`);
  });

  test("the note says closed does not authenticate the producer nor mean success", () => {
    expect(NON_AUTHENTICATION_NOTE).toMatch(/does not authenticate the producer/);
    expect(NON_AUTHENTICATION_NOTE).toMatch(/not that the server ran successfully/);
    expect(renderText(report())).toContain(NON_AUTHENTICATION_NOTE);
  });

  test("without a stop record there is no session line", () => {
    const text = renderText(report({ verdict: "unknown", session_id: null, server: null, decisions: { written: null, dropped: null, verified: 0 } }));
    expect(text.split("\n")).toHaveLength(2);
  });
});

describe("--json", () => {
  test("exactly the documented members; findings without their internal effect", () => {
    const doc = JSON.parse(renderJson(report({ verdict: "incomplete", reasons: [lossFinding("decision_events_lost", "decisions.ndjson", "m")] })));
    expect(doc).toEqual({
      verdict: "incomplete",
      reasons: [{ code: "decision_events_lost", file: "decisions.ndjson", message: "m" }],
      session_id: "abc",
      server: { exit_code: 7, signal: null },
      decisions: { written: 3, dropped: 0, verified: 3 },
    });
  });

  test("one line", () => {
    expect(renderJson(report({ reasons: [unknownFinding("manifest_file_unlisted", "a\nb", "m")] }))).not.toContain("\n");
  });
});
