/**
 * The frames `vigil serve` sends to clients (serve.md §4), as types and small builders. Field names
 * are exactly those of §4. `mcp_event` and `mcp_event_status` (events design notes §6.1–6.2) are the
 * events client's own (events/frames.ts); the union below embeds them unchanged.
 *
 * Every frame carries a `seq` (per session, monotonic) that the session assigns when it emits the
 * frame; the builders here leave it out (`FrameBody`), and `Sequenced<F>` is the frame as sent.
 */
import type { McpEventFrame, McpEventStatusFrame } from "../../events/frames.ts";
import type { ModelStatusFrame } from "../../events/model-status.ts";
import type { CommandId, CommandName } from "./commands.ts";

// The events client owns its frames, status types and `mcp_events_*` data; they are part of this
// protocol, so they are re-exported here unchanged.
export {
  type AvailableEvents,
  type JsonRpcErrorBody,
  type McpEventFrame,
  type McpEventOccurrence,
  type McpEventStatusDetail,
  type McpEventStatusFrame,
  type McpEventStatusKind,
  type McpEventsListData,
  type McpEventsUnsubscribeData,
  type SubscriptionKey,
  type SubscriptionState,
  type SubscriptionStatus,
  type UnestablishedSubscription,
  mcpEventFrame,
  mcpEventStatusFrame,
} from "../../events/frames.ts";
export { type ModelAvailableFrame, type ModelStatusFrame, type ModelUnavailableFrame } from "../../events/model-status.ts";

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
  /** Set when the failure has a stable code, e.g. `model_answer_too_large` (run/answer-caps.ts) or `frame_not_stored`. */
  code?: string;
}

/**
 * The session ended (issue 12 item F): `session_crashed` (an unexpected exception; it is stored,
 * the last frame of that session object) or `session_failed` (its transcript failed; sent unstored,
 * see session/frame-log.ts). A client reconnects to get a new session of the same name.
 */
export interface ErrorFrame {
  type: "error";
  code: "session_crashed" | "session_failed";
  message: string;
}

export function errorFrame(code: ErrorFrame["code"], message: string): ErrorFrame {
  return { type: "error", code, message };
}

/**
 * The session's history from `from_seq` to `to_seq` was replaced by `summary` (a summary the model
 * wrote, or a notice that messages were trimmed) to fit the model's context (issue 12 item A). A
 * restart rebuilds the history from the last one: the summary, then what follows `to_seq`.
 */
export interface CompactionFrame {
  type: "compaction";
  summary: string;
  from_seq: number;
  to_seq: number;
}

/** A frame as built, before the session numbers it. */
export type FrameBody =
  | ResponseFrame
  | ErrorFrame
  | RunStartFrame
  | MessageFrame
  | ToolCallFrame
  | ToolResultFrame
  | RunEndFrame
  | CompactionFrame
  | McpEventFrame
  | McpEventStatusFrame
  | ModelStatusFrame;

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

export function runEndFrame(run_id: string, status: RunStatus, error?: string, code?: string): RunEndFrame {
  const frame: RunEndFrame = { type: "run_end", run_id, status };
  if (error !== undefined) frame.error = error;
  if (code !== undefined) frame.code = code;
  return frame;
}

export function compactionFrame(summary: string, from_seq: number, to_seq: number): CompactionFrame {
  return { type: "compaction", summary, from_seq, to_seq };
}
