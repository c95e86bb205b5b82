/**
 * Group commit for an append-only file: many callers wait for their writes to be durable, and
 * callers that arrive while a sync is in flight share the next one instead of each issuing their
 * own. A position is anything monotonic the owner advances as it writes (a seq, a byte count).
 *
 * - Nothing written since the last completed sync → resolves at once, no sync.
 * - A sync in flight that already covers the caller's position → the caller waits for it.
 * - Otherwise the caller waits for the next sync, which starts when the in-flight one settles and
 *   covers everything written by then; all callers arriving meanwhile share it.
 *
 * A failing flush rejects every caller waiting on it; the owner decides whether to latch (the flush
 * function may also throw at once to refuse further syncs).
 */
export class GroupCommit {
  /** Highest position covered by a completed flush. */
  durable: number;
  /** Flushes issued (for accounting). */
  flushes = 0;
  private inflight: Promise<void> | null = null;
  private inflightCovers = 0;
  private next: Promise<void> | null = null;

  constructor(
    private readonly flush: () => Promise<void>,
    private readonly position: () => number,
    durable = 0,
  ) {
    this.durable = durable;
  }

  /** Resolves once everything written before this call is durable. */
  request(): Promise<void> {
    const target = this.position();
    if (this.durable >= target) return Promise.resolve();
    if (this.next) return this.next;
    if (this.inflight && this.inflightCovers >= target) return this.inflight;
    if (this.inflight) {
      this.next = this.inflight
        .catch(() => {})
        .then(() => {
          this.next = null;
          return this.start();
        });
      return this.next;
    }
    return this.start();
  }

  /** Settles when no flush is in flight or queued (its outcome is ignored). */
  async idle(): Promise<void> {
    while (this.inflight || this.next) await (this.next ?? this.inflight)?.catch(() => {});
  }

  private start(): Promise<void> {
    const covers = this.position();
    if (this.durable >= covers) return Promise.resolve();
    this.inflightCovers = covers;
    this.flushes++;
    let run: Promise<void>;
    try {
      run = this.flush();
    } catch (e) {
      return Promise.reject(e);
    }
    const tracked: Promise<void> = run
      .then(() => {
        if (covers > this.durable) this.durable = covers;
      })
      .finally(() => {
        if (this.inflight === tracked) this.inflight = null;
      });
    this.inflight = tracked;
    return tracked;
  }
}
