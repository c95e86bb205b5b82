/**
 * Strict JSON for policy files, via the shared strict reader (duplicate keys, 1e400, invalid UTF-8
 * and excessive depth are refused). A refusal is reported with the path inside the document where
 * it happened, recovered by re-walking the (valid up to that point) text, plus line and column.
 */
import { parseStrictJson } from "../shared/strict-json.ts";
import { formatDocumentPath, type PathSegment } from "../shared/document-path.ts";
import { MAX_POLICY_DEPTH, type SourceParse } from "./document-source.ts";

export function parseJsonPolicy(text: string): SourceParse {
  const result = parseStrictJson(text, { maxDepth: MAX_POLICY_DEPTH });
  if (result.ok) return { ok: true, value: result.value };
  const { line, column } = lineColumn(text, result.offset);
  const what = result.message.replace(/ at offset \d+$/, "");
  const path = result.offset < text.length ? pathAt(text, result.offset) : [];
  if (result.fault === "duplicate_key" && text[result.offset] === '"') path.push(readString(text, result.offset).value);
  const where = formatDocumentPath(path);
  return { ok: false, message: `${where === "" ? "" : `${where}: `}${what} (line ${line}, column ${column})` };
}

export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

interface Frame {
  object: boolean;
  key: string | null;
  index: number;
  expectKey: boolean;
}

/**
 * The path of the innermost value being read at `offset`. Assumes the text before `offset` is
 * valid JSON (the strict reader stopped there), so a small tokenizer suffices.
 */
function pathAt(text: string, offset: number): PathSegment[] {
  const stack: Frame[] = [];
  let i = 0;
  while (i < offset) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (c === '"') {
      const { value, end } = readString(text, i);
      if (top?.object && top.expectKey) {
        top.key = value;
        top.expectKey = false;
      }
      i = end;
      continue;
    }
    if (c === "{" || c === "[") stack.push({ object: c === "{", key: null, index: 0, expectKey: c === "{" });
    else if (c === "}" || c === "]") stack.pop();
    else if (c === "," && top) {
      if (top.object) top.expectKey = true;
      else top.index++;
    }
    i++;
  }
  const path: PathSegment[] = [];
  for (const frame of stack) {
    if (!frame.object) path.push(frame.index);
    else if (!frame.expectKey && frame.key !== null) path.push(frame.key);
  }
  return path;
}

/** Reads the JSON string token starting at `start` (a quote); `end` is the index after it. */
function readString(text: string, start: number): { value: string; end: number } {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
  const raw = text.slice(start, i + 1);
  try {
    return { value: JSON.parse(raw) as string, end: i + 1 };
  } catch {
    return { value: raw.slice(1, -1), end: i + 1 };
  }
}
