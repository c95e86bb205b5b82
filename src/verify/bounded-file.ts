/**
 * Reading capture files without trusting them: regular files only (lstat; a symlink is refused,
 * and the open itself does not follow links), with a hard byte limit checked before and while
 * reading — never an unbounded readFile.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from "node:fs";

export type BoundedRead =
  | { ok: true; bytes: Buffer }
  | { ok: false; problem: "missing" | "not_regular" | "too_large" | "unreadable"; message: string };

export function readBounded(path: string, maxBytes: number): BoundedRead {
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
    // One byte more than allowed tells a file that grew since lstat apart from one at the limit.
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > maxBytes) return { ok: false, problem: "too_large", message: `over the ${maxBytes}-byte bound` };
    }
    return { ok: true, bytes: buf.subarray(0, n) };
  } catch (e) {
    return { ok: false, problem: "unreadable", message: `cannot read: ${String(e)}` };
  } finally {
    closeSync(fd);
  }
}

/** Size and SHA-256 of a file streamed in 1 MiB pieces, refusing links and files over maxBytes. */
export function hashBounded(path: string, maxBytes: number): { ok: true; bytes: number; sha256: string } | Extract<BoundedRead, { ok: false }> {
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
  const hasher = new Bun.CryptoHasher("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  let total = 0;
  try {
    for (;;) {
      const r = readSync(fd, buf, 0, buf.length, null);
      if (r === 0) break;
      total += r;
      if (total > maxBytes) return { ok: false, problem: "too_large", message: `over the ${maxBytes}-byte bound` };
      hasher.update(buf.subarray(0, r));
    }
  } catch (e) {
    return { ok: false, problem: "unreadable", message: `cannot read: ${String(e)}` };
  } finally {
    closeSync(fd);
  }
  return { ok: true, bytes: total, sha256: hasher.digest("hex") };
}
