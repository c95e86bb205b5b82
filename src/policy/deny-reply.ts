/**
 * What the client gets when a call is denied (wrap.md §4.4): a normal tools/call result with
 * isError, so the model sees why. The proxy wraps it as {"jsonrpc":"2.0","id":…,"result":…}.
 */
import type { Violation } from "./argument-schema.ts";
import type { Decision } from "./decision.ts";

export interface DenyResult {
  isError: true;
  content: [{ type: "text"; text: string }];
  structuredContent: {
    vigil: {
      decision: "deny";
      error_code: Decision["reason_code"];
      /** null when the call had no usable name (E_INVALID_CALL). */
      tool: string | null;
      reason: string;
      violations: Violation[];
    };
  };
}

/** The result object for a deny decision. `tool` is the requested name, or null if it had none. */
export function denyReplyResult(decision: Decision, tool: string | null): DenyResult {
  const subject = tool === null ? "call" : `call to ${tool}`;
  return {
    isError: true,
    content: [{ type: "text", text: `vigil: ${subject} blocked by policy (${decision.reason_code}: ${decision.reason})` }],
    structuredContent: {
      vigil: {
        decision: "deny",
        error_code: decision.reason_code,
        tool,
        reason: decision.reason,
        violations: decision.violations,
      },
    },
  };
}
