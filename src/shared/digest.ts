import { closeSync, openSync, readSync } from "node:fs";
import { canonicalJson } from "./canonical-json.ts";

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
