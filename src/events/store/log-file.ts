/**
 * Writing the pending log: appends (only the new records, then fdatasync) and compaction (the
 * whole live log rewritten atomically). The store runs one write at a time; this class assumes it.
 *
 * - Appends are positional, at the size we know is on disk, and the size only advances once the
 *   data is synced. A failed write or sync is therefore retried by writing the same bytes at the
 *   same place again, which overwrites any partial line and re-dirties the pages (a second fsync
 *   after a failed one proves nothing unless the data was written again).
 * - The file is opened with O_NOFOLLOW (a symlink planted at the log path is refused, never
 *   written through) and created 0600; on its first creation the directory is synced too.
 * - A compaction renames a new file over the log, so the old handle is dropped and the path is
 *   reopened on the next append. That is also what happens when a compaction fails at an unknown
 *   point: whichever file is at the path gets the retried records, and replaying records twice is
 *   harmless (an add is keyed by seq, a done of a missing seq is ignored).
 */
import { constants, fdatasync, writeSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { syncDir, writeFileAtomic } from "../../shared/durable/atomic-file.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import { EventsStoreError } from "./errors.ts";

export type FaultOp = "log_append" | "log_sync" | "compact" | "snapshot" | "ledger_append" | "ledger_sync";
export type Fault = (op: FaultOp) => void | Promise<void>;

export interface WriteCounters {
  logAppends: number;
  logSyncs: number;
  snapshots: number;
  compactions: number;
  /** Bytes written to the log, appends and rewrites together. */
  logBytes: number;
}

export class LogFile {
  private needDirSync = false;

  constructor(
    readonly path: string,
    private readonly dir: string,
    private handle: FileHandle | null,
    /** Bytes on disk that are known to be durable. */
    public size: number,
    private readonly counters: WriteCounters,
    private readonly fault: Fault | undefined,
    /** The fault seam's names of this file's steps (the event ledger reuses this class: ledger.ts). */
    private readonly ops: { append: FaultOp; sync: FaultOp } = { append: "log_append", sync: "log_sync" },
  ) {}

  /** Appends `text` (whole records) and syncs it. On failure the known size is unchanged. */
  async append(text: string): Promise<void> {
    const buf = Buffer.from(text);
    await this.fault?.(this.ops.append);
    const handle = await this.ensureOpen();
    const at = this.size;
    try {
      // The write goes to the page cache in place (one system call, where FileHandle.write is a
      // trip to the thread pool per page of events); only the fdatasync waits off the event loop.
      let off = 0;
      while (off < buf.length) {
        const n = writeSync(handle.fd, buf, off, buf.length - off, at + off);
        if (!(n > 0)) throw new Error("the write made no progress");
        off += n;
      }
      this.counters.logAppends++;
      this.counters.logBytes += buf.length;
      await this.fault?.(this.ops.sync);
      this.counters.logSyncs++;
      await new Promise<void>((done, fail) => fdatasync(handle.fd, (e) => (e ? fail(e) : done())));
      if (this.needDirSync) {
        await syncDir(this.dir);
        this.needDirSync = false;
      }
    } catch (e) {
      // Keep the file ending on a record boundary; if this fails too, the retry overwrites in place.
      await handle.truncate(at).catch(() => {});
      throw e;
    }
    this.size = at + buf.length;
  }

  /** Replaces the log with `text` atomically (temp 0600, fsync, rename, fsync dir). */
  async rewrite(text: string): Promise<void> {
    const buf = Buffer.from(text);
    const old = this.handle;
    this.handle = null;
    try {
      await this.fault?.("compact");
      await writeFileAtomic(this.path, buf);
    } finally {
      // Whatever happened, the path is reopened next time: the old inode may have been replaced.
      await old?.close().catch(() => {});
    }
    this.counters.compactions++;
    this.counters.logBytes += buf.length;
    this.size = buf.length;
    this.needDirSync = false;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close();
  }

  private async ensureOpen(): Promise<FileHandle> {
    if (this.handle !== null) return this.handle;
    let handle: FileHandle;
    let created = true;
    try {
      handle = await open(this.path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE);
    } catch (e) {
      if (errnoCode(e) !== "EEXIST") throw this.refused(e);
      created = false;
      try {
        handle = await open(this.path, constants.O_RDWR | constants.O_NOFOLLOW);
      } catch (e2) {
        throw this.refused(e2);
      }
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new EventsStoreError("file_refused", `events log ${this.path} refused: it is not a regular file`);
      if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
      // A reopened file is the truth about what is on disk (after a rewrite that may or may not have landed).
      this.size = st.size;
    } catch (e) {
      await handle.close().catch(() => {});
      throw e;
    }
    this.handle = handle;
    this.needDirSync = created;
    return handle;
  }

  private refused(e: unknown): EventsStoreError {
    const why = errnoCode(e) === "ELOOP" ? "it is a symbolic link" : errorMessage(e);
    return new EventsStoreError("file_refused", `events log ${this.path} refused: ${why}`, { cause: e });
  }
}
