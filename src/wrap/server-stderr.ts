/**
 * In --capture-dir mode the server's stderr is kept as evidence (server-stderr.log, 0600) and still
 * shown on vigil's stderr. Writes are synchronous so the file is complete when the pump ends.
 */
import { closeSync, constants, fsyncSync, openSync, writeSync } from "node:fs";
import { writeErrorText } from "../evidence/write-error.ts";
import { logLine } from "../shared/log.ts";

export async function teeServerStderr(stream: ReadableStream<Uint8Array>, path: string): Promise<void> {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  let fileOk = true;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (fileOk) {
        try {
          writeAll(fd, value);
        } catch (e) {
          fileOk = false;
          logLine(`cannot keep the server's stderr: ${writeErrorText(e, path)}`);
        }
      }
      try {
        writeAll(2, value);
      } catch {
        // our stderr is gone; the file copy is what matters
      }
    }
  } finally {
    try {
      fsyncSync(fd);
    } catch {
      // best effort: the manifest hashes what is on disk
    }
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off);
}
