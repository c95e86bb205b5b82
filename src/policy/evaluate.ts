/**
 * Policy evaluation of one `tools/call` (wrap.md §4.2). Pure: the policy, the session state, the
 * call's params and the time go in; a Decision comes out. Nothing is mutated; the proxy records a
 * forwarded call separately (session.ts: recordForwardedCall).
 *
 * Order: well-formed call → pins → limits → deny list → allow list → argument schema →
 * `unconstrained` rule → allow. Earlier steps win: a pinned tool that drifted is refused even when
 * it is also on the deny list, and a rate-limited session is refused before names are looked at.
 */
import { argumentViolations } from "./argument-schema.ts";
import { nameRuling, type CompiledPolicy } from "./compile.ts";
import { allowDecision, denyDecision, type Decision } from "./decision.ts";
import { formatDocumentPath } from "../shared/document-path.ts";
import { isRecord } from "../shared/guards.ts";
import { hasToken, type PolicySession } from "./session.ts";

/** Decides a tools/call. `params` is the request's `params` as parsed; `nowMs` is from a monotonic clock. */
export function evaluateToolCall(policy: CompiledPolicy, session: PolicySession, params: unknown, nowMs: number): Decision {
  const name = isRecord(params) ? params.name : undefined;
  if (typeof name !== "string") {
    return denyDecision("E_INVALID_CALL", "tools/call params.name is missing or not a string", null);
  }
  const args = (params as Record<string, unknown>).arguments;
  // MCP defines arguments as an optional object; anything else cannot be judged by a schema.
  if (args !== undefined && !isRecord(args)) {
    return denyDecision("E_INVALID_CALL", "tools/call params.arguments is not an object", null);
  }
  return checkPin(policy, session, name) ?? checkLimits(policy, session, nowMs) ?? checkNameAndArguments(policy, name, args ?? {});
}

function checkPin(policy: CompiledPolicy, session: PolicySession, name: string): Decision | null {
  const pinned = policy.pins.get(name);
  if (pinned === undefined) return null;
  const rule = formatDocumentPath(["pins", name]);
  const seen = session.definitions.get(name);
  // Unlike Assay, a pin is enforced before any tools/list was seen: unverified means refused.
  if (seen === undefined) {
    return denyDecision("E_TOOL_UNVERIFIED", "tool is pinned but its definition has not been seen in tools/list", rule);
  }
  if (seen !== pinned) return denyDecision("E_TOOL_DRIFT", "tool definition differs from its pinned digest", rule);
  return null;
}

function checkLimits(policy: CompiledPolicy, session: PolicySession, nowMs: number): Decision | null {
  if (policy.maxToolCalls !== null && session.toolCalls >= policy.maxToolCalls) {
    return denyDecision(
      "E_RATE_LIMIT",
      `the session limit of ${policy.maxToolCalls} tool calls is reached`,
      "limits.max_tool_calls",
    );
  }
  if (policy.rate && session.bucket && !hasToken(session.bucket, nowMs)) {
    const { calls, perSeconds } = policy.rate;
    return denyDecision("E_RATE_LIMIT", `the rate limit of ${calls} calls per ${perSeconds} seconds is exceeded`, "limits.rate");
  }
  return null;
}

function checkNameAndArguments(policy: CompiledPolicy, name: string, args: Record<string, unknown>): Decision {
  const ruling = nameRuling(policy, name);
  if (ruling.kind === "denied") {
    return denyDecision("E_TOOL_DENIED", "tool is on the deny list", `tools.deny[${ruling.index}]`);
  }
  if (ruling.kind === "not_allowed") {
    return denyDecision("E_TOOL_NOT_ALLOWED", "tool is not on the allow list", "tools.allow");
  }
  const validate = policy.argumentValidators.get(name);
  if (validate) {
    const rule = formatDocumentPath(["arguments", name]);
    const violations = argumentViolations(validate, args);
    if (violations.length > 0) {
      return denyDecision("E_ARG_SCHEMA", "arguments do not match the policy's schema for this tool", rule, violations);
    }
    return allowDecision("P_ALLOW", "arguments match the policy's schema for this tool", rule);
  }
  switch (policy.unconstrained) {
    case "deny":
      return denyDecision("E_TOOL_UNCONSTRAINED", "tool has no argument schema and unconstrained tools are denied", "unconstrained");
    case "warn":
      return allowDecision("E_TOOL_UNCONSTRAINED", "tool has no argument schema; allowed with a warning", "unconstrained");
    case "allow":
      return allowDecision("P_ALLOW", "allowed by policy", ruling.index === null ? null : `tools.allow[${ruling.index}]`);
  }
}
