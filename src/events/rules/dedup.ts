/**
 * The recent-eventId window of one subscription. Delivery is at-least-once (replays after a
 * reconnect, webhook retries), so ids seen lately are dropped; the window is bounded and persisted,
 * oldest evicted first.
 */

export const DEDUP_CAPACITY = 1024;

export class DedupWindow {
  private readonly order: string[] = [];
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
    this.order.push(id);
    // Shift is O(n) on a plain array; the window is small and the cost stays bounded by capacity.
    while (this.order.length > this.capacity) this.ids.delete(this.order.shift()!);
  }

  get size(): number {
    return this.order.length;
  }

  /** Oldest first, ready to persist and to hand back to the constructor. */
  toArray(): string[] {
    return [...this.order];
  }
}
