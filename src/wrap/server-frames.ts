/**
 * Cheap classification of a server → client line without materializing it.
 *
 * The proxy forwards server lines byte-for-byte; it only needs to know whether a line is a JSON
 * object at all (server stdout pollution must not reach the client), whether it is a response and
 * to which id. A 10 MiB tool result is not JSON.parse'd for that: the scan walks the top-level
 * members only and jumps over string contents with a native byte search, so cost is dominated by
 * memchr over the payload. Nested values are checked for balanced brackets and closed strings, not
 * for full JSON grammar (the client's own parser is the authority on a well-framed message).
 */

export interface ServerFrameInfo {
  kind: "response" | "request" | "notification";
  /** For responses: whether it carries a result or an error. */
  outcome: "result" | "error" | null;
  /** Canonical key of the id (JSON.stringify of its value), null when absent. */
  idKey: string | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

class NotJson extends Error {}

/** Returns the frame's kind and id, or null when the line is not a single JSON object. */
export function scanServerFrame(line: Uint8Array): ServerFrameInfo | null {
  const b = Buffer.isBuffer(line) ? line : Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  try {
    return scanObject(b);
  } catch (e) {
    if (e instanceof NotJson) return null;
    throw e;
  }
}

function scanObject(b: Buffer): ServerFrameInfo {
  let p = skipWs(b, 0);
  if (b[p] !== LBRACE) throw new NotJson();
  p = skipWs(b, p + 1);
  let idRaw: string | null = null;
  let hasMethod = false;
  let outcome: "result" | "error" | null = null;
  if (b[p] === RBRACE) p++;
  else {
    for (;;) {
      if (b[p] !== QUOTE) throw new NotJson();
      const keyEnd = skipString(b, p);
      const key = knownKey(b, p + 1, keyEnd - 1);
      p = skipWs(b, keyEnd);
      if (b[p] !== COLON) throw new NotJson();
      p = skipWs(b, p + 1);
      const valueStart = p;
      p = skipValue(b, p);
      if (key === "id") idRaw = b.toString("utf8", valueStart, p);
      else if (key === "method") hasMethod = true;
      else if (key === "result" || key === "error") outcome = key;
      p = skipWs(b, p);
      if (b[p] === COMMA) {
        p = skipWs(b, p + 1);
        continue;
      }
      if (b[p] === RBRACE) {
        p++;
        break;
      }
      throw new NotJson();
    }
  }
  if (skipWs(b, p) !== b.length) throw new NotJson();
  const idKey = idRaw === null ? null : normalizeId(idRaw);
  if (hasMethod) return { kind: idKey === null ? "notification" : "request", outcome: null, idKey };
  if (outcome === null) throw new NotJson();
  return { kind: "response", outcome, idKey };
}

const KEYS = ["id", "method", "result", "error"] as const;
const KEY_BYTES = KEYS.map((k) => Buffer.from(k));

/** Which of the four members vigil cares about the key bytes [start, end) name, without allocating. */
function knownKey(b: Buffer, start: number, end: number): (typeof KEYS)[number] | null {
  const len = end - start;
  for (let k = 0; k < KEY_BYTES.length; k++) {
    const want = KEY_BYTES[k]!;
    if (want.length !== len) continue;
    let same = true;
    for (let i = 0; i < len; i++) {
      if (b[start + i] !== want[i]) {
        same = false;
        break;
      }
    }
    if (same) return KEYS[k]!;
  }
  return null;
}

function normalizeId(raw: string): string | null {
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === "string" || typeof v === "number" ? JSON.stringify(v) : null;
  } catch {
    throw new NotJson();
  }
}

function skipWs(b: Buffer, p: number): number {
  for (;;) {
    const c = b[p];
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
    else return p;
  }
}

/** p is at an opening quote; returns the index after the closing quote. */
function skipString(b: Buffer, p: number): number {
  let from = p + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) throw new NotJson();
    let slashes = 0;
    while (b[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

function skipValue(b: Buffer, p: number): number {
  const c = b[p];
  if (c === QUOTE) return skipString(b, p);
  if (c === LBRACE || c === LBRACKET) return skipContainer(b, p);
  const start = p;
  for (;;) {
    const d = b[p];
    if (d === undefined || d === COMMA || d === RBRACE || d === RBRACKET || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
    p++;
  }
  if (p === start || !isScalarStart(c!)) throw new NotJson();
  return p;
}

function isScalarStart(c: number): boolean {
  return c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e; // - 0-9 t f n
}

function skipContainer(b: Buffer, p: number): number {
  let depth = 0;
  const n = b.length;
  while (p < n) {
    const c = b[p]!;
    if (c === QUOTE) {
      p = skipString(b, p);
      continue;
    }
    if (c === LBRACE || c === LBRACKET) depth++;
    else if (c === RBRACE || c === RBRACKET) {
      depth--;
      if (depth === 0) return p + 1;
    }
    p++;
  }
  throw new NotJson();
}
