/**
 * An append-only NDJSON evidence writer with exact accounting (wrap.md §5).
 *
 * Each record is one write of the whole line. A failed or short write poisons the writer: that
 * emission and every later one count as dropped, nothing more is written, and the prefix digest
 * covers exactly the complete lines that were written (a partial tail is excluded).
 */
import { closeSync, constants, fdatasyncSync, openSync, writeSync } from "node:fs";
import { RunningSha256 } from "../shared/digest.ts";
import { errnoCode, errorMessage } from "../shared/errors.ts";

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
  /** Why the writer stopped, once it has. */
  failure: string | null = null;
  private readonly prefix = new RunningSha256();
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
      const n = this.write(line, length);
      if (n !== length) throw Object.assign(new Error(`short write (${n} of ${length} bytes)`), { code: "EIO" });
      if (this.options.syncEachLine) fdatasyncSync(this.fd);
    } catch (e) {
      this.failure = `${errnoCode(e) ?? "error"}: ${errorMessage(e)}`;
      this.dropped++;
      return false;
    }
    this.written++;
    this.bytesWritten += length;
    this.prefix.update(line);
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
      if (code !== "EINVAL" && code !== "EROFS" && this.failure === null) this.failure = `sync failed: ${errorMessage(e)}`;
    }
    try {
      closeSync(fd);
    } catch {
      // already reported any write failure; close errors add nothing actionable
    }
  }

  private write(line: string, length: number): number {
    const fd = this.fd!;
    const limit = this.options.failAfterBytes;
    if (limit !== undefined && this.bytesWritten + length > limit) {
      const room = Math.max(0, limit - this.bytesWritten);
      if (room > 0) writeSync(fd, Buffer.from(line).subarray(0, room));
      throw Object.assign(new Error("no space left on device (test fault seam)"), { code: "ENOSPC" });
    }
    // One write(2) of the whole line; a string is encoded straight into it, with no Buffer copy.
    return writeSync(fd, line);
  }
}
