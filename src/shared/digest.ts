import { closeSync, constants, lstatSync, openSync, readSync } from "node:fs";
import { canonicalJson } from "./canonical-json.ts";
import { errnoCode } from "./errors.ts";

/** Lowercase hex SHA-256 of bytes or of a string's UTF-8 encoding. */
export function sha256Hex(data: string | Uint8Array): string {
  return Bun.SHA256.hash(data, "hex");
}

/** Lowercase hex SHA-256 of a value's RFC 8785 canonical JSON. */
export function canonicalSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** An incremental SHA-256 over a sequence of byte chunks. */
export class RunningSha256 {
  private readonly hasher = new Bun.CryptoHasher("sha256");

  update(chunk: Uint8Array | string): void {
    this.hasher.update(chunk);
  }

  /** The digest of everything so far; the hasher keeps accepting updates. */
  hex(): string {
    return this.hasher.copy().digest("hex");
  }
}

/** Size and SHA-256 of a file, read in bounded chunks (never the whole file at once). */
export function sha256File(path: string): { bytes: number; sha256: string } {
  const fd = openSync(path, "r");
  const hasher = new Bun.CryptoHasher("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  let bytes = 0;
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hasher.update(buf.subarray(0, n));
      bytes += n;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes, sha256: hasher.digest("hex") };
}

/** A line longer than this is not one vigil writes (a continued log refuses far less: evidence/log-tail.ts). */
const MAX_OPEN_LINE_BYTES = 16 * 1024 * 1024;

/**
 * SHA-256 and count of the first `lines` lines of a regular file (all its complete lines when
 * undefined: a torn last line is left out), streamed in 1 MiB pieces; null when it does not exist.
 */
export function sha256OfLines(path: string, lines?: number): { sha256: string; lines: number } | null {
  try {
    if (!lstatSync(path).isFile()) throw new Error(`${path} is not a regular file`);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return null;
    throw e;
  }
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  const hasher = new Bun.CryptoHasher("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  const want = lines ?? Number.POSITIVE_INFINITY;
  let counted = 0;
  // Bytes of a line not yet ended by a newline: hashed once it is, dropped if it never is (or
  // once past any line vigil writes: what follows is not counted either way).
  let open: Buffer[] = [];
  let openBytes = 0;
  try {
    while (counted < want) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const piece = buf.subarray(0, n);
      let end = -1;
      for (let i = piece.indexOf(0x0a); i >= 0 && counted < want; i = piece.indexOf(0x0a, i + 1)) {
        counted++;
        end = i + 1;
      }
      if (end < 0) {
        open.push(Buffer.from(piece));
        if ((openBytes += n) > MAX_OPEN_LINE_BYTES) break;
        continue;
      }
      for (const part of open) hasher.update(part);
      open = [];
      hasher.update(piece.subarray(0, end));
      openBytes = n - end;
      if (end < n) open.push(Buffer.from(piece.subarray(end)));
    }
  } finally {
    closeSync(fd);
  }
  return { sha256: hasher.digest("hex"), lines: counted };
}
