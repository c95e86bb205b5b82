import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkPolicy } from "../../../src/policy/check.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";

const dir = mkdtempSync(join(tmpdir(), "vigil-policy-check-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("checkPolicy", () => {
  test("summarizes a full policy", async () => {
    const pin = `sha256:${"0".repeat(64)}`;
    const text = `version: 1
tools: {allow: [read_*, list], deny: [exec], hide_denied: true}
arguments: {read_file: {type: object}, list: {type: object}}
unconstrained: deny
limits: {max_tool_calls: 10, rate: {calls: 5, per_seconds: 2.5}}
pins: {read_file: "${pin}"}
`;
    const path = join(dir, "full.yaml");
    writeFileSync(path, text);
    const summary = await checkPolicy(path);
    expect(summary).toEqual({
      path,
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      file_sha256: sha256Hex(text),
      tools: { allow: 2, deny: 1, hide_denied: true },
      arguments: ["read_file", "list"],
      unconstrained: "deny",
      limits: { max_tool_calls: 10, rate: { calls: 5, per_seconds: 2.5 } },
      pins: ["read_file"],
    });
  });

  test("a minimal policy: no allow list (null), defaults applied", async () => {
    const path = join(dir, "min.json");
    writeFileSync(path, '{"version":1,"tools":{}}');
    expect(await checkPolicy(path)).toMatchObject({
      tools: { allow: null, deny: 0, hide_denied: false },
      arguments: [],
      unconstrained: "allow",
      limits: { max_tool_calls: null, rate: null },
      pins: [],
    });
  });

  test("an invalid policy is a policy_invalid error", async () => {
    const path = join(dir, "bad.json");
    writeFileSync(path, '{"version":1,"tool":{}}');
    await expect(checkPolicy(path)).rejects.toMatchObject({ code: "policy_invalid", exitCode: 2 });
  });
});
