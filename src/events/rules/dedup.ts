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

  /** @param initial persisted ids, oldest first; only the newest `capacity` are kept. */
  constructor(initial: readonly string[] = [], capacity = DEDUP_CAPACITY) {
    this.capacity = Math.max(1, Math.floor(capacity));
    for (const id of initial) if (typeof id === "string") this.add(id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Records an id; a known id keeps its place (it was first seen then). */
  add(id: string): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
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

  /** Oldest first, ready to persist and to hand back to the constructor. */
  toArray(): string[] {
    return this.start === 0 ? this.order.slice() : this.order.slice(this.start).concat(this.order.slice(0, this.start));
  }
}
