/**
 * Strict JSON: RFC 8259 grammar plus the refusals JSON.parse does not make.
 *
 * - invalid UTF-8 (and a byte-order mark) is refused, not replaced;
 * - duplicate object keys at any depth are refused (after unescaping: "a" and "\u0061" collide);
 * - a number literal that overflows to ±Infinity (such as 1e400) is refused;
 * - nesting deeper than `maxDepth` is refused while scanning, iteratively, so a hostile document
 *   gets a typed refusal rather than a stack overflow.
 *
 * The scan validates; JSON.parse then materializes the (now known-good, depth-bounded) text.
 * Used by `verify` for every record and by `wrap` for every client frame.
 */
import { type StrictJsonFailure, scanStrictJson } from "./strict-json-scanner.ts";

export type { StrictJsonFailure, StrictJsonFault } from "./strict-json-scanner.ts";

export type StrictJsonResult = { ok: true; value: unknown } | StrictJsonFailure;

export interface StrictJsonOptions {
  /** Containers deeper than this are refused. Default 32. */
  maxDepth?: number;
}

export const DEFAULT_MAX_DEPTH = 32;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Decodes UTF-8 strictly; returns null on invalid bytes. */
export function decodeUtf8Strict(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

export function parseStrictJson(input: Uint8Array | string, options: StrictJsonOptions = {}): StrictJsonResult {
  const text = typeof input === "string" ? input : decodeUtf8Strict(input);
  if (text === null) return { ok: false, fault: "invalid_utf8", message: "not valid UTF-8", offset: 0 };
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const fast = fastParse(text, maxDepth);
  if (fast !== null) return { ok: true, value: fast.value };
  const failure = scanStrictJson(text, maxDepth);
  if (failure) return failure;
  // The precise scan found nothing the fast path doubted (cannot happen for valid input; kept total).
  return { ok: true, value: JSON.parse(text) };
}

/** Validates `text`; returns null when it is strict JSON, otherwise the first failure. */
export function validateStrictJson(text: string, options: StrictJsonOptions = {}): StrictJsonFailure | null {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  return fastParse(text, maxDepth) !== null ? null : scanStrictJson(text, maxDepth);
}

/**
 * The fast path for well-formed input: JSON.parse is the grammar authority; what it cannot see is
 * checked around it. Depth is bounded by a bracket scan before parsing (so JSON.parse never
 * recurses past maxDepth); duplicate keys collapse in JSON.parse, so the keys counted in the text
 * must equal the keys of the parsed objects; numbers that overflowed show up as non-finite values.
 * Returns null when anything is off — the precise scanner then names the failure.
 */
function fastParse(text: string, maxDepth: number): { value: unknown } | null {
  const keysInText = countKeys(text, maxDepth);
  if (keysInText < 0) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return keysInValue(value) === keysInText ? { value } : null;
}

/** Object keys in the text (strings followed by ':'), or -1 when nesting exceeds maxDepth or a string is unterminated. */
function countKeys(s: string, maxDepth: number): number {
  let keys = 0;
  let depth = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 34) {
      let q = s.indexOf('"', i + 1);
      for (;;) {
        if (q < 0) return -1;
        let slashes = 0;
        while (s.charCodeAt(q - 1 - slashes) === 92) slashes++;
        if (slashes % 2 === 0) break;
        q = s.indexOf('"', q + 1);
      }
      i = q;
      let k = q + 1;
      let d = s.charCodeAt(k);
      while (d === 32 || d === 10 || d === 13 || d === 9) d = s.charCodeAt(++k);
      if (d === 58) keys++;
    } else if (c === 123 || c === 91) {
      if (++depth > maxDepth) return -1;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return keys;
}

/** Own keys of every object in a parsed value; -1 if it holds a non-finite number. */
function keysInValue(root: unknown): number {
  let keys = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return -1;
    } else if (Array.isArray(v)) {
      for (const item of v) if (typeof item === "object" || typeof item === "number") stack.push(item);
    } else if (typeof v === "object" && v !== null) {
      for (const key in v) {
        keys++;
        const item = (v as Record<string, unknown>)[key];
        if (typeof item === "object" || typeof item === "number") stack.push(item);
      }
    }
  }
  return keys;
}

