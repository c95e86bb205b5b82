/**
 * A session's transcript (serve.md §3, §4): `transcript.jsonl`, append-only, 0600, one record per
 * line. A record is the frame as sent to clients plus its `seq` (per session, strictly increasing,
 * first 1) and `time` (ISO 8601); they are written first, `{"seq":N,"time":"…",…}`, so a scan
 * finds a record's seq without decoding the whole line.
 *
 * - open: a torn tail from a crash (trailing bytes with no newline, or a last line that is not a
 *   whole record) is truncated and synced before anything is appended; damage anywhere else is
 *   `transcript_corrupt` (not repaired). The next seq is the last seq + 1.
 * - append: assigns the seq and writes the line at once (a reattaching client can replay it), no sync.
 * - sync: fdatasync, with group commit (callers that arrive while one is in flight share the next
 *   one); `durableSeq` is the highest seq covered by a completed sync. A run succeeds only after it.
 * - A failed write or sync latches the transcript failed: every later append and sync throws
 *   `transcript_failed`. Records are never dropped silently.
 * - readSince: bounded by count and bytes, read in chunks, starting from a sparse in-memory index
 *   (the offset of every Nth record), so a late `since` does not scan from the start.
 */
import { closeSync, constants, fchmodSync, fdatasync, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { MAX_FRAME_BYTES } from "../../shared/frame-cap.ts";
import { GroupCommit } from "../../shared/durable/group-commit.ts";
import { type ReadAt, fdReader } from "../../shared/durable/line-scan.ts";
import { FILE_MODE, TRANSCRIPT_FILE } from "./paths.ts";
import { SparseIndex, readPage, recoverScan } from "./transcript-scan.ts";

export type Frame = { type: string; [key: string]: unknown };
export type TranscriptRecord = Frame & { seq: number; time: string };

export const TRANSCRIPT_DEFAULTS = {
  maxRecordBytes: MAX_FRAME_BYTES,
  indexEvery: 256,
  readChunkBytes: 64 * 1024,
  readLimit: 1000,
  readMaxBytes: 4 * 1024 * 1024,
} as const;

export interface TranscriptOptions {
  /** Largest record, newline included (default 8 MiB). */
  maxRecordBytes?: number;
  /** Index the byte offset of every Nth record (default 256). */
  indexEvery?: number;
  readChunkBytes?: number;
  /** Test seam: the fdatasync used by open and sync. */
  fdatasync?: (fd: number) => Promise<void>;
  /** Test seam: the positional write (returns bytes written, throws the system error). */
  write?: (fd: number, buf: Buffer, offset: number, length: number, position: number) => number;
  now?: () => Date;
}

export interface ReadSinceOptions {
  /** At most this many records (default 1000). */
  limit?: number;
  /** At most this many bytes of records (default 4 MiB); the first record is returned whatever its size. */
  maxBytes?: number;
}

export interface ReadSinceResult {
  records: TranscriptRecord[];
  /** Records after the last one returned exist (ask again with its seq). */
  more: boolean;
}

const defaultDatasync = (fd: number) => new Promise<void>((done, fail) => fdatasync(fd, (e) => (e ? fail(e) : done())));

export class Transcript {
  /** Bytes dropped from a torn tail when the transcript was opened (0 when it was clean). */
  repairedBytes = 0;
  /** Accounting for tests and diagnostics: bytes read by readSince and open, fdatasyncs issued. */
  readonly stats = { bytesRead: 0, syncs: 0 };
  private size = 0;
  private written = 0;
  private readonly index: SparseIndex;
  private readonly commits: GroupCommit;
  private failure: StateError | null = null;
  private closing = false;
  private fdOpen = true;
  private reads = 0;
  private readsDrained: (() => void) | null = null;
  private readonly reader: ReadAt;
  private readonly maxRecordBytes: number;
  private readonly chunkBytes: number;
  private readonly datasync: (fd: number) => Promise<void>;
  private readonly write: NonNullable<TranscriptOptions["write"]>;
  private readonly now: () => Date;

  private constructor(readonly path: string, private readonly fd: number, o: TranscriptOptions) {
    this.reader = fdReader(fd);
    this.maxRecordBytes = o.maxRecordBytes ?? TRANSCRIPT_DEFAULTS.maxRecordBytes;
    this.chunkBytes = o.readChunkBytes ?? TRANSCRIPT_DEFAULTS.readChunkBytes;
    this.datasync = o.fdatasync ?? defaultDatasync;
    this.write = o.write ?? ((fd, buf, off, len, pos) => writeSync(fd, buf, off, len, pos));
    this.now = o.now ?? (() => new Date());
    this.index = new SparseIndex(Math.max(1, o.indexEvery ?? TRANSCRIPT_DEFAULTS.indexEvery));
    this.commits = new GroupCommit(() => this.flush(), () => this.written);
  }

  /** Opens (creating, 0600) `<dir>/transcript.jsonl`, repairs a torn tail and syncs. */
  static async open(dir: string, options: TranscriptOptions = {}): Promise<Transcript> {
    const path = join(dir, TRANSCRIPT_FILE);
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, FILE_MODE);
    } catch (e) {
      const why = errnoCode(e) === "ELOOP" ? "it is a symbolic link" : errorMessage(e);
      throw new StateError("transcript_failed", `cannot open transcript ${path}: ${why}`, { cause: e });
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new StateError("transcript_corrupt", `transcript ${path} is not a regular file`);
      if ((st.mode & 0o777) !== FILE_MODE) fchmodSync(fd, FILE_MODE);
      const t = new Transcript(path, fd, options);
      await t.recover(st.size);
      return t;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Highest seq written (0 when empty). */
  get lastSeq(): number {
    return this.written;
  }

  /** Highest seq covered by a completed fdatasync. */
  get durableSeq(): number {
    return this.commits.durable;
  }

  /** Why the transcript stopped accepting records, once it has. */
  get failed(): StateError | null { return this.failure; }

  /** Appends a frame (its own `seq`/`time` keys are replaced) and returns the record's seq. */
  append(frame: Frame): number {
    return this.appendFrame(frame).seq;
  }

  /** Appends a frame; returns the record and its exact JSON text (without the newline) for broadcasting. */
  appendFrame(frame: Frame): { seq: number; record: TranscriptRecord; json: string } {
    if (this.failure) throw this.failure;
    if (this.closing) throw new StateError("transcript_closed", `transcript ${this.path} is closed`);
    const seq = this.written + 1;
    const time = this.now().toISOString();
    if (typeof frame.type !== "string") throw new StateError("record_invalid", "frame cannot be recorded: no string `type`");
    const { seq: _seq, time: _time, ...rest } = frame;
    let body: string;
    try {
      body = JSON.stringify(rest);
    } catch (e) {
      throw new StateError("record_invalid", `frame cannot be recorded: ${errorMessage(e)}`, { cause: e });
    }
    const json = `{"seq":${seq},"time":${JSON.stringify(time)}${body === "{}" ? "}" : `,${body.slice(1)}`}`;
    const line = Buffer.from(`${json}\n`);
    if (line.length > this.maxRecordBytes) {
      throw new StateError("record_too_large", `record of ${line.length} bytes is over the ${this.maxRecordBytes}-byte cap`);
    }
    try {
      let off = 0;
      while (off < line.length) {
        const n = this.write(this.fd, line, off, line.length - off, this.size + off);
        if (!(n > 0)) throw new Error("the write made no progress");
        off += n;
      }
    } catch (e) {
      const failure = this.latch(`writing record ${seq} failed: ${errorMessage(e)}`, e);
      try {
        ftruncateSync(this.fd, this.size); // drop a partial line, so a reopen sees clean records
      } catch {
        // the open-time repair will do it
      }
      throw failure;
    }
    this.index.add(seq, this.size);
    this.size += line.length;
    this.written = seq;
    return { seq, record: { ...rest, seq, time } as TranscriptRecord, json };
  }

  /** Makes every record appended so far durable. Concurrent callers share fdatasyncs (group commit). */
  sync(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.fdOpen) return Promise.reject(new StateError("transcript_closed", `transcript ${this.path} is closed`));
    return this.commits.request();
  }

  /** Records with seq > since, oldest first, bounded by count and bytes. */
  async readSince(since = 0, options: ReadSinceOptions = {}): Promise<ReadSinceResult> {
    const limit = options.limit ?? TRANSCRIPT_DEFAULTS.readLimit;
    const maxBytes = options.maxBytes ?? TRANSCRIPT_DEFAULTS.readMaxBytes;
    if (!Number.isSafeInteger(since) || since < 0) throw new StateError("invalid_argument", "since must be a non-negative integer");
    if (!Number.isSafeInteger(limit) || limit < 1) throw new StateError("invalid_argument", "limit must be a positive integer");
    if (!this.fdOpen || this.closing) throw new StateError("transcript_closed", `transcript ${this.path} is closed`);
    if (since >= this.written) return { records: [], more: false };
    this.reads++;
    try {
      const scan = { maxLine: this.maxRecordBytes, chunkBytes: this.chunkBytes, onRead: (n: number) => (this.stats.bytesRead += n) };
      return await readPage<TranscriptRecord>(this.path, this.reader, this.index.startOffset(since), this.size, scan, { since, limit, maxBytes });
    } finally {
      if (--this.reads === 0) this.readsDrained?.();
    }
  }

  /** Refuses further appends, syncs what was written, waits for reads in progress, closes the file. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    try {
      if (!this.failure) await this.sync();
    } finally {
      if (this.reads > 0) await new Promise<void>((done) => (this.readsDrained = done));
      this.fdOpen = false;
      closeSync(this.fd);
    }
  }

  private async flush(): Promise<void> {
    if (this.failure) throw this.failure;
    this.stats.syncs++;
    try {
      await this.datasync(this.fd);
    } catch (e) {
      throw this.latch(`syncing the transcript failed: ${errorMessage(e)}`, e);
    }
  }

  /** Scans the file (index, last seq), truncates a torn tail, then syncs once. */
  private async recover(fileSize: number): Promise<void> {
    const scan = { maxLine: this.maxRecordBytes, chunkBytes: this.chunkBytes, onRead: (n: number) => (this.stats.bytesRead += n) };
    const { goodEnd, lastSeq } = await recoverScan(this.path, this.reader, fileSize, scan, (seq, offset) => this.index.add(seq, offset));
    this.size = goodEnd;
    this.written = lastSeq;
    if (goodEnd < fileSize) {
      ftruncateSync(this.fd, goodEnd);
      this.repairedBytes = fileSize - goodEnd;
    }
    this.stats.syncs++;
    await this.datasync(this.fd);
    this.commits.durable = lastSeq;
  }

  /** The first failure wins; every later append and sync reports it. */
  private latch(message: string, cause: unknown): StateError {
    this.failure ??= new StateError("transcript_failed", `transcript ${this.path}: ${message}`, { cause });
    return this.failure;
  }
}
