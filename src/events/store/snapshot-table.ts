/**
 * The store's subscription records (cursor, dedup window, runtime spec, webhook) together with each
 * one's JSON text as a member of the snapshot's `subscriptions` object.
 *
 * The snapshot is rewritten whole whenever it is written (serve.md §3), and most records do not
 * change between two snapshots. Serializing every record at every write made a snapshot's cost grow
 * with the session's subscriptions — 100 ms of event-loop time per write at 1,000 subscriptions with
 * full windows (issue 16; bench/events/hotpath-snapshot.ts). Each record's text is made once, when
 * it is set (or, for a record a page's position moved, when the next snapshot is taken), and the
 * snapshot is joined from them: the same bytes as JSON.stringify of the whole object, since
 * JSON.stringify writes a nested value exactly as it writes it alone.
 */
import { logLine } from "../../shared/log.ts";
import { EventsStoreError } from "./errors.ts";
import { advanceRecord } from "./positions.ts";
import { SNAPSHOT_LIMITS, type ServerKeysData, SNAPSHOT_VERSION, type SubscriptionRecord } from "./snapshot.ts";

const VERSION_TEXT = JSON.stringify(SNAPSHOT_VERSION);

interface Entry {
  record: SubscriptionRecord;
  /** Its text, or null after `advance` moved the record (made again when a snapshot is taken). */
  member: string | null;
  /** UTF-8 bytes of `member`, once a snapshot near its bound needed them (-1 before). */
  bytes: number;
}

/** A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4). */
const MAX_UTF8_PER_UNIT = 3;

export class SubscriptionTable {
  /** In insertion order, as a plain object's string keys are: the order the snapshot lists them in. */
  private readonly entries = new Map<string, Entry>();
  /** UTF-16 code units of every member: what bounds their bytes without encoding them. */
  private memberUnits = 0;
  /** Keys whose member text is stale (`advance`): made again once, when the next snapshot is taken. */
  private readonly stale = new Set<string>();
  /** Whether the last fitted text trimmed windows (told once per streak in the log). */
  private trimming = false;

  /**
   * @param initial records read back from a snapshot (already validated and private to the store)
   * @param where the state directory, for the log line that says windows are being trimmed
   * @param maxBytes the largest snapshot file the store's reader accepts (snapshot.ts readSnapshotFile)
   */
  constructor(
    initial: Readonly<Record<string, SubscriptionRecord>> = {},
    private readonly where = "",
    private readonly maxBytes: number = SNAPSHOT_LIMITS.fileBytes,
  ) {
    for (const [key, record] of Object.entries(initial)) this.set(key, record);
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The store's own record: callers that hand it out copy it first. */
  get(key: string): SubscriptionRecord | undefined {
    return this.entries.get(key)?.record;
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Keeps `record`, which must be the store's private copy (snapshot.ts copyRecord); a known key keeps its place, as on an object. */
  set(key: string, record: SubscriptionRecord): void {
    const entry = memberOf(key, record);
    this.memberUnits += entry.member!.length - (this.entries.get(key)?.member?.length ?? 0);
    this.entries.set(key, entry);
    this.stale.delete(key);
  }

  /**
   * Moves a record to a position (positions.ts), in place: a page's cursor and the ids its window
   * took. Its text is made again only when a snapshot is next taken, not per page. False when the
   * key is unknown.
   */
  advance(key: string, cursor: string | null, seen: readonly string[]): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    advanceRecord(entry.record, cursor, seen, false);
    if (entry.member !== null) {
      this.memberUnits -= entry.member.length;
      entry.member = null;
      entry.bytes = -1;
      this.stale.add(key);
    }
    return true;
  }

  delete(key: string): boolean {
    const old = this.entries.get(key);
    if (old === undefined) return false;
    this.memberUnits -= old.member?.length ?? 0;
    this.stale.delete(key);
    return this.entries.delete(key);
  }

  /** The v3 snapshot text (with its newline) of every record as it is; `server_keys` only when some key is known. */
  serialize(position: number, lastClientMs: number | null, serverKeys: ServerKeysData = {}): string {
    this.refresh();
    return this.text(frame(position, lastClientMs, serverKeys), null);
  }

  /**
   * The snapshot text the store writes: `serialize`'s, unless that is over the bound the reader
   * accepts — then the persisted dedup windows are trimmed (oldest ids first) to the largest common
   * byte share that fits, so the store never writes a file it would refuse at the next start. What
   * cannot fit even with empty windows (cursors and specs alone) is an error to report instead of a
   * write. Dedup in memory is not affected: only what a restart starts from holds fewer ids.
   */
  fitted(position: number, lastClientMs: number | null, serverKeys: ServerKeysData = {}): string | EventsStoreError {
    this.refresh();
    const f = frame(position, lastClientMs, serverKeys);
    const commas = Math.max(0, this.entries.size - 1);
    // Far under the bound (the common case) without encoding anything; near it, the exact bytes.
    const fits = MAX_UTF8_PER_UNIT * (f.units + this.memberUnits + commas) <= this.maxBytes;
    const total = fits ? 0 : f.bytes + commas + this.exactMemberBytes();
    if (fits || total <= this.maxBytes) {
      if (this.trimming) logLine(`events state in ${this.where}: the snapshot fits its bound again; dedup windows are stored whole`, { code: "events_windows_whole" });
      this.trimming = false;
      return this.text(f, null);
    }
    const windows = [...this.entries.values()].map((e) => Buffer.byteLength(JSON.stringify(e.record.recent)) - 2);
    const room = this.maxBytes - (total - windows.reduce((a, b) => a + b, 0));
    if (room < 0) {
      return new EventsStoreError("write_failed", `the events snapshot would be ${total} bytes with ${this.entries.size} subscriptions, over the ${this.maxBytes}-byte bound even without dedup windows (kept for the next write; remove subscriptions)`);
    }
    const cap = fairShare(windows, room);
    if (!this.trimming) {
      logLine(`events state in ${this.where}: ${this.entries.size} subscriptions' dedup windows would make the snapshot ${total} bytes, over its ${this.maxBytes}-byte bound: each window is stored trimmed to its newest ${cap} bytes of ids (dedup in memory is whole)`, { level: "warn", code: "events_windows_trimmed" });
    }
    this.trimming = true;
    return this.text(f, cap);
  }

  /** Makes the texts `advance` left stale. */
  private refresh(): void {
    for (const key of this.stale) {
      const entry = this.entries.get(key);
      if (entry === undefined) continue;
      const member = memberOf(key, entry.record).member!;
      entry.member = member;
      this.memberUnits += member.length;
    }
    this.stale.clear();
  }

  private exactMemberBytes(): number {
    let sum = 0;
    for (const e of this.entries.values()) {
      if (e.bytes < 0) e.bytes = Buffer.byteLength(e.member!);
      sum += e.bytes;
    }
    return sum;
  }

  private text(f: { head: string; tail: string }, windowCap: number | null): string {
    let members = "";
    for (const [key, entry] of this.entries) {
      const member = windowCap === null ? entry.member! : memberOf(key, trimmed(entry.record, windowCap)).member!;
      members += members === "" ? member : `,${member}`;
    }
    return `${f.head}${members}${f.tail}`;
  }
}

/** The snapshot text around the members, its UTF-16 units and its UTF-8 bytes. */
function frame(position: number, lastClientMs: number | null, serverKeys: ServerKeysData): { head: string; tail: string; units: number; bytes: number } {
  const keys = Object.keys(serverKeys).length > 0 ? `,"server_keys":${JSON.stringify(serverKeys)}` : "";
  const head = `{"version":${VERSION_TEXT},"position":${position},"subscriptions":{`;
  const tail = `}${keys},"last_client_ms":${JSON.stringify(lastClientMs)}}\n`;
  return { head, tail, units: head.length + tail.length, bytes: Buffer.byteLength(head) + Buffer.byteLength(tail) };
}

function memberOf(key: string, record: SubscriptionRecord): Entry {
  return { record, member: `${JSON.stringify(key)}:${JSON.stringify(record)}`, bytes: -1 };
}

/**
 * The largest cap c with Σ min(size, c) ≤ room (water-filling): windows under the cap keep every
 * id, the larger ones are cut to it. `room` ≥ 0.
 */
export function fairShare(sizes: readonly number[], room: number): number {
  const sorted = [...sizes].sort((a, b) => a - b);
  let left = room;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(left / (sorted.length - i));
    if (sorted[i]! > share) return share;
    left -= sorted[i]!;
  }
  return Number.POSITIVE_INFINITY;
}

/** The record with only the newest ids whose text (`"id"` and the commas between) fits `cap` bytes. */
function trimmed(record: SubscriptionRecord, cap: number): SubscriptionRecord {
  let used = 0;
  let from = record.recent.length;
  while (from > 0) {
    const bytes = Buffer.byteLength(JSON.stringify(record.recent[from - 1])) + (from === record.recent.length ? 0 : 1);
    if (used + bytes > cap) break;
    used += bytes;
    from--;
  }
  return { ...record, recent: record.recent.slice(from) };
}
