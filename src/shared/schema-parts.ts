/**
 * valibot building blocks shared by every config-like format (serve's config, the MCP server
 * entries it embeds, the events subscriptions): bounded strings and integers, strict mappings
 * that refuse arrays, string maps that refuse the keys valibot would silently drop, and http(s)
 * URLs. Messages never contain the refused value, only what was expected, because some values are
 * secrets (header tokens, expanded variables).
 */
import * as v from "valibot";
import { isRecord } from "./guards.ts";

// valibot's record() silently drops these keys; refuse them so nothing disappears unseen.
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);

export const NO_LINE_BREAK = /^[^\r\n\0]*$/;
export const NO_NUL = /^[^\0]*$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ANY = /(?:)/;

/** A bounded string; `what` completes "expected …". */
export function text(what: string, max: number, min = 0, pattern?: RegExp) {
  const expected = `expected ${what}`;
  return v.pipe(
    v.string(expected),
    v.minLength(min, min === 1 ? "expected a non-empty string" : `expected at least ${min} characters`),
    v.maxLength(max, `expected at most ${max} characters`),
    v.regex(pattern ?? ANY, expected),
  );
}

export function integer(min: number, max: number) {
  const expected = `expected an integer from ${min} to ${max}`;
  return v.pipe(v.number(expected), v.safeInteger(expected), v.minValue(min, expected), v.maxValue(max, expected));
}

/** A strict mapping; strictObject alone accepts an array, so arrays are refused first. */
export function mapping<T extends v.ObjectEntries>(entries: T, expected = "expected a mapping") {
  return v.pipe(v.custom<unknown>(isRecord, expected), v.strictObject(entries, expected));
}

/** A mapping of strings to strings with a bounded number of entries. */
export function stringMap(key: v.GenericSchema<string>, value: v.GenericSchema<string>, maxEntries: number, what: string) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isRecord, `expected ${what}`),
    v.rawCheck<Record<string, unknown>>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const input = dataset.value;
      for (const k of Object.keys(input)) {
        if (RESERVED_KEYS.has(k)) {
          addIssue({ message: "this key is not supported", path: [{ type: "object", origin: "key", input, key: k, value: input[k] }] });
        }
      }
    }),
    v.record(key, value),
    v.check((m) => Object.keys(m).length <= maxEntries, `expected at most ${maxEntries} entries`),
  );
}

/** True for an absolute http: or https: URL with a host and no whitespace. */
export function isHttpUrl(s: string): boolean {
  if (/\s/.test(s) || !URL.canParse(s)) return false;
  const url = new URL(s);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/** An http(s) URL; before expansion, a value holding a `$` is checked only after expansion. */
export function httpUrl(expanded: boolean, maxChars: number) {
  const expected = "expected an http:// or https:// URL";
  return v.pipe(
    v.string(expected),
    v.maxLength(maxChars, `expected at most ${maxChars} characters`),
    v.check((s) => (!expanded && s.includes("$")) || isHttpUrl(s), expected),
  );
}
