/**
 * The recent-eventId window of one subscription. Delivery is at-least-once (replays after a
 * reconnect, webhook retries), so ids seen lately are dropped; the window is bounded and persisted,
 * oldest evicted first.
 */

export const DEDUP_CAPACITY = 1024;

export class DedupWindow {
  /**
   * The ids oldest first, as a ring once full: `start` is the oldest. Evicting is then one slot
   * overwritten, not a shift of the whole array on every event (issue 16: a full window of 1,024
   * moved 1,024 slots per accepted event).
   */
  private readonly order: string[] = [];
  private start = 0;
  private readonly ids = new Set<string>();
  private readonly capacity: number;
  /**
   * Ids taken since the last `takeFresh`, oldest first: what the store's copy of the window lacks.
   * A page's commit hands the store these few instead of a copy of the whole window (issue 16).
   */
  private fresh: string[] = [];

  /** @param initial persisted ids, oldest first; only the newest `capacity` are kept. They are not fresh. */
  constructor(initial: readonly string[] = [], capacity = DEDUP_CAPACITY) {
    this.capacity = Math.max(1, Math.floor(capacity));
    for (const id of initial) if (typeof id === "string") this.add(id);
    this.fresh = [];
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Records an id; a known id keeps its place (it was first seen then). */
  add(id: string): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.fresh.push(id);
    // Only the newest `capacity` can still be in the window: older fresh ids are gone from it too.
    if (this.fresh.length > 2 * this.capacity) this.fresh = this.fresh.slice(-this.capacity);
    if (this.order.length < this.capacity) {
      this.order.push(id);
      return;
    }
    this.ids.delete(this.order[this.start]!);
    this.order[this.start] = id;
    this.start = (this.start + 1) % this.capacity;
  }

  get size(): number {
    return this.order.length;
  }

  /**
   * The ids taken since the last call, oldest first (at most `capacity`: older ones have left the
   * window), and from now on none. Appended in this order to a copy of the window as it was at the
   * last call, they make it equal to `toArray()`.
   */
  takeFresh(): string[] {
    const out = this.fresh.length > this.capacity ? this.fresh.slice(-this.capacity) : this.fresh;
    this.fresh = [];
    return out;
  }

  /** Oldest first, ready to persist and to hand back to the constructor. */
  toArray(): string[] {
    return this.start === 0 ? this.order.slice() : this.order.slice(this.start).concat(this.order.slice(0, this.start));
  }
}
