/**
 * Single-record evidence files (session context, session stop, capture manifest): created
 * exclusively (a failed write can never truncate earlier evidence), mode 0600, one JSON document
 * plus a newline, then fsync of the file and of its directory. No atomic-publication claim beyond that.
 */
import { closeSync, constants, fsyncSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export function writeRecordFile(path: string, record: unknown): void {
  const bytes = Buffer.from(`${JSON.stringify(record)}\n`);
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  syncDirectory(dirname(path));
}

/** fsync a directory so a newly created entry survives a crash; best effort where unsupported. */
export function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on directories; the file itself was synced
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
