/**
 * The frames `vigil serve` sends to clients (serve.md §4; `mcp_event` and `mcp_event_status` per the
 * events design notes §6.1–6.2), as types and small builders. Field names are exactly those of §4.
 *
 * Every frame carries a `seq` (per session, monotonic) that the session assigns when it emits the
 * frame; the builders here leave it out (`FrameBody`), and `Sequenced<F>` is the frame as sent.
 */
import type { CommandId, CommandName, EventAction, EventDelivery } from "./commands.ts";

export const PROTOCOL_VERSION = 1 as const;

/** Stable lower_snake error codes of a failed `response`. */
export type ProtocolErrorCode =
  | "invalid_json"
  | "unknown_command"
  | "invalid_command"
  | "too_large"
  // Codes the session answers with (for commands that parsed).
  | "busy"
  | "not_found"
  | "refused"
  | "internal"
  | (string & {});

export interface ProtocolError {
  code: ProtocolErrorCode;
  /** One line; names the field, never echoes a prompt's text. */
  message: string;
}

export interface ResponseOk<D = unknown> {
  type: "response";
  id: CommandId;
  command: CommandName;
  success: true;
  data: D;
}

export interface ResponseError {
  type: "response";
  /** null when the command's id could not be recovered. */
  id: CommandId | null;
  /** null when the command's type could not be recovered. */
  command: CommandName | null;
  success: false;
  error: ProtocolError;
}

export type ResponseFrame<D = unknown> = ResponseOk<D> | ResponseError;

export type RunTrigger = "prompt" | "follow_up" | "steer" | "mcp_events" | (string & {});

export interface RunStartFrame {
  type: "run_start";
  run_id: string;
  trigger: RunTrigger;
}

export type MessageRole = "user" | "assistant" | "system" | "tool";

export interface MessageFrame {
  type: "message";
  role: MessageRole;
  text: string;
}

export interface ToolCallFrame {
  type: "tool_call";
  run_id: string;
  server: string;
  tool: string;
  arguments_sha256: string;
  decision: "allow" | "deny";
}

export interface ToolResultFrame {
  type: "tool_result";
  run_id: string;
  is_error: boolean;
}

export type RunStatus = "ok" | "failed" | "aborted";

export interface RunEndFrame {
  type: "run_end";
  run_id: string;
  status: RunStatus;
  error?: string;
}

/** One occurrence, verbatim (push and webhook occurrences carry their `cursor`). */
export interface McpEventOccurrence {
  eventId: string;
  name: string;
  timestamp?: string;
  data?: unknown;
  cursor?: string;
  [key: string]: unknown;
}

export interface McpEventFrame {
  type: "mcp_event";
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  delivery: EventDelivery;
  action: EventAction;
  event: McpEventOccurrence;
}

/** Subscription state in `mcp_events_list` and in a `subscribed` status frame (notes §2.2). */
export type SubscriptionState = "starting" | "active" | "retrying" | "terminated" | "stopped";

export interface SubscriptionStatus {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  delivery: EventDelivery;
  action: EventAction;
  state: SubscriptionState;
  cursor: string | null;
  delivered: number;
  duplicates: number;
  refreshes: number;
  last_error: string | null;
  refresh_before: string | null;
  subscription_id: string | null;
  delivery_status: unknown;
}

/** The subscription a status frame is about (the key: server, name, canonical arguments). */
export interface SubscriptionKey {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** The kind-specific fields of an `mcp_event_status` frame (notes §6.2). */
export type McpEventStatusDetail =
  | { kind: "subscribed"; subscription: SubscriptionStatus }
  | { kind: "error"; error: string; retry_in_ms?: number }
  | { kind: "refused"; error: string; retry_in_ms: number }
  | { kind: "terminated"; error: JsonRpcErrorBody }
  | { kind: "gap"; cursor: string | null; reason: string; event_id: string | null; possibly_not_an_event?: boolean }
  | { kind: "resubscribed" }
  | { kind: "dropped"; event: McpEventOccurrence; error: string }
  | { kind: "delivery_status"; delivery_status: unknown };

export type McpEventStatusKind = McpEventStatusDetail["kind"];

export type McpEventStatusFrame = { type: "mcp_event_status" } & SubscriptionKey & McpEventStatusDetail;

/** A frame as built, before the session numbers it. */
export type FrameBody =
  | ResponseFrame
  | RunStartFrame
  | MessageFrame
  | ToolCallFrame
  | ToolResultFrame
  | RunEndFrame
  | McpEventFrame
  | McpEventStatusFrame;

export type FrameType = FrameBody["type"];

/** A frame as sent: numbered per session. */
export type Sequenced<F extends FrameBody = FrameBody> = F & { seq: number };
export type Frame = Sequenced;

// ---- `response` data shapes ----

export interface RunStateSummary {
  status: "idle" | "running";
  run_id: string | null;
}

/** `get_state` data. */
export interface GetStateData {
  protocol_version: typeof PROTOCOL_VERSION;
  session: string;
  run: RunStateSummary;
  /** Queued prompts and pending events not yet given to the model. */
  pending: number;
  subscriptions: { active: number; unestablished: number };
  /** The last `seq` emitted, for `?since=`. */
  seq: number;
}

export interface UnestablishedSubscription extends SubscriptionKey {
  state: "starting" | "retrying" | "refused";
  last_error: string | null;
}

export type AvailableEvents =
  | { server: string; supported: true; events: unknown[] }
  | { server: string; supported: false; error: string };

/** `mcp_events_list` data (notes §2.2). */
export interface McpEventsListData {
  spec_commit: string;
  webhook: boolean;
  owns_configured: boolean;
  subscriptions: SubscriptionStatus[];
  unestablished: UnestablishedSubscription[];
  available: AvailableEvents[];
  pending: number;
}

/** `mcp_events_unsubscribe` data. */
export interface McpEventsUnsubscribeData {
  removed: boolean;
}

// ---- builders (no `seq`) ----

export function okResponse<D>(id: CommandId, command: CommandName, data: D): ResponseOk<D> {
  return { type: "response", id, command, success: true, data };
}

export function errorResponse(
  id: CommandId | null,
  command: CommandName | null,
  code: ProtocolErrorCode,
  message: string,
): ResponseError {
  return { type: "response", id, command, success: false, error: { code, message } };
}

export function runStartFrame(run_id: string, trigger: RunTrigger): RunStartFrame {
  return { type: "run_start", run_id, trigger };
}

export function messageFrame(role: MessageRole, text: string): MessageFrame {
  return { type: "message", role, text };
}

export function toolCallFrame(f: Omit<ToolCallFrame, "type">): ToolCallFrame {
  return { type: "tool_call", run_id: f.run_id, server: f.server, tool: f.tool, arguments_sha256: f.arguments_sha256, decision: f.decision };
}

export function toolResultFrame(run_id: string, is_error: boolean): ToolResultFrame {
  return { type: "tool_result", run_id, is_error };
}

export function runEndFrame(run_id: string, status: RunStatus, error?: string): RunEndFrame {
  return error === undefined ? { type: "run_end", run_id, status } : { type: "run_end", run_id, status, error };
}

export function mcpEventFrame(f: Omit<McpEventFrame, "type">): McpEventFrame {
  return {
    type: "mcp_event",
    server: f.server,
    name: f.name,
    arguments: f.arguments,
    delivery: f.delivery,
    action: f.action,
    event: f.event,
  };
}

export function mcpEventStatusFrame(key: SubscriptionKey, detail: McpEventStatusDetail): McpEventStatusFrame {
  const { kind, ...extra } = detail;
  return { type: "mcp_event_status", kind, server: key.server, name: key.name, arguments: key.arguments, ...extra } as McpEventStatusFrame;
}
