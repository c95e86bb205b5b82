/**
 * Run and tool-call metrics (issue 15 item 1): runs by outcome, tool calls by server, tool,
 * decision and reason code, and the duration of the calls forwarded to MCP servers. Labels are
 * names vigil or the servers chose (a policy reason code, a listed tool), never an argument; a tool
 * name the model made up is not a label (it would let the model mint series): it counts as
 * `_unknown`.
 */
import { RUNS, TOOLS } from "../../shared/metrics/catalog.ts";
import type { RunStatus } from "../protocol/frames.ts";

/** Run outcomes: the run_end status, with an outage of the model apart from other failures. */
export const RUN_OUTCOMES = ["ok", "failed", "aborted", "model_unavailable"] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** Pure. */
export function runOutcome(status: RunStatus, code: string | undefined): RunOutcome {
  return status === "failed" && code === "model_unavailable" ? "model_unavailable" : status;
}

const RUNS_BY = Object.fromEntries(RUN_OUTCOMES.map((o) => [o, RUNS.runs.at(o)])) as Record<RunOutcome, ReturnType<typeof RUNS.runs.at>>;

export function countRun(status: RunStatus, code: string | undefined): void {
  RUNS_BY[runOutcome(status, code)].inc();
}

/** Codes of the denials no policy took (the call never reached a decision; `no_tools`: the session had no tools to offer). */
export type GatewayDenial = "unknown_tool" | "server_unavailable" | "not_offered" | "no_tools";
export const UNKNOWN_TOOL_LABEL = "_unknown";

/** A decided call: `code` is the policy's reason code (P_ALLOW, no_policy, E_…) or a GatewayDenial. */
export function countToolCall(server: string, tool: string, decision: "allow" | "deny", code: string): void {
  TOOLS.calls.at(server, tool, decision, code).inc();
}

/** A call that could not be placed: the model named no listed tool, or none was offered (no servers). */
export function countUnplacedCall(code: Extract<GatewayDenial, "unknown_tool" | "server_unavailable" | "no_tools">): void {
  TOOLS.calls.at("", UNKNOWN_TOOL_LABEL, "deny", code).inc();
}

/** The duration child of a forwarded call; `observeSince(start)` when it settled. */
export function toolCallTimer(server: string, tool: string): { observeSince(startMs: number): void } {
  return TOOLS.latency.at(server, tool);
}
