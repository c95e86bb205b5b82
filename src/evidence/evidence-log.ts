/**
 * An append-only NDJSON evidence writer with exact accounting (wrap.md §5).
 *
 * Each record is one write of the whole line. When the kernel takes only part of it (a short
 * write: the device filled mid-line), the rest is written at once, which either completes the line
 * or returns the error that stopped it — so the report names the real cause (ENOSPC, EDQUOT, EFBIG)
 * instead of inventing one. A failed write poisons the writer: that emission and every later one
 * count as dropped, nothing more is written, and the prefix digest covers exactly the complete
 * lines that were written (a partial tail is excluded).
 */
import { closeSync, constants, fdatasyncSync, openSync, writeSync } from "node:fs";
import { RunningSha256 } from "../shared/digest.ts";
import { errnoCode } from "../shared/errors.ts";
import { writeErrorText } from "./write-error.ts";

export interface EvidenceLogOptions {
  /** fdatasync after every line (default: once, at close). */
  syncEachLine?: boolean;
  /**
   * Test-only fault seam: behave as if the device fills after this many bytes (a short write,
   * then ENOSPC). Only honoured outside release builds; see src/shared/fault-seam.ts.
   */
  failAfterBytes?: number;
}

export class EvidenceLog {
  written = 0;
  dropped = 0;
  bytesWritten = 0;
  /** Why the writer stopped, once it has: one clean line with the errno and the path (write-error.ts). */
  failure: string | null = null;
  private readonly prefix = new RunningSha256();
  /** Bytes on the device, partial lines included (the fault seam's fill level). */
  private diskBytes = 0;
  private fd: number | null;

  private constructor(
    readonly path: string,
    fd: number,
    private readonly options: EvidenceLogOptions,
  ) {
    this.fd = fd;
  }

  /** Creates a new file (O_EXCL, 0600). Throws the system error (EEXIST, ENOENT, …). */
  static createNew(path: string, options: EvidenceLogOptions = {}): EvidenceLog {
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    return new EvidenceLog(path, fd, options);
  }

  /** Opens a historical log for appending (created 0600 if missing). */
  static openAppend(path: string, options: EvidenceLogOptions = {}): EvidenceLog {
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
    return new EvidenceLog(path, fd, options);
  }

  get poisoned(): boolean {
    return this.failure !== null;
  }

  /** Lowercase hex SHA-256 of exactly the complete lines written so far. */
  prefixSha256(): string {
    return this.prefix.hex();
  }

  /** Appends one line (the newline is added). False when the record was not written. */
  append(record: string): boolean {
    if (this.failure !== null || this.fd === null) {
      this.dropped++;
      return false;
    }
    const line = `${record}\n`;
    const length = Buffer.byteLength(line);
    try {
      this.writeLine(line, length);
      if (this.options.syncEachLine) fdatasyncSync(this.fd);
    } catch (e) {
      this.failure = writeErrorText(e, this.path);
      this.dropped++;
      return false;
    }
    this.written++;
    this.bytesWritten += length;
    this.prefix.update(line);
    return true;
  }

  /**
   * Appends lines in one write(2) (wrap: the decisions of one client read, written before any call
   * of that read is forwarded), with the accounting of appending them one by one: returns how many
   * were written whole, in order; the rest are dropped, and a failure poisons the writer as in
   * `append` (the lines before the one it tore stay written and in the prefix digest). With
   * syncEachLine, one fdatasync covers the batch; if it fails, the whole batch counts as dropped
   * (as a line whose sync failed does in `append`).
   */
  appendBatch(records: readonly string[]): number {
    if (records.length <= 1) return records.length === 1 && this.append(records[0]!) ? 1 : 0;
    if (this.failure !== null || this.fd === null) {
      this.dropped += records.length;
      return 0;
    }
    const text = `${records.join("\n")}\n`;
    const bytes = Buffer.from(text);
    let done = 0;
    try {
      while (done < bytes.length) {
        const n = this.write(bytes, done);
        if (n === 0) throw Object.assign(new Error(`i/o error, write (${done} of ${bytes.length} bytes written)`), { code: "EIO", syscall: "write" });
        done += n;
      }
    } catch (e) {
      this.failure = writeErrorText(e, this.path);
      const whole = wholeLines(bytes, done);
      this.written += whole.lines;
      this.bytesWritten += whole.bytes;
      if (whole.bytes > 0) this.prefix.update(bytes.subarray(0, whole.bytes));
      this.dropped += records.length - whole.lines;
      return whole.lines;
    }
    if (this.options.syncEachLine) {
      try {
        fdatasyncSync(this.fd);
      } catch (e) {
        this.failure = writeErrorText(e, this.path);
        this.dropped += records.length;
        return 0;
      }
    }
    this.written += records.length;
    this.bytesWritten += bytes.length;
    this.prefix.update(bytes);
    return records.length;
  }

  /**
   * fdatasync what was written so far (before a checkpoint names it). A failure poisons the writer
   * like a failed write: what it covers may not be durable. False when the writer is poisoned.
   */
  sync(): boolean {
    if (this.fd === null || this.failure !== null) return this.failure === null;
    try {
      fdatasyncSync(this.fd);
    } catch (e) {
      const code = errnoCode(e);
      if (code === "EINVAL" || code === "EROFS") return true;
      this.failure = `sync failed: ${writeErrorText(e, this.path)}`;
      return false;
    }
    return true;
  }

  /** fdatasync and close. A sync failure poisons the writer (its lines may not be durable). */
  close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      fdatasyncSync(fd);
    } catch (e) {
      // /dev/full and pipes cannot be synced (EINVAL); only a real I/O failure counts.
      const code = errnoCode(e);
      if (code !== "EINVAL" && code !== "EROFS" && this.failure === null) this.failure = `sync failed: ${writeErrorText(e, this.path)}`;
    }
    try {
      closeSync(fd);
    } catch {
      // already reported any write failure; close errors add nothing actionable
    }
  }

  /** The whole line, or a throw with the system error that stopped it (the bytes before it stay on disk). */
  private writeLine(line: string, length: number): void {
    // One write(2) of the whole line; a string is encoded straight into it, with no Buffer copy.
    let done = this.write(line, 0);
    if (done === length) return;
    const bytes = Buffer.from(line);
    while (done < length) {
      const n = this.write(bytes, done);
      // A write that takes nothing and reports nothing would loop forever: that is an I/O error.
      if (n === 0) throw Object.assign(new Error(`i/o error, write (${done} of ${length} bytes written)`), { code: "EIO", syscall: "write" });
      done += n;
    }
  }

  /** One write(2) from `offset` (a string is only ever written whole, from 0); returns the bytes taken. */
  private write(data: string | Buffer, offset: number): number {
    const fd = this.fd!;
    const limit = this.options.failAfterBytes;
    if (limit !== undefined) {
      // The fault seam behaves like a device that fills at `limit`: a short write, then ENOSPC.
      const bytes = typeof data === "string" ? Buffer.from(data) : data;
      const room = limit - this.diskBytes;
      if (room <= 0) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" });
      const n = writeSync(fd, bytes, offset, Math.min(room, bytes.length - offset));
      this.diskBytes += n;
      return n;
    }
    return typeof data === "string" ? writeSync(fd, data) : writeSync(fd, data, offset);
  }
}

/** The complete lines (each ended by its newline) among the first `done` bytes: how many, and their bytes. */
function wholeLines(bytes: Uint8Array, done: number): { lines: number; bytes: number } {
  let lines = 0;
  let end = 0;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < done; i = bytes.indexOf(0x0a, i + 1)) {
    lines++;
    end = i + 1;
  }
  return { lines, bytes: end };
}
