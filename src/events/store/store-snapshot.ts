/**
 * The snapshot side of a session's events store (events-store.ts): the subscription records
 * (snapshot-table.ts), the last client command's time and the server keys, what the snapshot on
 * disk says, and the positions the pending log carries on top of it (positions.ts).
 *
 * It decides what a write pass writes of it: a snapshot at once after any change of a record, the
 * time or the keys; for positions alone (a page's cursor and window ids, which the pass's log
 * append already makes durable) a checkpoint at most once per CHECKPOINT_MS, and on close.
 */
import { EventsStoreError } from "./errors.ts";
import { applyPositions, PositionBook, positionProblem, serializePosition } from "./positions.ts";
import { cloneRecord, copyRecord, keyProblem, SNAPSHOT_LIMITS, type ServerKeysData, serverKeysProblem, type SnapshotData, type SubscriptionRecord } from "./snapshot.ts";
import { SubscriptionTable } from "./snapshot-table.ts";
import type { PositionRecord } from "./positions.ts";

/** The snapshot a pass takes: its text (or why it cannot be written), and what it covers. */
export interface TakenSnapshot {
  text: string | EventsStoreError;
  gen: number;
  position: number;
}

export class StoreSnapshot {
  private readonly table: SubscriptionTable;
  private lastClient: number | null;
  private keysOfServers: ServerKeysData;
  /** Bumped on every change other than a position; the written one is what is on disk. */
  private gen = 0;
  private writtenGen = 0;
  /** The text on disk (an identical one is not written again), null when unknown. */
  private lastText: string | null;
  private readonly positions: PositionBook;

  constructor(snapshot: SnapshotData | undefined, log: { positions: readonly PositionRecord[]; maxPosition: number }, where: string) {
    const records = snapshot?.subscriptions ?? {};
    const covered = snapshot?.position ?? 0;
    const applied = applyPositions(records, log.positions, covered);
    this.table = new SubscriptionTable(records, where);
    this.lastClient = snapshot?.last_client_ms ?? null;
    this.keysOfServers = snapshot?.server_keys ?? {};
    this.positions = new PositionBook(covered, log.maxPosition, applied);
    this.lastText = snapshot === undefined || applied.size > 0 ? null : this.table.serialize(covered, this.lastClient, this.keysOfServers);
  }

  // ---- records ----

  get(key: string): SubscriptionRecord | undefined {
    const r = this.table.get(key);
    return r === undefined ? undefined : cloneRecord(r);
  }

  has(key: string): boolean {
    return this.table.has(key);
  }

  keys(): string[] {
    return this.table.keys();
  }

  runtimeKeys(): string[] {
    return this.table.keys().filter((key) => this.table.get(key)?.runtime !== undefined);
  }

  /** Stores a copy of the record (`recent` trimmed to the newest 1024); throws invalid_argument for a record we could not read back. */
  set(key: string, record: SubscriptionRecord): void {
    const problem = keyProblem(key);
    if (problem !== null) throw new EventsStoreError("invalid_argument", problem);
    if (!this.table.has(key) && this.table.size >= SNAPSHOT_LIMITS.subscriptions) {
      throw new EventsStoreError("invalid_argument", `at most ${SNAPSHOT_LIMITS.subscriptions} subscriptions are kept per session`);
    }
    this.table.set(key, copyRecord(record));
    this.gen++;
  }

  /** Forgets the whole record; false when there was none. */
  forget(key: string): boolean {
    if (!this.table.delete(key)) return false;
    this.positions.forget(key);
    this.gen++;
    return true;
  }

  /**
   * Moves a stored record to a page's position — its cursor, and the ids its window took since the
   * last record or position of it — and returns the pending-log record that says so (positions.ts).
   * Throws invalid_argument for an unknown key or what the snapshot could not hold.
   */
  advance(key: string, cursor: string | null, seen: readonly string[]): string {
    if (!this.table.has(key)) throw new EventsStoreError("invalid_argument", "no subscription record to move: set one first");
    const problem = positionProblem(cursor, seen);
    if (problem !== null) throw new EventsStoreError("invalid_argument", `subscription position cannot be stored: ${problem}`);
    const ids = seen.length > SNAPSHOT_LIMITS.recent ? seen.slice(-SNAPSHOT_LIMITS.recent) : seen.slice();
    this.table.advance(key, cursor, ids);
    return serializePosition({ n: this.positions.next(key), key, cursor, seen: ids, whole: false });
  }

  get lastClientMs(): number | null {
    return this.lastClient;
  }

  setLastClientMs(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new EventsStoreError("invalid_argument", "last client time must be a non-negative integer of milliseconds");
    this.lastClient = ms;
    this.gen++;
  }

  /** The v1a keys seen per server origin (a copy). */
  get serverKeys(): ServerKeysData {
    return structuredClone(this.keysOfServers);
  }

  /** Replaces the server keys; false when they are the same. Throws invalid_argument past the snapshot's bounds. */
  setServerKeys(keys: ServerKeysData): boolean {
    const problem = serverKeysProblem(keys);
    if (problem !== null) throw new EventsStoreError("invalid_argument", problem);
    if (JSON.stringify(keys) === JSON.stringify(this.keysOfServers)) return false;
    this.keysOfServers = structuredClone(keys);
    this.gen++;
    return true;
  }

  // ---- what a write pass writes ----

  /**
   * The snapshot this pass writes, or null: after any change but a position, at once; for
   * positions alone, when a checkpoint is due (`closing`: always). Taken when the pass starts.
   */
  take(nowMs: number, closing: boolean): TakenSnapshot | null {
    const changed = this.gen !== this.writtenGen;
    if (!changed && !(this.positions.pending && (closing || this.positions.due(nowMs)))) return null;
    const position = this.positions.highest;
    return { text: this.table.fitted(position, this.lastClient, this.keysOfServers), gen: this.gen, position };
  }

  /** The text is what the file already holds: no need to write it. */
  onDisk(text: string): boolean {
    return text === this.lastText;
  }

  /** The taken snapshot is on disk (written now, or already there). */
  written(taken: TakenSnapshot, nowMs: number): void {
    if (typeof taken.text === "string") this.lastText = taken.text;
    this.writtenGen = taken.gen;
    this.positions.checkpointed(taken.position, nowMs);
  }

  /**
   * What a rewrite of the pending log (a compaction) must carry besides the live entries: a `whole`
   * position for every record whose newest position no snapshot on disk covers, since the rewrite
   * drops the records that said it.
   */
  rewriteTail(): string {
    let out = "";
    for (const key of this.positions.uncovered()) {
      const record = this.table.get(key);
      if (record === undefined) continue;
      out += serializePosition({ n: this.positions.highest, key, cursor: record.cursor, seen: record.recent, whole: true });
    }
    return out;
  }

  /** Positions the snapshot on disk does not cover yet (a close's last pass writes them into it). */
  get positionsPending(): boolean {
    return this.positions.pending;
  }

  /** Ms until a checkpoint may be written for positions not yet in a snapshot; null when none are pending. */
  checkpointInMs(nowMs: number): number | null {
    return this.positions.pending ? this.positions.waitMs(nowMs) : null;
  }
}
