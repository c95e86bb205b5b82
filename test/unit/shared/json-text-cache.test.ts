import { expect, test } from "bun:test";
import { heapStats } from "bun:jsc";
import { MAX_CACHED_CHARS, MAX_ENTRIES, MIN_CACHED_CHARS, jsonText, jsonTextBytes, jsonTextCacheSize } from "../../../src/shared/json-text-cache.ts";

test("the same bytes as JSON.stringify, short or long, first time or cached", () => {
  const texts = ["", "a\"b\\c\n\u0000\u2028é😀", `<x a="1">${"\"q\" \\ é\n".repeat(200)}</x>`, "z".repeat(MIN_CACHED_CHARS)];
  for (let round = 0; round < 2; round++) {
    for (const t of texts) {
      expect(jsonText(t)).toBe(JSON.stringify(t));
      expect(jsonTextBytes(t)).toBe(Buffer.byteLength(JSON.stringify(t), "utf8"));
      // An equal string that is another instance finds the same entry.
      const copy = [...t].join("");
      expect(jsonText(copy)).toBe(JSON.stringify(t));
    }
  }
});

test("bounded: at most MAX_ENTRIES texts and MAX_CACHED_CHARS characters, oldest out first", () => {
  for (let i = 0; i < MAX_ENTRIES * 2; i++) jsonText(`${i}:${"x".repeat(MIN_CACHED_CHARS)}`);
  expect(jsonTextCacheSize().entries).toBeLessThanOrEqual(MAX_ENTRIES);
  const big = (i: number) => `${i}:${"y".repeat(MAX_CACHED_CHARS / 8)}`;
  for (let i = 0; i < 8; i++) expect(jsonTextBytes(big(i))).toBe(MAX_CACHED_CHARS / 8 + 2 + String(i).length + 1);
  const size = jsonTextCacheSize();
  expect(size.chars).toBeLessThanOrEqual(MAX_CACHED_CHARS);
  // Each big text and its encoding take a quarter of the cache: at most four fit, at least three stay.
  expect(size.entries).toBeLessThanOrEqual(4);
  expect(size.entries).toBeGreaterThanOrEqual(3);
  // A text larger than the whole cache is encoded, never kept.
  const huge = "h".repeat(MAX_CACHED_CHARS / 2 + 1);
  expect(jsonText(huge)).toBe(JSON.stringify(huge));
  expect(jsonTextCacheSize().chars).toBeLessThanOrEqual(MAX_CACHED_CHARS);
});

test("a cached slice of a large text does not keep the large text alive (the byte bound is what is held)", () => {
  // JSC's slice shares its parent's buffer: a key kept as given would hold each whole parent
  // (context/compact.ts cutText measures slices of tool results of up to the message cap).
  Bun.gc(true);
  const before = heapStats().heapSize;
  for (let i = 0; i < 64; i++) {
    const parent = JSON.parse(JSON.stringify(`${i}:${"p".repeat(1 << 20)}`)) as string; // a fresh 1 MiB string
    const slice = parent.slice(0, MIN_CACHED_CHARS + 100);
    expect(jsonTextBytes(slice)).toBe(Buffer.byteLength(JSON.stringify(slice)));
  }
  Bun.gc(true);
  Bun.gc(true);
  // A hit from a slice (the entry moves to the newest place) keeps no parent either.
  for (let i = 0; i < 64; i++) {
    const parent = JSON.parse(JSON.stringify(`${i}:${"p".repeat(1 << 20)}`)) as string;
    expect(jsonText(parent.slice(0, MIN_CACHED_CHARS + 100))).toBe(JSON.stringify(`${i}:${"p".repeat(MIN_CACHED_CHARS + 100 - 1 - String(i).length)}`));
  }
  Bun.gc(true);
  Bun.gc(true);
  // 64 parents held would be 64 MiB; the entries themselves are about 80 KiB.
  expect(heapStats().heapSize - before).toBeLessThan(16 * 1024 * 1024);
  // …and the entries are still found by an equal string.
  const again = `${5}:${"p".repeat(MIN_CACHED_CHARS + 100 - 2)}`;
  expect(jsonText(again)).toBe(JSON.stringify(again));
  // Lone surrogates survive the key's copy: the second ask is a hit with the same text.
  const lone = `\ud800${"q".repeat(MIN_CACHED_CHARS)}\udc00x`;
  expect(jsonText(lone)).toBe(JSON.stringify(lone));
  const hits = jsonTextCacheSize().entries;
  expect(jsonText(lone.slice(0))).toBe(JSON.stringify(lone));
  expect(jsonTextCacheSize().entries).toBe(hits);
});
