/**
 * Subscription positions in the pending log (issue 16): a poll page's or pushed run's new cursor
 * and the event ids its dedup window took travel in the same append (and fdatasync) as the page's
 * own records, after them, as one small record —
 *
 *   {"position":{"n":N,"key":K,"cursor":C|null,"seen":[id,…]}}               ids appended to the window
 *   {"position":{"n":N,"key":K,"cursor":C|null,"seen":[id,…],"whole":true}}  the whole window (a rewrite)
 *
 * — instead of a rewrite of the whole snapshot (every subscription's 1,024-id window, a temp file,
 * its fsync, a rename and the directory's fsync) per page. The snapshot becomes a checkpoint,
 * written at most once per CHECKPOINT_MS while positions come in (and at every other change of it,
 * and on close); it names the highest position it covers (`"position": N`, snapshot v3). On load,
 * the records above that number are applied in log order to the records the snapshot holds, so
 * what a restart starts from is exactly what the last durable append said (serve.md §3: a cursor
 * never runs ahead of the events it passed, and neither it nor a window runs behind them either).
 *
 * A compaction drops the log's records, so its rewrite carries one `whole` record for every
 * subscription whose position the snapshot on disk does not cover yet (`PositionBook.uncovered`).
 * N counts per store from 1 and never goes back, so a record is never taken for a newer one.
 */
import { isRecord } from "../../shared/guards.ts";
import { SNAPSHOT_LIMITS, type SubscriptionRecord } from "./snapshot.ts";

/** While positions come in, the snapshot is rewritten at most this often (a checkpoint). */
export const CHECKPOINT_MS = 1000;

export interface PositionRecord {
  n: number;
  key: string;
  cursor: string | null;
  /** Ids the window took, oldest first (or, when `whole`, the whole window). */
  seen: string[];
  whole: boolean;
}

export function serializePosition(p: PositionRecord): string {
  const position: Record<string, unknown> = { n: p.n, key: p.key, cursor: p.cursor, seen: p.seen };
  if (p.whole) position.whole = true;
  return `${JSON.stringify({ position })}\n`;
}

/** Why this cursor and these ids cannot be stored (the snapshot's bounds, which a load checks), or null. */
export function positionProblem(cursor: unknown, seen: readonly unknown[]): string | null {
  if (cursor !== null && (typeof cursor !== "string" || cursor.length > SNAPSHOT_LIMITS.cursorChars)) {
    return `a cursor must be null or a string of at most ${SNAPSHOT_LIMITS.cursorChars} characters`;
  }
  for (const id of seen) {
    if (typeof id !== "string" || id.length > SNAPSHOT_LIMITS.eventIdChars) return `an event id must be a string of at most ${SNAPSHOT_LIMITS.eventIdChars} characters`;
  }
  return null;
}

/** A `position` record as read back, or null when it does not have the shape of one. */
export function asPosition(x: unknown): PositionRecord | null {
  if (!isRecord(x)) return null;
  const { n, key, cursor, seen, whole } = x;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1) return null;
  if (typeof key !== "string" || key.length === 0 || key.length > SNAPSHOT_LIMITS.keyChars) return null;
  if (!Array.isArray(seen) || seen.length > SNAPSHOT_LIMITS.recent) return null;
  if (whole !== undefined && whole !== true) return null;
  if (positionProblem(cursor, seen) !== null) return null;
  return { n, key, cursor: cursor as string | null, seen: seen as string[], whole: whole === true };
}

/** Moves a record (in place) to a position: its cursor, and its window with `seen` taken (newest 1,024 kept). */
export function advanceRecord(record: SubscriptionRecord, cursor: string | null, seen: readonly string[], whole: boolean): void {
  record.cursor = cursor;
  if (whole) record.recent = seen.slice(-SNAPSHOT_LIMITS.recent);
  else if (seen.length > 0) {
    record.recent.push(...seen);
    if (record.recent.length > SNAPSHOT_LIMITS.recent) record.recent.splice(0, record.recent.length - SNAPSHOT_LIMITS.recent);
  }
}

/**
 * Applies a log's position records (file order) above `covered` to the records a snapshot holds;
 * a record for a key the snapshot does not hold is dropped (that subscription was forgotten, or
 * its first record never reached a snapshot). Returns the newest position applied per key.
 */
export function applyPositions(records: Record<string, SubscriptionRecord>, positions: readonly PositionRecord[], covered: number): Map<string, number> {
  const applied = new Map<string, number>();
  for (const p of positions) {
    if (p.n <= covered) continue;
    const record = Object.hasOwn(records, p.key) ? records[p.key] : undefined;
    if (record === undefined) continue;
    advanceRecord(record, p.cursor, p.seen, p.whole);
    applied.set(p.key, p.n);
  }
  return applied;
}

/**
 * The store's count of positions: the last one given out, the one the snapshot on disk covers,
 * and per subscription the newest it was given (for a rewrite to carry what no snapshot covers).
 */
export class PositionBook {
  private last: number;
  private covered: number;
  private readonly newest: Map<string, number>;
  private checkpointAt = Number.NEGATIVE_INFINITY;

  constructor(covered: number, highestSeen: number, applied: Map<string, number>) {
    this.covered = covered;
    this.last = Math.max(covered, highestSeen);
    this.newest = applied;
  }

  /** The number of the next position of `key`. */
  next(key: string): number {
    this.last++;
    this.newest.set(key, this.last);
    return this.last;
  }

  /** The highest position given out: what a snapshot taken now covers. */
  get highest(): number {
    return this.last;
  }

  /** Positions the snapshot on disk does not cover yet. */
  get pending(): boolean {
    return this.last > this.covered;
  }

  /** A checkpoint is due: positions pending, and none written within CHECKPOINT_MS of `nowMs`. */
  due(nowMs: number): boolean {
    return this.pending && nowMs - this.checkpointAt >= CHECKPOINT_MS;
  }

  /** When the next checkpoint may be written (ms from `nowMs`). */
  waitMs(nowMs: number): number {
    return Math.max(0, this.checkpointAt + CHECKPOINT_MS - nowMs);
  }

  /** A snapshot covering positions up to `n` is on disk. */
  checkpointed(n: number, nowMs: number): void {
    this.covered = Math.max(this.covered, n);
    this.checkpointAt = nowMs;
    for (const [key, at] of this.newest) if (at <= this.covered) this.newest.delete(key);
  }

  /** Keys whose newest position the snapshot on disk does not cover. */
  uncovered(): string[] {
    return [...this.newest.keys()];
  }

  /** The subscription's record is gone: nothing of it is carried any more. */
  forget(key: string): void {
    this.newest.delete(key);
  }
}
