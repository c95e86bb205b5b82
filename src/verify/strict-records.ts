/**
 * Strict, bounded materialization of capture records: a companion document, or the complete
 * lines of an NDJSON log (the bytes after the last newline are its partial tail).
 */
import { parseStrictJson } from "../shared/strict-json.ts";
import { type Finding, type FindingCode, unknownFinding } from "./findings.ts";

export const RECORD_MAX_DEPTH = 32;

export type Parsed = { ok: true; value: unknown } | { ok: false; finding: Finding };

const FAULT_CODE: Record<string, FindingCode> = {
  invalid_utf8: "invalid_utf8",
  syntax: "invalid_json",
  duplicate_key: "duplicate_key",
  non_finite_number: "non_finite_number",
  too_deep: "too_deep",
};

export function parseRecord(bytes: Uint8Array | string, file: string, where = ""): Parsed {
  const r = parseStrictJson(bytes, { maxDepth: RECORD_MAX_DEPTH });
  if (r.ok) return r;
  return { ok: false, finding: unknownFinding(FAULT_CODE[r.fault] ?? "invalid_json", file, `${where}${r.message}`) };
}

export interface NdjsonSplit {
  /** Each complete line, without its newline. */
  lines: Uint8Array[];
  /** The bytes of the complete lines, newlines included (what the prefix digest covers). */
  completeBytes: Uint8Array;
  /** Bytes after the last newline. */
  tail: Uint8Array;
}

/** Splits on "\n"; refuses more than maxLines complete lines before anything is parsed. */
export function splitNdjson(bytes: Uint8Array, maxLines: number): NdjsonSplit | null {
  const lines: Uint8Array[] = [];
  let start = 0;
  for (;;) {
    const nl = bytes.indexOf(0x0a, start);
    if (nl < 0) break;
    if (lines.length >= maxLines) return null;
    lines.push(bytes.subarray(start, nl));
    start = nl + 1;
  }
  return { lines, completeBytes: bytes.subarray(0, start), tail: bytes.subarray(start) };
}
