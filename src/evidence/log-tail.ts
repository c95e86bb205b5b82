/**
 * Continuing an NDJSON evidence log that is already on disk (a serve session's decisions.ndjson,
 * events.ndjson, checkpoints.ndjson are reopened at every start of the session).
 *
 * - A torn tail (bytes after the last newline: a write cut by a crash) is cut off, with one stderr
 *   line naming the file and the byte count; the complete lines before it stay as they are.
 * - Only the last complete line is read, never the whole log, and it is bounded: a last line over
 *   MAX_TAIL_LINE_BYTES (or a torn tail that long) is refused, since no record of ours is that big.
 * - `resumeChain`: the chain continues from the last record (count = its vigilseq + 1, head = the
 *   SHA-256 of that line with its newline). A log whose last line carries no chain (written by an
 *   older vigil, or not a record at all) is set aside — renamed to `<stem>.v1-<UTC time>.ndjson`,
 *   kept, said once on stderr — and a fresh chain starts from the anchor.
 * - `resumeCheckpoints`: the number of the next checkpoint of a checkpoints.ndjson (its last line's
 *   `checkpoint` + 1; the signature is not checked here, `vigil verify` does). An unreadable last
 *   line sets the file aside (`unreadable`) and numbering starts again from 0 in a new file.
 * - `setAside` is the rename.
 *
 * I/O only at the edges: open, one bounded read from the end, truncate, rename.
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, linkSync, openSync, readSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { syncDirSync } from "../shared/durable/atomic-file.ts";
import { logLine } from "../shared/log.ts";
import { type ChainHead, lineSha256 } from "./chain.ts";
import { CHECKPOINT_PAYLOAD_TYPE, envelopeProblem } from "./dsse.ts";
import { CHECKPOINT_TYPE } from "./statement.ts";

/** The longest last line (and torn tail) a log may end with: far above any record vigil writes. */
export const MAX_TAIL_LINE_BYTES = 1 << 20;

/** A log that cannot be continued (a last line over the bound, not a regular file, unreadable). */
export class LogTailError extends VigilError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("state_invalid", message, options);
    this.name = "LogTailError";
  }
}

export interface TailOptions {
  /** Where the one line per repair or rename goes (default: stderr through the logger). */
  log?: (message: string) => void;
  /** The clock of a set-aside file's name (default: now). */
  nowMs?: number;
}

export interface LogTail {
  /** False when the file does not exist (nothing was created). */
  exists: boolean;
  /** Bytes cut after the last newline (0: the log ended with a newline, or is empty). */
  cut: number;
  /** The last complete line, without its newline, or null when the log has none. */
  lastLine: Buffer | null;
}

/** Cuts a torn tail off `path` and returns its last complete line (bounded). Throws LogTailError. */
export function repairTail(path: string, o: TailOptions = {}): LogTail {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return { exists: false, cut: 0, lastLine: null };
    throw new LogTailError(`cannot open ${path}: ${errorMessage(e)}`, { cause: e });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new LogTailError(`${path}: not a regular file`);
    const size = st.size;
    // One read from the end: a torn tail of at most MAX+1 bytes and a last line of at most MAX
    // fit, with both newlines, in twice that.
    const windowStart = Math.max(0, size - 2 * (MAX_TAIL_LINE_BYTES + 1));
    const window = readAt(fd, windowStart, size - windowStart);
    const lastNl = window.lastIndexOf(0x0a);
    if (lastNl < 0 && windowStart > 0) throw tooLong(path, "its torn tail");
    const end = lastNl < 0 ? 0 : windowStart + lastNl + 1;
    const cut = size - end;
    if (cut > MAX_TAIL_LINE_BYTES + 1) throw tooLong(path, "its torn tail");
    if (cut > 0) {
      ftruncateSync(fd, end);
      fsyncSync(fd);
      (o.log ?? logLine)(`evidence: ${path}: cut a torn tail of ${cut} byte${cut === 1 ? "" : "s"} (an unfinished last line)`);
    }
    if (lastNl < 0) return { exists: true, cut, lastLine: null };
    const prevNl = lastNl === 0 ? -1 : window.lastIndexOf(0x0a, lastNl - 1);
    if (prevNl < 0 && windowStart > 0) throw tooLong(path, "its last line");
    const line = window.subarray(prevNl + 1, lastNl);
    if (line.length > MAX_TAIL_LINE_BYTES) throw tooLong(path, "its last line");
    return { exists: true, cut, lastLine: Buffer.from(line) };
  } catch (e) {
    if (e instanceof LogTailError) throw e;
    throw new LogTailError(`cannot read the end of ${path}: ${errorMessage(e)}`, { cause: e });
  } finally {
    closeSync(fd);
  }
}

export interface ChainResume {
  /** Where the next record continues: the resumed head, or the anchor for a fresh chain. */
  start: ChainHead;
  cut: number;
  /** The file an older log was moved to (a fresh chain starts), else null. */
  setAsideTo: string | null;
}

/**
 * Where the chained log at `path` continues. Missing or empty: from `anchor`. A last line without
 * `vigilseq`/`vigilprev`: the file is set aside (`v1`) and the chain starts from `anchor`.
 */
export function resumeChain(path: string, anchor: string, o: TailOptions = {}): ChainResume {
  const tail = repairTail(path, o);
  if (tail.lastLine === null) return { start: { count: 0, head: anchor }, cut: tail.cut, setAsideTo: null };
  const seq = chainSeqOf(tail.lastLine);
  if (seq !== null) return { start: { count: seq + 1, head: lineSha256(tail.lastLine) }, cut: tail.cut, setAsideTo: null };
  const to = setAside(path, "v1", o.nowMs);
  (o.log ?? logLine)(`evidence: ${path}: its last record carries no hash chain (an older vigil wrote it); kept as ${basename(to)}, a new chain starts`);
  return { start: { count: 0, head: anchor }, cut: tail.cut, setAsideTo: to };
}

/** The chain attributes of a record's line, or null when the line is not a chained record. Pure. */
export function chainLinkOf(line: Uint8Array): { vigilseq: number; vigilprev: string } | null {
  const value = jsonOf(Buffer.from(line));
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { vigilseq, vigilprev } = value as { vigilseq?: unknown; vigilprev?: unknown };
  if (typeof vigilseq !== "number" || !Number.isSafeInteger(vigilseq) || vigilseq < 0) return null;
  if (typeof vigilprev !== "string" || !/^[0-9a-f]{64}$/.test(vigilprev)) return null;
  return { vigilseq, vigilprev };
}

/** The `vigilseq` of a chained record's line, or null when the line is not one. Pure. */
export function chainSeqOf(line: Uint8Array): number | null {
  return chainLinkOf(line)?.vigilseq ?? null;
}

export interface CheckpointsResume {
  firstNumber: number;
  cut: number;
  setAsideTo: string | null;
}

/** Where the numbering of the checkpoints file at `path` continues. */
export function resumeCheckpoints(path: string, o: TailOptions = {}): CheckpointsResume {
  const tail = repairTail(path, o);
  if (tail.lastLine === null) return { firstNumber: 0, cut: tail.cut, setAsideTo: null };
  const last = checkpointNumberOf(tail.lastLine);
  if (last !== null) return { firstNumber: last + 1, cut: tail.cut, setAsideTo: null };
  const to = setAside(path, "unreadable", o.nowMs);
  (o.log ?? logLine)(`evidence: ${path}: its last line is not a checkpoint; kept as ${basename(to)}, numbering starts again in a new file`);
  return { firstNumber: 0, cut: tail.cut, setAsideTo: to };
}

/** The `checkpoint` number in a checkpoints.ndjson line (a DSSE envelope), or null. Pure; no signature check. */
export function checkpointNumberOf(line: Uint8Array): number | null {
  const envelope = jsonOf(Buffer.from(line));
  if (envelopeProblem(envelope) !== null) return null;
  const env = envelope as { payload: string; payloadType: string };
  if (env.payloadType !== CHECKPOINT_PAYLOAD_TYPE) return null;
  const payload = jsonOf(Buffer.from(env.payload, "base64"));
  if (typeof payload !== "object" || payload === null) return null;
  const { _type, checkpoint } = payload as { _type?: unknown; checkpoint?: unknown };
  if (_type !== CHECKPOINT_TYPE || typeof checkpoint !== "number" || !Number.isSafeInteger(checkpoint) || checkpoint < 0) return null;
  return checkpoint;
}

/**
 * Renames `dir/<stem>.ndjson` to `dir/<stem>.<tag>-<YYYYMMDDTHHMMSSZ>.ndjson` (a `-2`, `-3`… suffix
 * when that exists; never over another file) and returns the new path. Throws LogTailError.
 */
export function setAside(path: string, tag: string, nowMs: number = Date.now()): string {
  const dir = dirname(path);
  const name = basename(path);
  const stem = name.endsWith(".ndjson") ? name.slice(0, -".ndjson".length) : name;
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  for (let i = 1; i <= 100; i++) {
    const to = join(dir, `${stem}.${tag}-${stamp}${i === 1 ? "" : `-${i}`}.ndjson`);
    try {
      // link + unlink: unlike rename, never replaces a file already there.
      linkSync(path, to);
    } catch (e) {
      if (errnoCode(e) === "EEXIST") continue;
      throw new LogTailError(`cannot set ${path} aside: ${errorMessage(e)}`, { cause: e });
    }
    try {
      unlinkSync(path);
      syncDirSync(dir);
    } catch (e) {
      throw new LogTailError(`cannot set ${path} aside: ${errorMessage(e)}`, { cause: e });
    }
    return to;
  }
  throw new LogTailError(`cannot set ${path} aside: too many files named ${stem}.${tag}-${stamp}…`);
}

/** The JSON value of some UTF-8 bytes, or undefined when they are not JSON: a line that is not ours. */
function jsonOf(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let n = 0;
  while (n < length) {
    const got = readSync(fd, buf, n, length - n, position + n);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n);
}

function tooLong(path: string, what: string): LogTailError {
  return new LogTailError(`${path}: ${what} is over ${MAX_TAIL_LINE_BYTES} bytes; vigil writes no record that long (the file is damaged)`);
}
