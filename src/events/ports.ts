/**
 * What the MCP Events client needs from the program it runs in (serve.md §6), owned here so the
 * client depends on no part of serve: serve's session implements `EventsSession`, serve's events
 * service implements `EventsServices`, and serve's tuning satisfies `EventsTuning` structurally.
 *
 * - a session takes injected batches (tagged) and reports how each run settled, by tag
 *   (serve.md §6 item 5: delivered → done, returned → ready again);
 * - it stores and sends the frames the client emits, and lets the client watch the frames it sends
 *   (a `response` restarts the runtime-subscription TTL);
 * - it routes the `mcp_events_*` commands to one handler.
 */
import type { EventsCommandHandler } from "./commands.ts";
import type { EventsFrame } from "./frames.ts";
import type { SubscriptionSpec } from "./types.ts";
import type { ServerEvents } from "./wire/server-events.ts";
import type { WebhookAbility } from "./webhook/types.ts";

/** Whether a run is in flight (follow-ups wait for it; steers go in at its next turn). */
export type SessionState = "idle" | "running";

export type StreamingBehavior = "follow_up" | "steer";

/** A batch of events for the model; `tag` identifies it in `RunSettled.delivered` / `returned`. */
export interface Injection {
  tag: string;
  text: string;
  behavior: StreamingBehavior;
}

/** What `inject` did with the batch. */
export type InjectResult = { started: string } | { queued: StreamingBehavior };

export interface RunSettled {
  runId: string;
  /** The run's `run_end` status. */
  status: "ok" | "failed" | "aborted";
  /** status ok and the transcript sync after the run resolved (serve.md §5). */
  succeeded: boolean;
  /** Tags of batches the model received in a run that succeeded. */
  delivered: string[];
  /** Tags of batches that went into a run that did not succeed, or were handed over but never seen: re-inject them. */
  returned: string[];
  /**
   * The run_end's stable code. `model_unavailable`: the model never accepted the run's request
   * (serve.md §5 "Outages are not attempts"): its batches come back without counting an attempt.
   */
  code?: string;
  /** The run_end's error, if any (one line). */
  error?: string;
}

/** The run_end (and RunSettled) code of a run whose model never accepted the request. */
export const MODEL_UNAVAILABLE = "model_unavailable";

export type RunSettledListener = (report: RunSettled) => void;

/** Tags of steered batches the model has just received (mid-run), and that run's id: delivered now, whatever the run does later. */
export type ReceivedListener = (tags: string[], runId: string) => void;

/** Sees each frame the session stores and sends (only its type matters here). */
export type FrameSeen = (frame: { readonly type: string }) => void;

/**
 * Where an exception goes that escaped one of the events client's own async roots for a session —
 * the coalescer's timer, a subscription's loop, a server-connected wake — which nobody awaits: the
 * session's containment boundary (serve: session-faults.ts ends that session alone). Never throws.
 */
export type FaultReport = (error: unknown) => void;

/** The port a session offers the events client. */
export interface EventsSession {
  readonly name: string;
  readonly state: SessionState;
  readonly closed: boolean;
  /** The largest batch text its model takes, in bytes (from `model.context_tokens`); none: no bound. */
  readonly injectionMaxBytes?: number;
  /** Hands a batch to the model (never refused while open; throws once closed). */
  inject(injection: Injection): InjectResult;
  onRunSettled(listener: RunSettledListener): () => void;
  onReceived(listener: ReceivedListener): () => void;
  /** Stores and sends a frame; its seq, or null once closed. */
  emit(frame: EventsFrame): number | null;
  /** Frames that arrived together, in order, with one transcript write; per frame its seq or null. */
  emitMany?(frames: readonly EventsFrame[]): (number | null)[];
  subscribe(listener: FrameSeen): () => void;
  /** null restores the session's own answer (events not enabled). */
  setEventsHandler(handler: EventsCommandHandler | null): void;
}

/** The tuning knobs the events client reads (serve.md "Tuning knobs"; serve validates them). */
export interface EventsTuning {
  readonly pollFloorMs: number;
  readonly coalesceMs: number;
  readonly streamIdleMs: number;
  readonly maxPending: number;
  readonly maxPendingBytes: number;
  readonly healthyMs: number;
  readonly refusedRetryMs: number;
  readonly retryCapMs: number;
  readonly runtimeTtlMs: number;
  readonly streamBuffer: number;
  readonly longPollMs: number;
  /** Cap of the backoff while the model is unavailable (VIGIL_MODEL_BACKOFF_CAP_MS). */
  readonly modelBackoffCapMs: number;
  /** `ttlMs` asked for a webhook subscription (VIGIL_EVENTS_WEBHOOK_TTL_MS; the server's grant wins). */
  readonly webhookTtlMs: number;
  /** Deadline for a whole webhook body (VIGIL_EVENTS_BODY_TIMEOUT_MS). */
  readonly bodyTimeoutMs: number;
  /** A webhook delivery's wait for its event to be stored (VIGIL_EVENTS_ACK_TIMEOUT_MS). */
  readonly ackTimeoutMs: number;
  /** Deadline for one JWKS fetch, headers and body (VIGIL_EVENTS_JWKS_TIMEOUT_MS). */
  readonly jwksTimeoutMs: number;
}

/** What the program shares with every session's events client. */
export interface EventsServices {
  readonly tuning: EventsTuning;
  /** Webhook delivery: the process's routes, server keys and callback URLs, or the flag(s) missing for it. */
  readonly webhook: WebhookAbility;
  wire(server: string): ServerEvents;
  /** Configured subscriptions (server config order); only the owning session starts them. */
  configured(): SubscriptionSpec[];
  /** Names of the configured servers that opted in to events. */
  eventServers(): string[];
}
