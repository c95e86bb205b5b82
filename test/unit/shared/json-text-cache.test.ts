import { expect, test } from "bun:test";
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
