/**
 * Backpressure on one connection's incoming side: while any holder holds the gate, the transport
 * stops reading (stdio: the next line of stdout waits; HTTP: the `events/stream` body is not
 * pulled), so a burst waits in the pipe or the socket — the server's side — instead of in vigil.
 *
 * Holders are the push streams (events/wire/push-stream.ts): a stream holds the gate while its
 * queue is above its high-water mark and releases it once drained, closed or ended. A reader asks
 * `wait()` between messages: null when open (no allocation on the hot path), else a promise that
 * settles when the last holder let go.
 */
export class ReadGate {
  private readonly holders = new Set<object>();
  private opened: Promise<void> | null = null;
  private open: (() => void) | null = null;

  /** Closes the gate for `holder` (idempotent per holder). */
  hold(holder: object): void {
    this.holders.add(holder);
  }

  /** Lets go of `holder`'s hold; the gate opens when no holder is left. */
  release(holder: object): void {
    if (!this.holders.delete(holder) || this.holders.size > 0) return;
    const open = this.open;
    this.open = null;
    this.opened = null;
    open?.();
  }

  get held(): boolean {
    return this.holders.size > 0;
  }

  /** Null when reading may go on; else a promise that settles once the gate opens. */
  wait(): Promise<void> | null {
    if (this.holders.size === 0) return null;
    this.opened ??= new Promise<void>((resolve) => (this.open = resolve));
    return this.opened;
  }
}
