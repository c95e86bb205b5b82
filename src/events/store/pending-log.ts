/**
 * The pending log `mcp-events.log` (serve.md §3): JSON Lines of three record kinds,
 *
 *   {"add":{"seq":N,"action":"follow_up"|"steer","server":…,"name":…,"arguments":{…},"instructions"?:…,"event":{…}}}
 *   {"attempts":[[N,K],…]}   entry N has had K failed attempts (absolute, so replaying it twice is harmless)
 *   {"done":[N,…]}
 *
 * Live entries are the adds minus the dones, in seq order, each with its last attempts count (0
 * when none). A live entry's lines are its add and, once it has attempts, its attempts record:
 * a compaction rewrites exactly those, so the count survives it (serve.md §5: attempts are
 * persisted with the pending event). An attempts record for a seq that is not live is ignored.
 * This file holds the format and the load-time replay (with the torn-tail repair); log-file.ts
 * does the writing.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { isRecord } from "../../shared/guards.ts";
import { scanLines } from "../../shared/durable/line-scan.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import type { EventOccurrence, GapNotice, PendingEntry } from "../types.ts";
import { EventsStoreError } from "./errors.ts";
import { EVENTS_LOG_FILE } from "./files.ts";

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
}

/**
 * Opens (never creates) and replays the log. A torn tail — bytes after the last newline, left by
 * a crash mid-append — is cut off and synced before this returns, so nothing is ever appended to
 * the fragment (that would glue the next record onto it and lose it on every later replay).
 * Throws file_refused for a symlink, a non-regular file, or a file over `maxFileBytes`.
 */
export async function replayLog(dir: string, maxFileBytes: number, onSync: () => void): Promise<ReplayedLog> {
  const path = logPath(dir);
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch (e) {
    const code = errnoCode(e);
    if (code === "ENOENT") return { handle: null, size: 0, live: new Map(), maxSeq: 0, skipped: 0, repairedBytes: 0 };
    throw refused(path, code === "ELOOP" ? "it is a symbolic link" : errorMessage(e), e);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw refused(path, "it is not a regular file");
    if (st.size > maxFileBytes) throw refused(path, `it is ${st.size} bytes, over the ${maxFileBytes}-byte bound`);
    if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
    const found = new Map<number, LiveEntry>();
    const state = { maxSeq: 0, skipped: 0, goodEnd: st.size };
    const readAt = (buf: Buffer, length: number, position: number) => handle.read(buf, 0, length, position).then((r) => r.bytesRead);
    await scanLines(readAt, 0, st.size, { maxLine: maxFileBytes, chunkBytes: 1 << 20 }, (line) => {
      if (!line.complete) state.goodEnd = line.offset;
      else if (line.bytes === null || !applyLine(line.bytes, found, state)) state.skipped++;
      return true;
    });
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
    return { handle, size: state.goodEnd, live, maxSeq: state.maxSeq, skipped: state.skipped, repairedBytes: st.size - state.goodEnd };
  } catch (e) {
    await handle.close().catch(() => {});
    if (e instanceof EventsStoreError) throw e;
    throw refused(path, errorMessage(e), e);
  }
}

/** Applies one complete line; false when it is not a record (it is then ignored). */
function applyLine(bytes: Buffer, live: Map<number, LiveEntry>, state: { maxSeq: number }): boolean {
  let record: unknown;
  try {
    record = JSON.parse(bytes.toString("utf8"));
  } catch {
    return false;
  }
  if (!isRecord(record)) return false;
  if ("add" in record) {
    const entry = asEntry(record.add);
    if (entry === null) return false;
    // An add replayed twice (a retried write, log-file.ts) keeps the count recorded after the first.
    const earlier = live.get(entry.seq);
    live.set(entry.seq, earlier === undefined ? liveEntry(entry) : withAttempts(liveEntry(entry), earlier.attempts));
    state.maxSeq = Math.max(state.maxSeq, entry.seq);
    return true;
  }
  if ("attempts" in record) {
    const counts = record.attempts;
    if (!Array.isArray(counts) || !counts.every((c) => Array.isArray(c) && c.length === 2 && isSeq(c[0]) && isCount(c[1]))) return false;
    applyAttempts(live, new Map(counts as [number, number][]));
    return true;
  }
  const done = record.done;
  if (!Array.isArray(done) || !done.every(isSeq)) return false;
  for (const seq of done) {
    live.delete(seq);
    state.maxSeq = Math.max(state.maxSeq, seq);
  }
  return true;
}

function refused(path: string, why: string, cause?: unknown): EventsStoreError {
  return new EventsStoreError("file_refused", `events log ${path} refused: ${why}`, cause === undefined ? {} : { cause });
}
