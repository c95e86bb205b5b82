/**
 * `JSON.stringify(text)` of recently seen long texts, kept (issue 16, events → model). A session's
 * messages are measured (context/estimate.ts) and serialized (models/openai-wire.ts) once per
 * request, and the history's copy of a message — rebuilt from its stored frame, so another object
 * with the same text string — again in every later request until it is compacted away: escaping a
 * batch's ~9 KB of quoted JSON each time was most of what a request cost to build. Keyed by the
 * string itself (a lookup hashes and compares it, far cheaper than escaping it again).
 *
 * Bounded: texts shorter than MIN_CACHED_CHARS are encoded each time (cheap), and the cache holds
 * at most MAX_ENTRIES texts and MAX_CACHED_CHARS characters (each text and its encoding counted),
 * least recently used out first; a text too large for the whole cache is encoded and not kept.
 */

export const MIN_CACHED_CHARS = 512;
export const MAX_ENTRIES = 256;
/** Characters held, texts and their encodings together (≤ 8 MiB of string data even at 2 bytes a character). */
export const MAX_CACHED_CHARS = 4 * 1024 * 1024;

interface Encoded {
  json: string;
  /** UTF-8 bytes of `json`, measured on first ask. */
  bytes: number;
  /** The key it is kept under (its own copy of the text, see below). */
  key: string;
}

const cache = new Map<string, Encoded>();
let cachedChars = 0;

function encoded(text: string): Encoded {
  const hit = cache.get(text);
  if (hit !== undefined) {
    // Most recently used last: Map keeps insertion order.
    cache.delete(text);
    cache.set(hit.key, hit);
    return hit;
  }
  const json = JSON.stringify(text);
  const chars = text.length + json.length;
  if (chars > MAX_CACHED_CHARS) return { json, bytes: -1, key: text };
  // Kept under a fresh copy of the text (the same UTF-16 code units, lone surrogates too, in a
  // buffer of its own), never under the caller's string: a slice shares its parent's buffer in
  // JSC, so keeping `text` itself could hold a whole tool result (context/compact.ts cutText
  // measures slices of them) past the bound.
  const entry: Encoded = { json, bytes: -1, key: Buffer.from(text, "utf16le").toString("utf16le") };
  cache.set(entry.key, entry);
  cachedChars += chars;
  while (cache.size > MAX_ENTRIES || cachedChars > MAX_CACHED_CHARS) {
    const [oldest, e] = cache.entries().next().value as [string, Encoded];
    cache.delete(oldest);
    cachedChars -= oldest.length + e.json.length;
  }
  return entry;
}

/** `JSON.stringify(text)`. */
export function jsonText(text: string): string {
  return text.length < MIN_CACHED_CHARS ? JSON.stringify(text) : encoded(text).json;
}

/** UTF-8 bytes of `JSON.stringify(text)`. */
export function jsonTextBytes(text: string): number {
  if (text.length < MIN_CACHED_CHARS) return Buffer.byteLength(JSON.stringify(text), "utf8");
  const e = encoded(text);
  if (e.bytes < 0) e.bytes = Buffer.byteLength(e.json, "utf8");
  return e.bytes;
}

/** What the cache holds now (its bounds are checked by tests). */
export function jsonTextCacheSize(): { entries: number; chars: number } {
  return { entries: cache.size, chars: cachedChars };
}
