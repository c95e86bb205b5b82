/**
 * One `events/stream` subscription as its consumer sees it: a bounded queue of the stream's
 * notifications, then one end (serve.md §6 item 3).
 *
 * The queue is bounded (VIGIL_EVENTS_STREAM_BUFFER). On overflow the stream stops accepting: what
 * is queued (all of it earlier than the dropped notification) is still handed out, then an
 * `overflow` end tells the consumer to reconnect from the last cursor it stored — so the cursor
 * never passes a dropped event and nothing is lost silently.
 */

export interface StreamNotification {
  method: string;
  params: Record<string, unknown>;
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
  private end: StreamEnd | null = null;
  private waiter: (() => void) | null = null;
  /** Set once the consumer no longer wants anything (closed or ended). */
  private done = false;

  constructor(
    private readonly capacity: number,
    /** Called once when the stream stops accepting (unregister it, cancel the request). */
    private readonly onStop: () => void,
  ) {}

  /** Offers a routed notification; false once the stream no longer accepts any. */
  offer(notification: StreamNotification): boolean {
    if (this.done || this.end !== null) return false;
    if (this.queue.length >= this.capacity) {
      this.finish({ kind: "overflow" });
      return false;
    }
    this.queue.push(notification);
    this.wake();
    return true;
  }

  /** Records how the stream ended (first end wins; queued notifications are still handed out). */
  finish(end: StreamEnd): void {
    if (this.end !== null || this.done) return;
    this.end = end;
    this.wake();
    this.stop();
  }

  /**
   * The next item, or "idle" when nothing arrived within `idleMs` (the caller's watchdog).
   * Never waits unbounded.
   */
  async next(idleMs: number): Promise<StreamItem | "idle"> {
    for (;;) {
      const n = this.queue.shift();
      if (n !== undefined) return { kind: "notification", notification: n };
      if (this.end !== null) return { kind: "end", end: this.end };
      if (this.done) return { kind: "end", end: { kind: "closed", reason: "closed by vigil" } };
      let timer: ReturnType<typeof setTimeout> | undefined;
      const idle = await new Promise<boolean>((resolve) => {
        this.waiter = () => resolve(false);
        timer = setTimeout(() => resolve(true), idleMs);
      });
      clearTimeout(timer);
      this.waiter = null;
      if (idle && this.queue.length === 0 && this.end === null) return "idle";
    }
  }

  /** Drains what is queued without waiting. */
  drainQueued(): StreamNotification[] {
    return this.queue.splice(0);
  }

  get queued(): number {
    return this.queue.length;
  }

  /** The consumer is done with it: stops accepting and cancels the request. Idempotent. */
  close(): void {
    this.queue.length = 0;
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
