import { describe, expect, test } from "bun:test";
import { denyDecision, evidenceUnavailableDecision } from "../../../src/policy/decision.ts";
import { denyReplyResult } from "../../../src/policy/deny-reply.ts";

describe("denyReplyResult", () => {
  test("matches wrap.md §4.4 for a deny-list decision", () => {
    const decision = denyDecision("E_TOOL_DENIED", "tool is on the deny list", "tools.deny[1]");
    expect(denyReplyResult(decision, "exec")).toEqual({
      isError: true,
      content: [{ type: "text", text: "vigil: call to exec blocked by policy (E_TOOL_DENIED: tool is on the deny list)" }],
      structuredContent: {
        vigil: { decision: "deny", error_code: "E_TOOL_DENIED", tool: "exec", reason: "tool is on the deny list", violations: [] },
      },
    });
  });

  test("carries the violations of an argument-schema denial", () => {
    const violations = [{ path: "/path", message: 'must match pattern "^/workspace/"' }];
    const reply = denyReplyResult(denyDecision("E_ARG_SCHEMA", "arguments do not match", "arguments.read_file", violations), "read_file");
    expect(reply.structuredContent.vigil.violations).toEqual(violations);
    expect(reply.content[0].text).toBe("vigil: call to read_file blocked by policy (E_ARG_SCHEMA: arguments do not match)");
  });

  test("tool is null for an invalid call", () => {
    const reply = denyReplyResult(denyDecision("E_INVALID_CALL", "tools/call params.name is missing or not a string", null), null);
    expect(reply.structuredContent.vigil.tool).toBeNull();
    expect(reply.content[0].text).toBe(
      "vigil: call blocked by policy (E_INVALID_CALL: tools/call params.name is missing or not a string)",
    );
  });

  test("the proxy's evidence-failure denial renders the same way", () => {
    const reply = denyReplyResult(evidenceUnavailableDecision(), "read_file");
    expect(reply.structuredContent.vigil.error_code).toBe("E_EVIDENCE_UNAVAILABLE");
    expect(reply.isError).toBe(true);
  });
});
