/**
 * A session's transcript (serve.md §3, §4; issue 12 item A): append-only segments (0600, one record
 * per line; transcript-segments.ts names them). A record is the frame as sent to clients plus its
 * `seq` (per session, strictly increasing, first 1) and `time` (ISO 8601); they are written first,
 * then `type`: `{"seq":N,"time":"…","type":"…",…}`, so a scan finds a record's seq and kind without
 * decoding the whole line.
 *
 * - open reads O(recent): only the live (last) segment is scanned. A torn tail from a crash
 *   (trailing bytes with no newline, or a last line that is not a whole record) is truncated and
 *   synced before anything is appended; damage anywhere else is `transcript_corrupt` (not
 *   repaired). The next seq is the last seq + 1 (or the live segment's first seq while it is empty).
 * - append: assigns the seq and writes the line at once (a reattaching client can replay it), no sync.
 *   A record that would take the live segment past `segmentBytes` goes to a new segment: the
 *   finished one is synced first (blocking, once per segment), so a crash can never keep a later
 *   segment's records while losing an earlier segment's tail.
 * - After a rotation, retention deletes the oldest segments beyond `retainBytes` (never the live
 *   one), and the compaction pointer (compaction-pointer.ts) is written for the finished segments.
 * - sync: fdatasync, with group commit (callers that arrive while one is in flight share the next
 *   one); `durableSeq` is the highest seq covered by a completed sync. A run succeeds only after it.
 * - A failed write, sync or rotation latches the transcript failed: every later append and sync
 *   throws `transcript_failed`. Records are never dropped silently.
 * - readSince: bounded by count and bytes (transcript-read.ts); before the oldest stored seq it is
 *   `transcript_pruned` naming that seq.
 */
import { closeSync, constants, fchmodSync, fdatasync, fdatasyncSync, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { MAX_FRAME_BYTES } from "../../shared/frame-cap.ts";
import { GroupCommit } from "../../shared/durable/group-commit.ts";
import { fdReader } from "../../shared/durable/line-scan.ts";
import { removeStaleTemps } from "../../shared/durable/temp-files.ts";
import { COMPACTION_POINTER_FILE, CompactionTracker, writeCompactionPointer } from "./compaction-pointer.ts";
import { FILE_MODE } from "./paths.ts";
import { isTranscriptPruned } from "./transcript-pruned.ts";
import { type AppendOutcome, type PreparedRecord, linesBuffer, prepareRecord } from "./record-line.ts";
import { type Segment, readAcross } from "./transcript-read.ts";
import { type RecordScan, SparseIndex, recoverScan } from "./transcript-scan.ts";
import { syncDirSync } from "../../shared/durable/atomic-file.ts";
import { listSegments, pruneSegments, segmentName, segmentsToPrune } from "./transcript-segments.ts";
import { type Frame, type ReadSinceOptions, type ReadSinceResult, TRANSCRIPT_DEFAULTS, type TranscriptOptions, type TranscriptRecord } from "./transcript-types.ts";

export * from "./transcript-types.ts";

const defaultDatasync = (fd: number) => new Promise<void>((done, fail) => fdatasync(fd, (e) => (e ? fail(e) : done())));

export class Transcript {
  /** Bytes dropped from a torn tail when the transcript was opened (0 when it was clean). */
  repairedBytes = 0;
  /** Accounting for tests and diagnostics: bytes read by readSince and open, fdatasyncs issued, segments deleted. */
  readonly stats = { bytesRead: 0, syncs: 0, prunedSegments: 0 };
  /** Record lines read from disk since open (the open scan, reads, compaction lookups). */
  recordsRead = 0;
  private written = 0;
  private index: SparseIndex;
  private readonly commits: GroupCommit;
  private failure: StateError | null = null;
  private closing = false;
  private fdOpen = true;
  private reads = 0;
  private readsDrained: (() => void) | null = null;
  private flushing = false;
  private retired: number[] = [];
  private housekeeping: Promise<void> = Promise.resolve();
  private readonly compactions: CompactionTracker;
  private readonly scan: RecordScan;
  private readonly o: Required<Pick<TranscriptOptions, "maxRecordBytes" | "segmentBytes" | "retainBytes" | "compactionScanBytes" | "indexEvery">>;
  private readonly datasync: (fd: number) => Promise<void>;
  private readonly write: NonNullable<TranscriptOptions["write"]>;
  private readonly now: () => Date;
  private readonly log: (line: string) => void;

  private constructor(readonly dir: string, private fd: number, private readonly segments: Segment[], o: TranscriptOptions) {
    const d = TRANSCRIPT_DEFAULTS;
    this.o = {
      maxRecordBytes: o.maxRecordBytes ?? d.maxRecordBytes,
      segmentBytes: o.segmentBytes ?? d.segmentBytes,
      retainBytes: o.retainBytes ?? d.retainBytes,
      compactionScanBytes: o.compactionScanBytes ?? d.compactionScanBytes,
      indexEvery: Math.max(1, o.indexEvery ?? d.indexEvery),
    };
    this.scan = {
      maxLine: this.o.maxRecordBytes,
      chunkBytes: o.readChunkBytes ?? d.readChunkBytes,
      onRead: (n) => (this.stats.bytesRead += n),
      onLine: () => this.recordsRead++,
    };
    this.datasync = o.fdatasync ?? defaultDatasync;
    this.write = o.write ?? ((fd, buf, off, len, pos) => writeSync(fd, buf, off, len, pos));
    this.now = o.now ?? (() => new Date());
    this.log = o.log ?? logLine;
    this.index = this.live.index ?? new SparseIndex(this.o.indexEvery);
    this.compactions = new CompactionTracker(dir, this.live.first, this.o.compactionScanBytes, this.scan);
    this.commits = new GroupCommit(() => this.flush(), () => this.written);
  }

  /** Opens (creating, 0600) the transcript in `dir`: scans its live segment only, repairs a torn tail, syncs. */
  static async open(dir: string, options: TranscriptOptions = {}): Promise<Transcript> {
    const listed = listSegments(dir);
    const live = listed.at(-1) ?? { first: 1, name: segmentName(1), size: 0 };
    const path = join(dir, live.name);
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
      const segments: Segment[] = listed.slice(0, -1).map((s) => ({ ...s, index: null }));
      segments.push({ ...live, size: st.size, index: new SparseIndex(Math.max(1, options.indexEvery ?? TRANSCRIPT_DEFAULTS.indexEvery)) });
      const t = new Transcript(dir, fd, segments, options);
      await t.recover(st.size);
      await t.settleOlder();
      return t;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** The live segment's path. */
  get path(): string {
    return join(this.dir, this.live.name);
  }

  /** Highest seq written (0 when empty). */
  get lastSeq(): number {
    return this.written;
  }

  /** The oldest seq still stored (retention deleted those before it); 1 until anything was pruned. */
  get oldestSeq(): number {
    return this.segments[0]?.first ?? 1;
  }

  /** How many segment files the transcript has now. */
  get segmentCount(): number {
    return this.segments.length;
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
    const refused = this.refusal();
    if (refused !== null) throw refused;
    const r = prepareRecord(this.written + 1, this.now().toISOString(), frame, this.o.maxRecordBytes);
    if (this.live.size > 0 && this.live.size + r.bytes > this.o.segmentBytes) this.rotate(r.seq);
    this.writeRecords([r]);
    return r;
  }

  /**
   * Appends frames in order, as appendFrame would one by one, but with one write(2) per segment
   * they land in (the `mcp_event` frames of one poll page) and one `time` for all. Per frame: its
   * record, or why it was not stored — over the cap or not serializable refuses that frame alone;
   * a failed write or rotation latches the transcript and refuses it and every later one.
   */
  appendFrames(frames: readonly Frame[]): AppendOutcome[] {
    const out: AppendOutcome[] = [];
    const time = this.now().toISOString();
    let chunk: PreparedRecord[] = [];
    let slots: number[] = []; // where the chunk's records are in `out`
    let chunkBytes = 0;
    const write = () => {
      try {
        if (chunk.length > 0) this.writeRecords(chunk);
      } catch (e) {
        for (const i of slots) out[i] = { error: e };
      }
      [chunk, slots, chunkBytes] = [[], [], 0];
    };
    for (const frame of frames) {
      try {
        const r = prepareRecord(this.written + chunk.length + 1, time, frame, this.o.maxRecordBytes);
        const size = this.live.size + chunkBytes;
        if (size > 0 && size + r.bytes > this.o.segmentBytes) {
          write();
          if (this.refusal() === null) this.rotate(r.seq);
        }
        const refused = this.refusal();
        if (refused !== null) throw refused;
        chunk.push(r);
        slots.push(out.length);
        chunkBytes += r.bytes;
        out.push(r);
      } catch (e) {
        out.push({ error: e });
      }
    }
    write();
    return out;
  }

  /** Makes every record appended so far durable. Concurrent callers share fdatasyncs (group commit). */
  sync(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (!this.fdOpen) return Promise.reject(new StateError("transcript_closed", `transcript ${this.path} is closed`));
    return this.commits.request();
  }

  /** Records with seq > since, oldest first, bounded by count and bytes; transcript_pruned before the oldest stored. */
  async readSince(since = 0, options: ReadSinceOptions = {}): Promise<ReadSinceResult> {
    const limit = options.limit ?? TRANSCRIPT_DEFAULTS.readLimit;
    const maxBytes = options.maxBytes ?? TRANSCRIPT_DEFAULTS.readMaxBytes;
    if (!Number.isSafeInteger(since) || since < 0) throw new StateError("invalid_argument", "since must be a non-negative integer");
    if (!Number.isSafeInteger(limit) || limit < 1) throw new StateError("invalid_argument", "limit must be a positive integer");
    if (!this.fdOpen || this.closing) throw new StateError("transcript_closed", `transcript ${this.path} is closed`);
    if (since >= this.written) return { records: [], more: false };
    this.reads++;
    try {
      return await readAcross<TranscriptRecord>(this.dir, this.segments.slice(), () => this.oldestSeq, { since, limit, maxBytes }, this.scan);
    } finally {
      if (--this.reads === 0) this.readsDrained?.();
    }
  }

  /** The last `compaction` record still stored, or null (none, or retention deleted it). */
  async lastCompaction(): Promise<TranscriptRecord | null> {
    const seq = await this.compactions.last(this.segments);
    if (seq === null || seq < this.oldestSeq) return null;
    try {
      const r = (await this.readSince(seq - 1, { limit: 1 })).records[0];
      return r !== undefined && r.seq === seq && r.type === "compaction" ? r : null;
    } catch (e) {
      if (isTranscriptPruned(e)) return null;
      throw e;
    }
  }

  /** Settles when the housekeeping of the rotations so far (compaction pointer, retention) is done. */
  housekept(): Promise<void> {
    return this.housekeeping;
  }

  /** Refuses further appends, syncs what was written, waits for reads and housekeeping, closes the files. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    try {
      if (!this.failure) await this.sync();
    } finally {
      await this.housekeeping;
      if (this.reads > 0) await new Promise<void>((done) => (this.readsDrained = done));
      this.fdOpen = false;
      this.closeRetired();
      closeSync(this.fd);
    }
  }

  /** Why nothing can be appended now (failed, or closing), else null. */
  private refusal(): StateError | null {
    if (this.failure) return this.failure;
    return this.closing ? new StateError("transcript_closed", `transcript ${this.path} is closed`) : null;
  }

  /** Writes records bound for the live segment with one positional write; a failure latches and drops the partial lines. */
  private writeRecords(records: readonly PreparedRecord[]): void {
    const line = linesBuffer(records);
    const at = this.live.size;
    try {
      let off = 0;
      while (off < line.length) {
        const n = this.write(this.fd, line, off, line.length - off, at + off);
        if (!(n > 0)) throw new Error("the write made no progress");
        off += n;
      }
    } catch (e) {
      const failure = this.latch(`writing record ${records[0]!.seq} failed: ${errorMessage(e)}`, e);
      try {
        ftruncateSync(this.fd, at); // drop a partial line, so a reopen sees clean records
      } catch {
        // the open-time repair will do it
      }
      throw failure;
    }
    let offset = at;
    for (const r of records) {
      this.index.add(r.seq, offset);
      offset += r.bytes;
      this.written = r.seq;
      if (r.type === "compaction") this.compactions.seen(r.seq);
    }
    this.live.size = at + line.length;
  }

  private get live(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private async flush(): Promise<void> {
    if (this.failure) throw this.failure;
    this.stats.syncs++;
    this.flushing = true;
    try {
      await this.datasync(this.fd);
    } catch (e) {
      throw this.latch(`syncing the transcript failed: ${errorMessage(e)}`, e);
    } finally {
      this.flushing = false;
      this.closeRetired();
    }
  }

  /**
   * Starts segment `first`: the finished segment is made durable, then the new file is created and
   * its directory entry synced, all before the first record goes to it. The old descriptor is
   * closed once no fdatasync is in flight on it.
   */
  private rotate(first: number): void {
    let fd: number;
    try {
      fdatasyncSync(this.fd);
      this.stats.syncs++;
      fd = openSync(join(this.dir, segmentName(first)), constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE);
      syncDirSync(this.dir);
    } catch (e) {
      throw this.latch(`starting segment ${segmentName(first)} failed: ${errorMessage(e)}`, e);
    }
    if (this.flushing) this.retired.push(this.fd);
    else closeSync(this.fd);
    this.fd = fd;
    this.index = new SparseIndex(this.o.indexEvery);
    this.segments.push({ first, name: segmentName(first), size: 0, index: this.index });
    if (this.commits.durable < first - 1) this.commits.durable = first - 1;
    const below = this.compactions.recent;
    this.housekeeping = this.housekeeping.then(() => this.afterRotation(first, below));
  }

  /** Writes the compaction pointer for the segments before `first`, then applies retention. Never rejects. */
  private async afterRotation(first: number, below: number | null): Promise<void> {
    try {
      const seq = below ?? (await this.compactions.before(this.segments));
      await writeCompactionPointer(this.dir, { before: first, seq });
    } catch (e) {
      this.log(`serve: transcript ${this.dir}: the compaction pointer was not written (a reopen scans for it): ${errorMessage(e)}`);
    }
    this.prune();
  }

  /** Deletes the oldest segments beyond the retain bound; the live one never. */
  private prune(): void {
    this.stats.prunedSegments += pruneSegments(this.dir, this.segments, this.o, this.log);
  }

  private closeRetired(): void {
    for (const fd of this.retired.splice(0)) closeSync(fd);
  }

  /** Scans the live segment (index, last seq, compaction), truncates a torn tail, then syncs once. */
  private async recover(fileSize: number): Promise<void> {
    const live = this.live;
    const onRecord = (seq: number, offset: number, compaction: boolean) => {
      this.index.add(seq, offset);
      if (compaction) this.compactions.seen(seq);
    };
    const { goodEnd, lastSeq } = await recoverScan(this.path, fdReader(this.fd), fileSize, live.first - 1, this.scan, onRecord);
    live.size = goodEnd;
    this.written = lastSeq;
    if (goodEnd < fileSize) {
      ftruncateSync(this.fd, goodEnd);
      this.repairedBytes = fileSize - goodEnd;
    }
    this.stats.syncs++;
    await this.datasync(this.fd);
    this.commits.durable = lastSeq;
  }

  /** After the live scan: what the pointer says of the older segments, left-over temps, retention. */
  private async settleOlder(): Promise<void> {
    this.compactions.settle(this.segments.length > 1);
    await removeStaleTemps(this.dir, [COMPACTION_POINTER_FILE]);
    if (segmentsToPrune(this.segments.map((s) => s.size), this.o.retainBytes, this.o.segmentBytes) > 0) {
      syncDirSync(this.dir);
      this.prune();
    }
  }

  /** The first failure wins; every later append and sync reports it. */
  private latch(message: string, cause: unknown): StateError {
    this.failure ??= new StateError("transcript_failed", `transcript ${this.path}: ${message}`, { cause });
    return this.failure;
  }
}
