/**
 * The pending log `mcp-events.log` (serve.md §3): JSON Lines of these record kinds,
 *
 *   {"add":{"seq":N,"action":"follow_up"|"steer","server":…,"name":…,"arguments":{…},"instructions"?:…,"event":{…}}}
 *   {"attempts":[[N,K],…]}   entry N has had K failed attempts (absolute, so replaying it twice is harmless)
 *   {"done":[N,…]}
 *   {"position":{"n":N,"key":…,"cursor":…,"seen":[…]}}   a subscription's cursor and dedup-window ids (positions.ts)
 *   {"ledger":{"from":V,"lines":["<events.ndjson line>",…]}}   with evidence only (ledger.ts)
 *
 * Live entries are the adds minus the dones, in seq order, each with its last attempts count (0
 * when none). A live entry's lines are its add and, once it has attempts, its attempts record:
 * a compaction rewrites exactly those, so the count survives it (serve.md §5: attempts are
 * persisted with the pending event). An attempts record for a seq that is not live is ignored.
 * This file holds the format and the load-time replay (with the torn-tail repair); log-file.ts
 * does the writing.
 *
 * A `ledger` record embeds the event-ledger lines of one write pass (from vigilseq V on), written
 * last in that pass's append, in the same sync as its add and done records: the pass's commit
 * point. With the ledger on, add, done and position records after a file's last ledger record are
 * therefore from a pass whose commit point was never reached (a crash tore its append): they are
 * set aside on load (`uncommitted`), and the store's next write rewrites the log without them.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { isRecord } from "../../shared/guards.ts";
import { scanLines } from "../../shared/durable/line-scan.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import type { EventOccurrence, GapNotice, PendingEntry, SubscriptionSpec } from "../types.ts";
import { EventsStoreError } from "./errors.ts";
import { EVENTS_LOG_FILE } from "./files.ts";
import { asPosition, type PositionRecord } from "./positions.ts";

/**
 * A live entry and its lines as a compaction writes them (with newlines): its `add` line, then its
 * attempts record when it has any. `bytes` is their UTF-8 length.
 */
export interface LiveEntry {
  entry: PendingEntry;
  line: string;
  bytes: number;
  /** Its `add` line alone. */
  addLine: string;
  /** Failed attempts so far (runs that ended without delivering it, outages not counted). */
  attempts: number;
}

/** The most attempts a record may state (far above MAX_ATTEMPTS: a bound on the input, not a policy). */
const MAX_RECORDED_ATTEMPTS = 1_000_000;

export function logPath(dir: string): string {
  return join(dir, EVENTS_LOG_FILE);
}

/** The `add` line of an entry, keys in a fixed order. Throws what JSON.stringify throws (cycles, BigInt). */
export function serializeAdd(entry: PendingEntry): string {
  const add: Record<string, unknown> = {
    seq: entry.seq,
    action: entry.action,
    server: entry.server,
    name: entry.name,
    arguments: entry.arguments,
  };
  if (entry.instructions !== undefined) add.instructions = entry.instructions;
  add.event = entry.event;
  return `${JSON.stringify({ add })}\n`;
}

export function serializeAttempts(counts: readonly (readonly [number, number])[]): string {
  return `${JSON.stringify({ attempts: counts })}\n`;
}

export function serializeDone(seqs: readonly number[]): string {
  return `${JSON.stringify({ done: seqs })}\n`;
}

const isSeq = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 1;

/**
 * The entry an `add` record describes, rebuilt with only the known keys, or null when it does not
 * have the shape of one. The event itself is kept as sent (its unknown keys are the server's).
 */
export function asEntry(x: unknown): PendingEntry | null {
  if (!isRecord(x)) return null;
  const { seq, action, server, name, arguments: args, instructions, event } = x;
  if (!isSeq(seq) || (action !== "follow_up" && action !== "steer")) return null;
  if (typeof server !== "string" || typeof name !== "string" || !isRecord(args) || !isRecord(event)) return null;
  if (instructions !== undefined && typeof instructions !== "string") return null;
  const entry: PendingEntry = { seq, action, server, name, arguments: args, event: event as EventOccurrence | GapNotice };
  if (instructions !== undefined) entry.instructions = instructions;
  return entry;
}

/** The queue entry of an occurrence or a gap notice for a subscription (the hub's `take`). */
export function pendingOf(spec: SubscriptionSpec, action: "follow_up" | "steer", event: EventOccurrence | GapNotice): Omit<PendingEntry, "seq"> {
  const { server, name, arguments: args, instructions } = spec;
  return { action, server, name, arguments: args, ...(instructions !== undefined ? { instructions } : {}), event };
}

/**
 * The live form of an entry. The line is our own serialization (given when the caller just made
 * it), so byte counts match what a compaction writes whatever the file said.
 */
export function liveEntry(entry: PendingEntry, line = serializeAdd(entry)): LiveEntry {
  return { entry: Object.freeze(entry), line, bytes: Buffer.byteLength(line), addLine: line, attempts: 0 };
}

/** The live form of `live` with `attempts` failed attempts (its lines then carry the count). */
export function withAttempts(live: LiveEntry, attempts: number): LiveEntry {
  const line = attempts > 0 ? live.addLine + serializeAttempts([[live.entry.seq, attempts]]) : live.addLine;
  return { ...live, line, bytes: Buffer.byteLength(line), attempts };
}

/**
 * Sets attempts counts on live entries (unknown seqs and unchanged counts are skipped). Returns
 * the record to append and the change in the live bytes, or null when nothing changed.
 */
export function applyAttempts(live: Map<number, LiveEntry>, counts: ReadonlyMap<number, number>): { line: string; deltaBytes: number } | null {
  const changed: [number, number][] = [];
  let deltaBytes = 0;
  for (const [seq, n] of counts) {
    const e = live.get(seq);
    if (e === undefined || e.attempts === n || !isCount(n)) continue;
    const next = withAttempts(e, n);
    live.set(seq, next);
    deltaBytes += next.bytes - e.bytes;
    changed.push([seq, n]);
  }
  return changed.length === 0 ? null : { line: serializeAttempts(changed), deltaBytes };
}

const isCount = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0 && x <= MAX_RECORDED_ATTEMPTS;

/** One `ledger` record: the event-ledger lines of a write pass, vigilseq `from` onwards. */
export interface EmbeddedLedger {
  from: number;
  lines: string[];
}

export function serializeLedger(from: number, lines: readonly string[]): string {
  return `${JSON.stringify({ ledger: { from, lines } })}\n`;
}

/** With the ledger on: embedded lines below `keepFrom` are not kept (events.ndjson has them already). */
export interface ReplayLedger {
  keepFrom: number;
}

export interface ReplayedLog {
  /** Open for reading and writing; null when there is no log file. */
  handle: FileHandle | null;
  /** Bytes on disk after the repair. */
  size: number;
  /** Live entries, seq order. */
  live: Map<number, LiveEntry>;
  /** Highest seq seen in any record (0 when none). */
  maxSeq: number;
  /** Lines that were not a record (unparseable, wrong shape, or over the line bound). */
  skipped: number;
  /** Bytes cut from a torn tail. */
  repairedBytes: number;
  /** Ledger records (file order), lines from `keepFrom` on; empty with the ledger off. */
  ledger: EmbeddedLedger[];
  /** The file holds any ledger record (with the ledger off, the next write rewrites the log without them). */
  hasLedgerRecords: boolean;
  /** Add, done and position records set aside: after the last ledger record, so never committed (see the header). */
  uncommitted: number;
  /** Position records, file order (set-aside ones left out). */
  positions: PositionRecord[];
  /** The highest position number in any record, set-aside ones too (0 when none). */
  maxPosition: number;
}

/**
 * Opens (never creates) and replays the log. A torn tail — bytes after the last newline, left by
 * a crash mid-append — is cut off and synced before this returns, so nothing is ever appended to
 * the fragment (that would glue the next record onto it and lose it on every later replay).
 * Throws file_refused for a symlink, a non-regular file, or a file over `maxFileBytes`.
 */
export async function replayLog(dir: string, maxFileBytes: number, onSync: () => void, ledger: ReplayLedger | null = null): Promise<ReplayedLog> {
  const path = logPath(dir);
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch (e) {
    const code = errnoCode(e);
    if (code === "ENOENT") return { handle: null, size: 0, live: new Map(), maxSeq: 0, skipped: 0, repairedBytes: 0, ledger: [], hasLedgerRecords: false, uncommitted: 0, positions: [], maxPosition: 0 };
    throw refused(path, code === "ELOOP" ? "it is a symbolic link" : errorMessage(e), e);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw refused(path, "it is not a regular file");
    if (st.size > maxFileBytes) throw refused(path, `it is ${st.size} bytes, over the ${maxFileBytes}-byte bound`);
    if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
    const found = new Map<number, LiveEntry>();
    const state = { maxSeq: 0, maxPosition: 0, skipped: 0, goodEnd: st.size };
    const positions: PositionRecord[] = [];
    const replay = new LedgerReplay(ledger, { live: found, positions }, state);
    const readAt = (buf: Buffer, length: number, position: number) => handle.read(buf, 0, length, position).then((r) => r.bytesRead);
    await scanLines(readAt, 0, st.size, { maxLine: maxFileBytes, chunkBytes: 1 << 20 }, (line) => {
      if (!line.complete) state.goodEnd = line.offset;
      else {
        const record = line.bytes === null ? null : parseRecord(line.bytes);
        if (record === null) state.skipped++;
        else replay.take(record);
      }
      return true;
    });
    const uncommitted = replay.end();
    if (state.goodEnd < st.size) {
      // Cutting the torn tail is a write: its failure (ENOSPC, EIO) is no damaged file (exit 3, not 2).
      await Promise.resolve()
        .then(() => handle.truncate(state.goodEnd))
        .then(() => handle.datasync())
        .catch((e: unknown) => {
          throw new EventsStoreError("write_failed", `events log ${path}: cannot cut its torn tail: ${errorMessage(e)}`, { cause: e });
        });
      onSync();
    }
    const live = new Map([...found.entries()].sort(([a], [b]) => a - b));
    return {
      handle,
      size: state.goodEnd,
      live,
      maxSeq: state.maxSeq,
      skipped: state.skipped,
      repairedBytes: st.size - state.goodEnd,
      ledger: replay.embedded,
      hasLedgerRecords: replay.seen,
      uncommitted,
      positions,
      maxPosition: state.maxPosition,
    };
  } catch (e) {
    await handle.close().catch(() => {});
    if (e instanceof EventsStoreError) throw e;
    throw refused(path, errorMessage(e), e);
  }
}

type LogRecord =
  | { add: PendingEntry }
  | { attempts: [number, number][] }
  | { done: number[] }
  | { position: PositionRecord }
  | { ledger: EmbeddedLedger };

/** One complete line as a record, or null when it is not one (it is then ignored). */
function parseRecord(bytes: Buffer): LogRecord | null {
  let record: unknown;
  try {
    record = JSON.parse(bytes.toString("utf8"));
  } catch {
    return null;
  }
  if (!isRecord(record)) return null;
  if ("add" in record) {
    const entry = asEntry(record.add);
    return entry === null ? null : { add: entry };
  }
  if ("attempts" in record) {
    const counts = record.attempts;
    if (!Array.isArray(counts) || !counts.every((c) => Array.isArray(c) && c.length === 2 && isSeq(c[0]) && isCount(c[1]))) return null;
    return { attempts: counts as [number, number][] };
  }
  if ("position" in record) {
    const position = asPosition(record.position);
    return position === null ? null : { position };
  }
  if ("ledger" in record) {
    const l = record.ledger;
    if (!isRecord(l) || !isCount(l.from) || !Array.isArray(l.lines) || !l.lines.every((x) => typeof x === "string")) return null;
    return { ledger: { from: l.from, lines: l.lines as string[] } };
  }
  const done = record.done;
  if (!Array.isArray(done) || !done.every(isSeq)) return null;
  return { done };
}

/** What a replay builds: the live entries, and the position records to apply to the snapshot. */
interface Replayed {
  live: Map<number, LiveEntry>;
  positions: PositionRecord[];
}

function applyRecord(record: LogRecord, { live, positions }: Replayed): void {
  if ("position" in record) positions.push(record.position);
  else if ("add" in record) {
    // An add replayed twice (a retried write, log-file.ts) keeps the count recorded after the first.
    const entry = record.add;
    const earlier = live.get(entry.seq);
    live.set(entry.seq, earlier === undefined ? liveEntry(entry) : withAttempts(liveEntry(entry), earlier.attempts));
  } else if ("attempts" in record) {
    applyAttempts(live, new Map(record.attempts));
  } else if ("done" in record) {
    for (const seq of record.done) live.delete(seq);
  }
}

/**
 * The replay's handling of ledger records (see the header): with the ledger on, records after a
 * ledger record wait for the next one; those still waiting at the end of the file are attempts
 * counts (kept: a pass of attempts alone embeds no ledger lines) or an uncommitted pass's adds and
 * dones (set aside). Before the file's first ledger record every record counts: it was written
 * with the ledger off, or by passes that the first ledger record closed.
 */
class LedgerReplay {
  readonly embedded: EmbeddedLedger[] = [];
  seen = false;
  private waiting: LogRecord[] = [];

  constructor(
    private readonly ledger: ReplayLedger | null,
    private readonly live: Replayed,
    private readonly state: { maxSeq: number; maxPosition: number },
  ) {}

  take(record: LogRecord): void {
    // Seqs (and position numbers) never go back, even past a set-aside record: nothing reuses one a crash may have seen.
    if ("add" in record) this.state.maxSeq = Math.max(this.state.maxSeq, record.add.seq);
    else if ("done" in record) for (const seq of record.done) this.state.maxSeq = Math.max(this.state.maxSeq, seq);
    else if ("position" in record) this.state.maxPosition = Math.max(this.state.maxPosition, record.position.n);
    if ("ledger" in record) {
      this.seen = true;
      if (this.ledger !== null) this.keep(record.ledger);
      for (const r of this.waiting) applyRecord(r, this.live);
      this.waiting = [];
    } else if (this.ledger !== null && this.seen) {
      this.waiting.push(record);
    } else {
      applyRecord(record, this.live);
    }
  }

  /** Applies what may be applied of the waiting records; returns how many were set aside. */
  end(): number {
    let uncommitted = 0;
    for (const r of this.waiting) {
      if ("attempts" in r) applyRecord(r, this.live);
      else uncommitted++;
    }
    this.waiting = [];
    return uncommitted;
  }

  private keep(l: EmbeddedLedger): void {
    const skip = Math.max(0, this.ledger!.keepFrom - l.from);
    if (skip < l.lines.length) this.embedded.push({ from: l.from + skip, lines: l.lines.slice(skip) });
  }
}

function refused(path: string, why: string, cause?: unknown): EventsStoreError {
  return new EventsStoreError("file_refused", `events log ${path} refused: ${why}`, cause === undefined ? {} : { cause });
}
