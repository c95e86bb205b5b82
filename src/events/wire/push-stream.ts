/**
 * One `events/stream` subscription as its consumer sees it: a bounded queue of the stream's
 * notifications, then one end (serve.md §6 item 3).
 *
 * The queue is bounded, in count (VIGIL_EVENTS_STREAM_BUFFER) and in weight (STREAM_BUFFER_BYTES;
 * one heavier notification is taken alone). Near either top (highWaterOf) the stream holds its
 * connection's read gate (mcp/read-gate.ts): the transport stops reading, so a burst waits on the
 * server's side instead of overflowing; the gate is let go once the consumer drained the queue
 * (or the stream ends). Overflow stays as the last resort — a transport that cannot stop at once,
 * or a gate held past STALL_MS (a consumer stuck on a
 * commit must not stall the connection's other traffic): the stream stops accepting, what is
 * queued (all of it earlier than the dropped notification) is still handed out, then an
 * `overflow` end tells the consumer to reconnect from the last cursor it stored — so the cursor
 * never passes a dropped event and nothing is lost silently.
 *
 * It also watches the stream's liveness (rules/heartbeat-watch.ts): arrivals are timed here, as
 * they are routed, not when the consumer gets to them, so a slow commit never bunches heartbeats
 * or hides activity.
 */
import { type HeartbeatWatch, type SilenceLimit, observed, openedWatch, silenceDeadline, silenceLimit } from "../rules/heartbeat-watch.ts";
import { type Scheduler, realScheduler } from "../../shared/time.ts";
import type { ReadGate } from "../../mcp/read-gate.ts";

/** A wall-clock step (NTP) must not stretch or cut a silence: arrivals are timed on a monotonic clock. */
const monotonic: Scheduler = { ...realScheduler, now: () => performance.now() };
/** setTimeout's ceiling; a longer wait is re-armed. */
const MAX_TIMER_MS = 2_147_483_647;
/** A read gate held this long by one stream ends that stream (overflow → reconnect from the cursor). */
export const STALL_MS = 5_000;
/**
 * What the queued notifications of one stream may weigh (their params as JSON text): the count alone
 * let 256 messages of the transport's cap (32 MiB each) queue up. As much as the pending queue holds
 * by default (VIGIL_EVENTS_MAX_PENDING_BYTES): the consumer could not store more at once anyway.
 */
export const STREAM_BUFFER_BYTES = 16 * 1024 * 1024;

/**
 * From how many queued notifications a stream holds the read gate: the capacity less a margin
 * (an eighth, at least 2) for what is past the gate when it closes — nothing over stdio (the gate is
 * asked after every line) nor over HTTP (mcp/events-stream-reader.ts asks it before every message),
 * but another transport may hand on a few more. Close to the top, so
 * that each drained run (one commit, one fdatasync) is as large as the buffer allows. Pure.
 */
export function highWaterOf(capacity: number): number {
  return Math.max(1, capacity - Math.max(2, Math.floor(capacity / 8)));
}

export interface StreamNotification {
  method: string;
  params: Record<string, unknown>;
  /** When it was routed to this stream (`performance.now()`, set by `offer`): an event's receipt, for the ack latency. */
  receivedMs?: number;
  /** Its weight in the stream's byte bound (set by `offer`). */
  bytes?: number;
}

export type StreamEnd =
  /** The server answered the request: it closed the stream. */
  | { kind: "final" }
  /** The server refused or ended the request with a JSON-RPC error. */
  | { kind: "rpc_error"; code: number; message: string; data: unknown }
  /** The connection failed or the request was abandoned. */
  | { kind: "closed"; reason: string }
  /** The buffer overflowed: reconnect from the stored cursor. */
  | { kind: "overflow" };

export type StreamItem = { kind: "notification"; notification: StreamNotification } | { kind: "end"; end: StreamEnd };

export class PushStream {
  private readonly queue: StreamNotification[] = [];
  /** What the queued notifications weigh (`weightOf`). */
  private queuedBytes = 0;
  private end: StreamEnd | null = null;
  private waiter: (() => void) | null = null;
  /** Set once the consumer no longer wants anything (closed or ended). */
  private done = false;
  private watch: HeartbeatWatch;
  /** The queue length, and the weight, from which the read gate is held. */
  private readonly highWater: number;
  private readonly highWaterBytes: number;
  private stall: ReturnType<Scheduler["setTimeout"]> | null = null;

  constructor(
    private readonly capacity: number,
    /** Called once when the stream stops accepting (unregister it, cancel the request). */
    private readonly onStop: () => void,
    private readonly clock: Scheduler = monotonic,
    /** The connection's read gate (null: no backpressure, overflow only). */
    private readonly gate: ReadGate | null = null,
    private readonly maxBytes = STREAM_BUFFER_BYTES,
  ) {
    this.watch = openedWatch(clock.now());
    this.highWater = highWaterOf(capacity);
    this.highWaterBytes = highWaterOf(maxBytes);
  }

  /** Whether this stream holds its connection's read gate now. */
  get holding(): boolean {
    return this.stall !== null;
  }

  private hold(): void {
    if (this.gate === null || this.stall !== null) return;
    this.gate.hold(this);
    this.stall = this.clock.setTimeout(() => this.finish({ kind: "overflow" }), STALL_MS);
  }

  private release(): void {
    if (this.stall === null) return;
    this.clock.clearTimeout(this.stall);
    this.stall = null;
    this.gate?.release(this);
  }

  /** Offers a routed notification; false once the stream no longer accepts any. */
  offer(notification: StreamNotification): boolean {
    if (this.done || this.end !== null) return false;
    const bytes = weightOf(notification, this.maxBytes);
    // One notification over the byte bound is still taken alone: a large event never wedges a stream.
    if (this.queue.length >= this.capacity || (this.queue.length > 0 && this.queuedBytes + bytes > this.maxBytes)) {
      this.finish({ kind: "overflow" });
      return false;
    }
    notification.receivedMs = performance.now();
    notification.bytes = bytes;
    this.queue.push(notification);
    this.queuedBytes += bytes;
    if (this.queue.length >= this.highWater || this.queuedBytes >= this.highWaterBytes) this.hold();
    this.watch = observed(this.watch, notification.method, this.clock.now());
    this.wake();
    return true;
  }

  /** Records how the stream ended (first end wins; queued notifications are still handed out). */
  finish(end: StreamEnd): void {
    if (this.end !== null || this.done) return;
    this.end = end;
    this.release();
    this.wake();
    this.stop();
  }

  /**
   * The next item, or "idle" once the stream has been silent for its limit (`silence`; before two
   * heartbeats were seen, `fallbackIdleMs`) counted from the last arrival. Never waits unbounded.
   */
  async next(fallbackIdleMs: number): Promise<StreamItem | "idle"> {
    for (;;) {
      const n = this.queue.shift();
      if (n !== undefined) {
        this.queuedBytes -= n.bytes ?? 0;
        if (this.queue.length === 0) this.release();
        return { kind: "notification", notification: n };
      }
      if (this.end !== null) return { kind: "end", end: this.end };
      if (this.done) return { kind: "end", end: { kind: "closed", reason: "closed by vigil" } };
      const remaining = silenceDeadline(this.watch, fallbackIdleMs) - this.clock.now();
      if (remaining <= 0) return "idle";
      let timer: ReturnType<Scheduler["setTimeout"]> | undefined;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        timer = this.clock.setTimeout(resolve, Math.min(Math.ceil(remaining), MAX_TIMER_MS));
      });
      if (timer !== undefined) this.clock.clearTimeout(timer);
      this.waiter = null;
    }
  }

  /** How much silence ends this stream now (for the reason given when it does). */
  silence(fallbackIdleMs: number): SilenceLimit {
    return silenceLimit(this.watch, fallbackIdleMs);
  }

  /** Drains what is queued without waiting. */
  drainQueued(): StreamNotification[] {
    this.release();
    this.queuedBytes = 0;
    return this.queue.splice(0);
  }

  /** What the queued notifications weigh (their params as JSON text). */
  get bytesQueued(): number {
    return this.queuedBytes;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** The consumer is done with it: stops accepting and cancels the request. Idempotent. */
  close(): void {
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.release();
    this.stop();
    this.wake();
  }

  private stop(): void {
    if (this.done) return;
    this.done = true;
    this.onStop();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }
}

/**
 * A notification's weight: its params as JSON text (UTF-16 units, as a parsed message holds them).
 * One that cannot be written back (nesting too deep for JSON.stringify) weighs the whole bound, so
 * it is queued alone.
 */
function weightOf(notification: StreamNotification, maxBytes: number): number {
  try {
    return JSON.stringify(notification.params)?.length ?? 0;
  } catch {
    return maxBytes;
  }
}
