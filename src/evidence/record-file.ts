/**
 * Single-record evidence files (session context, session stop, capture manifest): created
 * exclusively (a failed write can never truncate earlier evidence), mode 0600, one JSON document
 * plus a newline, then fsync of the file and of its directory. No atomic-publication claim beyond that.
 *
 * A write that fails after the create (a full device) removes the file it created — only that file:
 * the one whose inode is the descriptor's — so a failed attempt leaves nothing behind and a later
 * attempt is a fresh exclusive create, never EEXIST on our own leftover (issue 11 item 11).
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { syncDirSync } from "../shared/durable/atomic-file.ts";
import { writeErrorText } from "./write-error.ts";

/** A record that could not be written; the message names the errno and the path once (write-error.ts). */
export class RecordWriteError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "RecordWriteError";
  }
}

/** Writes the record to a new file, or throws a RecordWriteError. */
export function writeRecordFile(path: string, record: unknown): void {
  const bytes = Buffer.from(`${JSON.stringify(record)}\n`);
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (e) {
    throw new RecordWriteError(writeErrorText(e, path), { cause: e });
  }
  const created = fstatSync(fd);
  try {
    let off = 0;
    while (off < bytes.length) {
      const n = writeSync(fd, bytes, off);
      if (n === 0) throw Object.assign(new Error("i/o error, write"), { code: "EIO", syscall: "write" });
      off += n;
    }
    fsyncSync(fd);
  } catch (e) {
    closeQuietly(fd);
    const removal = removeCreated(path, created);
    const text = writeErrorText(e, path);
    throw new RecordWriteError(removal === null ? text : `${text}; the incomplete file stays: ${removal}`, { cause: e });
  }
  closeSync(fd);
  syncDirSync(dirname(path));
}

/** Removes `path` if it is still the file we created; null when done (or already gone), else why not. */
function removeCreated(path: string, created: { dev: number; ino: number }): string | null {
  try {
    const now = lstatSync(path);
    // Someone replaced it meanwhile: that file is not ours to remove.
    if (now.dev !== created.dev || now.ino !== created.ino) return "it was replaced by another file";
    unlinkSync(path);
    return null;
  } catch (e) {
    if ((e as { code?: unknown }).code === "ENOENT") return null;
    return writeErrorText(e, path);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // the write already failed; that error is the one reported
  }
}

