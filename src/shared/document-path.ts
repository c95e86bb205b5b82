/**
 * How a place inside a document (a policy, a config) is written in messages and in `matched_rule`:
 * `tools.allow[2]`, `limits.rate.calls`, `arguments.read_file`, `pins["my tool"]`.
 */

export type PathSegment = string | number;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const MAX_KEY_CHARS = 80;

/** Dotted path; keys that are not plain identifiers are bracketed and JSON-quoted (bounded). */
export function formatDocumentPath(segments: readonly PathSegment[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(truncate(segment, MAX_KEY_CHARS))}]`;
  }
  return out;
}

/** A short, one-line description of a value for "got …" in an error message. */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(truncate(value, 60));
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return typeof value;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
