/**
 * Reading capture files without trusting them: regular files only (lstat; a symlink is refused,
 * and the open itself does not follow links), with a hard byte limit checked before and while
 * reading — never an unbounded readFile.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from "node:fs";

type Problem = { ok: false; problem: "missing" | "not_regular" | "too_large" | "unreadable"; message: string };

export type BoundedRead = { ok: true; bytes: Buffer } | Problem;
export type BoundedHash = { ok: true; bytes: number; sha256: string } | Problem;

/** Whether anything is at `path`, the path itself (lstat: a dangling symlink exists too). */
export function entryExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads the whole file into memory, refusing it if it is over maxBytes. */
export function readBounded(path: string, maxBytes: number): BoundedRead {
  let buf = Buffer.alloc(0);
  let n = 0;
  const r = withRegularFile(path, maxBytes, (fd, size) => {
    // Sized from lstat; one byte more tells a file that grew since then apart from one at the limit.
    buf = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) return null;
      n += got;
      if (n > maxBytes) return tooLarge(maxBytes);
      if (n === buf.length) return { ok: false, problem: "unreadable", message: "changed while being read" };
    }
  });
  return r ?? { ok: true, bytes: buf.subarray(0, n) };
}

/** Size and SHA-256 of a file streamed in 1 MiB pieces (never held whole), refusing it over maxBytes. */
export function hashBounded(path: string, maxBytes: number): BoundedHash {
  const hasher = new Bun.CryptoHasher("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  let total = 0;
  const r = withRegularFile(path, maxBytes, (fd) => {
    for (;;) {
      const got = readSync(fd, buf, 0, buf.length, null);
      if (got === 0) return null;
      total += got;
      if (total > maxBytes) return tooLarge(maxBytes);
      hasher.update(buf.subarray(0, got));
    }
  });
  return r ?? { ok: true, bytes: total, sha256: hasher.digest("hex") };
}

/** Opens path as a regular, non-linked file within maxBytes and runs read(fd); returns a problem or read's result. */
function withRegularFile(path: string, maxBytes: number, read: (fd: number, size: number) => Problem | null): Problem | null {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch {
    return { ok: false, problem: "missing", message: "missing" };
  }
  if (st.isSymbolicLink()) return { ok: false, problem: "not_regular", message: "is a symbolic link" };
  if (!st.isFile()) return { ok: false, problem: "not_regular", message: "is not a regular file" };
  if (st.size > maxBytes) return { ok: false, problem: "too_large", message: `${st.size} bytes, over the ${maxBytes}-byte bound` };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    return { ok: false, problem: "unreadable", message: `cannot open: ${String(e)}` };
  }
  try {
    if (!fstatSync(fd).isFile()) return { ok: false, problem: "not_regular", message: "is not a regular file" };
    return read(fd, st.size);
  } catch (e) {
    return { ok: false, problem: "unreadable", message: `cannot read: ${String(e)}` };
  } finally {
    closeSync(fd);
  }
}

function tooLarge(maxBytes: number): Problem {
  return { ok: false, problem: "too_large", message: `over the ${maxBytes}-byte bound` };
}
