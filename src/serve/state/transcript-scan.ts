/**
 * The transcript's on-disk shape, as far as scanning needs it: every record line begins
 * `{"seq":N,"time":"…","type":"…"`, so a record's seq (and whether it is a `compaction`) is read
 * from its first bytes without decoding the line; a sparse index of byte offsets; the open-time
 * recovery scan that finds the torn tail; and the bounded page reader. Each scan reports every
 * record line it looks at (`onLine`), which the transcript counts as `recordsRead`.
 */
import { StateError } from "../../shared/durable/state-error.ts";
import { isRecord } from "../../shared/guards.ts";
import { type ReadAt, scanLines } from "../../shared/durable/line-scan.ts";

const PREFIX = /^\{"seq":([1-9]\d{0,15}),"time":"/;
const COMPACTION = /^\{"seq":[1-9]\d{0,15},"time":"[^"]{0,40}","type":"compaction"[,}]/;

/** Whether a record line (its first bytes suffice) is a `compaction` frame. */
export function isCompactionLine(bytes: Buffer | null): boolean {
  return bytes !== null && COMPACTION.test(bytes.toString("latin1", 0, Math.min(100, bytes.length)));
}

export interface RecordScan {
  maxLine: number;
  chunkBytes: number;
  onRead?: (n: number) => void;
  /** Called once per record line looked at. */
  onLine?: () => void;
}

/** The seq at the start of a record line, or null when the line does not start like a record. */
export function prefixSeq(bytes: Buffer | null): number | null {
  if (bytes === null) return null;
  const m = PREFIX.exec(bytes.toString("latin1", 0, Math.min(40, bytes.length)));
  const seq = m?.[1] === undefined ? Number.NaN : Number(m[1]);
  return Number.isSafeInteger(seq) ? seq : null;
}

export function corruptLine(path: string, offset: number): StateError {
  return new StateError("transcript_corrupt", `transcript ${path}: the line at byte ${offset} is not a transcript record`);
}

/** Byte offset of every Nth record: a few numbers per thousand records. */
export class SparseIndex {
  private readonly seqs: number[] = [];
  private readonly offsets: number[] = [];
  private count = 0;

  constructor(private readonly every: number) {}

  /** Called for every record, in order. */
  add(seq: number, offset: number): void {
    if (this.count++ % this.every === 0) {
      this.seqs.push(seq);
      this.offsets.push(offset);
    }
  }

  get entries(): number {
    return this.seqs.length;
  }

  /** Offset of the last indexed record with seq <= since + 1: every record before it has seq <= since. */
  startOffset(since: number): number {
    let lo = 0;
    let hi = this.seqs.length - 1;
    let found = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((this.seqs[mid] ?? Number.POSITIVE_INFINITY) <= since + 1) {
        found = this.offsets[mid] ?? 0;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }
}

export interface Recovered {
  /** Where the good records end; anything after it is a torn tail to truncate. */
  goodEnd: number;
  lastSeq: number;
}

type Candidate = { offset: number; length: number; seq: number | null; compaction: boolean };

/**
 * Scans a whole segment whose records all have seq > `after`. Every complete line but the last
 * must start like a record with a strictly increasing seq (else transcript_corrupt); the last
 * complete line must also decode as a JSON object carrying that seq, else it is part of the torn
 * tail along with any bytes after the last newline. Each good record is reported to onRecord.
 */
export async function recoverScan(
  path: string,
  readAt: ReadAt,
  fileSize: number,
  after: number,
  scan: RecordScan,
  onRecord: (seq: number, offset: number, compaction: boolean) => void,
): Promise<Recovered> {
  let lastSeq = after;
  const commit = (line: Candidate) => {
    if (line.seq === null || line.seq <= lastSeq) throw corruptLine(path, line.offset);
    onRecord(line.seq, line.offset, line.compaction);
    lastSeq = line.seq;
  };
  const held: { line: Candidate | null } = { line: null };
  let goodEnd = fileSize;
  await scanLines(readAt, 0, fileSize, scan, (line) => {
    if (!line.complete) {
      goodEnd = line.offset;
      return true;
    }
    if (held.line !== null) commit(held.line);
    scan.onLine?.();
    held.line = { offset: line.offset, length: line.length, seq: prefixSeq(line.bytes), compaction: isCompactionLine(line.bytes) };
    return true;
  });
  if (held.line !== null) {
    if (await isWholeRecord(readAt, held.line, scan.maxLine)) commit(held.line);
    else goodEnd = held.line.offset;
  }
  return { goodEnd, lastSeq };
}

async function isWholeRecord(readAt: ReadAt, line: Candidate, maxLine: number): Promise<boolean> {
  if (line.seq === null || line.length > maxLine) return false;
  const buf = Buffer.allocUnsafe(line.length);
  let got = 0;
  while (got < line.length) {
    const n = await readAt(buf.subarray(got), line.length - got, line.offset + got);
    if (n === 0) return false;
    got += n;
  }
  try {
    const value: unknown = JSON.parse(buf.toString("utf8"));
    return isRecord(value) && value.seq === line.seq;
  } catch {
    return false;
  }
}

/** A page being filled, possibly across segments. */
export interface PageFill<R> {
  records: R[];
  bytes: number;
  /** Set when a record after the page's last exists. */
  more: boolean;
}

/**
 * Adds to `fill` the records with seq > since, scanning from `start` (an index offset) to `end`:
 * at most `limit` records and `maxBytes` bytes in all, except that the first record is always
 * returned. Lines before the page are skipped by their prefix without being decoded.
 */
export async function readPage<R>(
  path: string,
  readAt: ReadAt,
  start: number,
  end: number,
  scan: RecordScan,
  page: { since: number; limit: number; maxBytes: number },
  fill: PageFill<R>,
): Promise<void> {
  const { records } = fill;
  const state = fill;
  await scanLines(readAt, start, end, scan, (line) => {
    const seq = line.complete ? prefixSeq(line.bytes) : null;
    if (seq === null || line.bytes === null) throw corruptLine(path, line.offset);
    scan.onLine?.();
    if (seq <= page.since) return true;
    if (records.length >= page.limit || (records.length > 0 && state.bytes + line.length + 1 > page.maxBytes)) {
      state.more = true;
      return false;
    }
    try {
      records.push(JSON.parse(line.bytes.toString("utf8")) as R);
    } catch {
      throw corruptLine(path, line.offset);
    }
    state.bytes += line.length + 1;
    return true;
  });
}

/** The seq of the last `compaction` record in the first `end` bytes of a segment, or null. Reads prefixes only. */
export async function lastCompactionIn(readAt: ReadAt, end: number, scan: RecordScan): Promise<number | null> {
  let found: number | null = null;
  await scanLines(readAt, 0, end, scan, (line) => {
    if (!line.complete) return false;
    scan.onLine?.();
    if (isCompactionLine(line.bytes)) found = prefixSeq(line.bytes) ?? found;
    return true;
  });
  return found;
}
