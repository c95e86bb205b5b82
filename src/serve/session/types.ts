/**
 * The types of a `vigil serve` session (serve.md §4, §5, §6 item 5): the runner it is given by
 * dependency injection, the injection API of the events subsystem, and what it reports.
 *
 * The injection API is the events client's port (events/ports.ts): the session implements it, so
 * its shapes (Injection, InjectResult, RunSettled, SessionState, the events commands) are the
 * events client's, re-exported here for the rest of serve.
 */
import type { ServerStateReport } from "../../mcp/supervision.ts";
import type { EventsCommand } from "../../events/commands.ts";
import type { SessionState } from "../../events/ports.ts";
import type { FrameBody, PROTOCOL_VERSION, ResponseFrame } from "../protocol/frames.ts";
import type { TranscriptLimits, TranscriptRecord } from "../state/transcript.ts";
import type { ChatMessage } from "../models/types.ts";
import type { HistoryBlock } from "../context/blocks.ts";

export type RunStatus = "ok" | "failed" | "aborted";

export interface RunRequest {
  runId: string;
  /** Why the run started: "prompt", "follow_up", "steer" or "mcp_events". */
  trigger: string;
  /** The conversation so far (user/assistant text of earlier runs). */
  history: ChatMessage[];
  /** The same history in blocks with their transcript seqs (context/blocks.ts), for compaction. */
  blocks?: HistoryBlock[];
  /** The transcript's last seq when the run was created. */
  historySeq?: number;
  /** The new user messages of this run (queued follow-ups are coalesced: one message each). */
  prompt: ChatMessage[];
  /**
   * Steered messages waiting for the running run (empty when none). Call it before each model turn:
   * what it returns is handed over to this run; report how many of them the model actually received
   * in `RunOutcome.steersSeen` (in the order they were taken).
   */
  takeSteers(): ChatMessage[];
  /** The model answered a turn carrying the prompt and the first `count` steers taken (delivery-reports.ts). */
  steersReceived?(count: number): void;
}

export interface RunOutcome {
  status: RunStatus;
  error?: string;
  /** The failure's stable code, when it has one (it goes into the run_end). */
  code?: string;
  /**
   * Messages the run added to the conversation (run-loop.ts). The session does not keep them: its
   * history is folded from the frames it stored (history.ts), the one thing a restart can rebuild.
   */
  appended?: ChatMessage[];
  /** How many of the steers taken with `takeSteers` reached the model (the first N taken). */
  steersSeen: number;
}

/**
 * Runs one run. It emits run_start, message, tool_call, tool_result and run_end itself; the session
 * numbers and stores every emitted frame (a run_end is added when the runner did not emit one).
 */
export type Runner = (request: RunRequest, emit: (frame: FrameBody) => void, signal: AbortSignal) => Promise<RunOutcome>;

export type {
  EventsSession,
  InjectResult,
  Injection,
  ReceivedListener,
  RunSettled,
  RunSettledListener,
  SessionState,
  StreamingBehavior,
} from "../../events/ports.ts";
export type { EventsCommand } from "../../events/commands.ts";

/**
 * Receives every stored frame (with its seq and time) and its exact JSON line (no newline). When the
 * stored frame is the stub of a `get_transcript` answer, `answerJson` is the whole answer's line
 * with the same seq: what the asker gets (stdio mode writes it; a stream of another client does not).
 */
export type FrameListener = (frame: TranscriptRecord, json: string, answerJson?: string) => void;

/**
 * Answers the `mcp_events_*` commands; the session stores and broadcasts the response. Wider than
 * the events client's own handler (any `response` frame), which it accepts.
 */
export type EventsHandler = (command: EventsCommand) => ResponseFrame | Promise<ResponseFrame>;

/** get_state's `model_unavailable`: present while the last word on the model was that it is unavailable. */
export interface ModelUnavailableState {
  error: string;
  /** When the outage was first seen (ISO). */
  since: string;
  /** Until the events client tries again (0 once due). */
  retry_in_ms: number;
}

/** `get_state` data. */
export interface SessionStateData {
  protocol_version: typeof PROTOCOL_VERSION;
  name: string;
  state: SessionState;
  run_id?: string;
  queued: { follow_up: number; steer: number };
  /** Injected batches queued and not yet handed to a run. */
  pending_injections: number;
  /** The last seq stored before this response. */
  last_seq: number;
  /** Set once the transcript has failed: the session then refuses work (read-only commands still answer). */
  failed?: string;
  /** Set while the model is unavailable, as the events client last reported it (serve.md §5). */
  model_unavailable?: ModelUnavailableState;
  /** Each configured MCP server's state as the pool's supervision reports it (serve.md §6 item 10). */
  servers?: readonly ServerStateReport[];
}

export interface SessionOptions {
  name: string;
  /** The session directory (see `ensureSessionDir`); the transcript lives in it. */
  dir: string;
  runner: Runner;
  /** Clock for `lastActivity` (ms since the epoch). */
  now?: () => number;
  /** Run ids (default `run_<uuid>`). */
  newRunId?: () => string;
  /** `model.context_tokens` (default 32,000): bounds the event batches injected (context/budget.ts). */
  contextTokens?: number;
  /** How long `close` waits for an aborted run to settle (default 5000 ms). */
  closeTimeoutMs?: number;
  /** Segment size and retention of the transcript (default: the transcript's own). */
  transcript?: TranscriptLimits;
  /**
   * An unexpected exception escaped the session's own code (its run settlement, a run-settled
   * listener): the session cannot be trusted any more; the owner contains it (serve/session-faults.ts).
   */
  onFault?: (error: unknown) => void;
  /** The MCP servers' states for get_state's `servers` (absent: the field is left out). */
  serverStates?: () => readonly ServerStateReport[];
}
