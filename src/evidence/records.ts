/**
 * Record data shapes (wrap.md §5–§8). Builders only: they take observed facts and return the
 * CloudEvent to write. Field order is fixed so that records are stable byte-for-byte.
 */
import type { ChildStatus } from "../shared/process-group.ts";
import type { ChainHead } from "./chain.ts";
import {
  CONTEXT_TYPE,
  DECISION_TYPE,
  NON_CLAIMS,
  RECEIPT_TYPE,
  STOP_TYPE,
  STOP_TYPE_V2,
  cloudEvent,
  contextEventId,
  decisionEventId,
  receiptEventId,
  stopEventId,
} from "./format.ts";

export type DecisionKind = "allow" | "deny" | "would_deny";

export interface DecisionData {
  session_id: string;
  seq: number;
  server_id: string;
  request_id: string | number;
  tool: string | null;
  decision: DecisionKind;
  reason_code: string;
  reason: string;
  matched_rule: string | null;
  policy_digest: string | null;
  arguments_sha256: string;
  dry_run: boolean;
}

export function decisionEvent(source: string, data: DecisionData): Record<string, unknown> {
  const { session_id, seq } = data;
  return cloudEvent(DECISION_TYPE, source, decisionEventId(session_id, seq), data as unknown as Record<string, unknown>, data.tool ?? "");
}

export type ReceiptOutcome = "response" | "error" | "denied" | "rejected" | "no_response";

export interface ReceiptData {
  session_id: string;
  seq: number;
  request_id: string | number;
  method: string | null;
  tool?: string;
  outcome: ReceiptOutcome;
  request_sha256: string;
  response_sha256?: string;
  request_bytes: number;
  response_bytes?: number;
  started_at: string;
  duration_us: number;
}

export function receiptEvent(source: string, data: ReceiptData): Record<string, unknown> {
  return cloudEvent(RECEIPT_TYPE, source, receiptEventId(data.session_id, data.seq), { ...data });
}

export interface ContextData {
  session_id: string;
  server_id: string;
  server_pid: number;
  event_source: string;
  started_at: string;
  vigil_version: string;
  command_sha256: string;
  policy_digest: string | null;
  dry_run: boolean;
  protocol_version: string | null;
  client_info: { name: string; version: string } | null;
  server_info: { name: string; version: string } | null;
  outputs: { decision_log: "new" | "append" | "absent"; receipts: boolean; session_stop: boolean };
}

export function contextEvent(source: string, data: ContextData): Record<string, unknown> {
  return cloudEvent(CONTEXT_TYPE, source, contextEventId(data.session_id), { ...data });
}

export type SessionEnd = "client_closed" | "server_exited" | "proxy_signaled" | "proxy_error";
export type DecisionLogState = "complete" | "incomplete" | "temporary" | "absent" | "unknown";

export interface Counts {
  client_messages: number;
  server_messages: number;
  rejected_frames: number;
  server_garbage_lines: number;
  oversized: number;
}

export interface StopData {
  session_id: string;
  server_id: string;
  server_pid: number;
  session_context_id: string | null;
  session_end: SessionEnd;
  status: ChildStatus;
  kill_requested: boolean;
  decision_log: DecisionLogState;
  decision_events_written: number | null;
  decision_events_dropped: number | null;
  decision_prefix_sha256: string | null;
  receipts: { written: number; dropped: number; prefix_sha256: string } | null;
  counts: Counts;
}

export function stopEvent(source: string, d: StopData): Record<string, unknown> {
  return cloudEvent(STOP_TYPE, source, stopEventId(d.session_id), { ...stopMembers(d), ...stopBasis() });
}

/** What a v2 stop record adds: each log's chain, and the signed checkpoints (null without a signing key). */
export interface StopDataV2 extends StopData {
  /** Count and head of each log this session opened, by log file name. */
  chains: Record<string, ChainHead>;
  checkpoints: { written: number } | null;
}

/** `vigil.mcp.session.stop.v2`: v1's members in v1's order, then `chains` and `checkpoints` before `assertion_basis`. */
export function stopEventV2(source: string, d: StopDataV2): Record<string, unknown> {
  const chains: Record<string, ChainHead> = {};
  for (const [name, head] of Object.entries(d.chains)) chains[name] = { count: head.count, head: head.head };
  return cloudEvent(STOP_TYPE_V2, source, stopEventId(d.session_id), {
    ...stopMembers(d),
    chains,
    checkpoints: d.checkpoints === null ? null : { written: d.checkpoints.written },
    ...stopBasis(),
  });
}

const stopBasis = () => ({ assertion_basis: "producer_observation", non_claims: [...NON_CLAIMS] });

/** The members v1 and v2 share, up to `counts`, in the format's order. */
function stopMembers(d: StopData): Record<string, unknown> {
  return {
    session_id: d.session_id,
    server_id: d.server_id,
    server_pid: d.server_pid,
    session_context_id: d.session_context_id,
    session_end: d.session_end,
    termination: d.status.termination,
    exit_code: d.status.exit_code,
    signal: d.status.signal,
    core_dumped: d.status.core_dumped,
    kill_requested: d.kill_requested,
    decision_log: d.decision_log,
    decision_events_written: d.decision_events_written,
    decision_events_dropped: d.decision_events_dropped,
    decision_prefix_sha256: d.decision_prefix_sha256,
    receipts: d.receipts,
    counts: { ...d.counts },
  };
}
