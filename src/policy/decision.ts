/**
 * The outcome of evaluating one `tools/call`: the shape recorded in the decision log (wrap.md §5)
 * and rendered into deny replies (§4.4). Reasons are fixed sentences built from the policy, never
 * from the call's arguments, because they are written to logs.
 */
import type { Violation } from "./argument-schema.ts";

export const REASON_CODES = [
  "P_ALLOW",
  "E_INVALID_CALL",
  "E_TOOL_UNVERIFIED",
  "E_TOOL_DRIFT",
  "E_RATE_LIMIT",
  "E_TOOL_DENIED",
  "E_TOOL_NOT_ALLOWED",
  "E_ARG_SCHEMA",
  "E_TOOL_UNCONSTRAINED",
  /** Decided by the proxy, not the policy: a requested evidence writer failed (wrap.md §1). */
  "E_EVIDENCE_UNAVAILABLE",
  /** No policy governs the call (wrap --allow-all, serve without `policy`): allowed and recorded (wrap.md §1). */
  "no_policy",
] as const;

export type ReasonCode = (typeof REASON_CODES)[number];

export interface Decision {
  decision: "allow" | "deny";
  /** P_ALLOW, no_policy, or the E_… code; an allow may carry E_TOOL_UNCONSTRAINED (unconstrained: warn). */
  reason_code: ReasonCode;
  /** One sentence, e.g. "tool is on the deny list". */
  reason: string;
  /** The policy rule that decided, e.g. "tools.deny[1]"; null when no rule did. */
  matched_rule: string | null;
  violations: Violation[];
}

export function allowDecision(reason_code: "P_ALLOW" | "E_TOOL_UNCONSTRAINED", reason: string, matched_rule: string | null): Decision {
  return { decision: "allow", reason_code, reason, matched_rule, violations: [] };
}

export function denyDecision(
  reason_code: Exclude<ReasonCode, "P_ALLOW" | "no_policy">,
  reason: string,
  matched_rule: string | null,
  violations: Violation[] = [],
): Decision {
  return { decision: "deny", reason_code, reason, matched_rule, violations };
}

/** The allow of a call no policy governs; `reason` says why there is none (e.g. --allow-all). */
export function noPolicyDecision(reason: string): Decision {
  return { decision: "allow", reason_code: "no_policy", reason, matched_rule: null, violations: [] };
}

/** The proxy's fail-closed denial once a requested evidence writer has failed. */
export function evidenceUnavailableDecision(): Decision {
  return denyDecision("E_EVIDENCE_UNAVAILABLE", "the decision could not be recorded, so the call is refused", null);
}
