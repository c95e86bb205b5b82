/**
 * Shapes of the NDJSON log records (decisions, receipts), checked per line on verify's hot path.
 *
 * Companion records go through valibot (src/verify/schemas.ts). Log lines do not: valibot costs
 * about 6 µs a record, which was 40 % of verify's time on a 10,000-line log (bench/RESULTS.md), so
 * these strict shapes are a compiled field table instead — same rules: every member checked,
 * unknown members refused.
 */

export interface Field {
  check: (v: unknown) => boolean;
  expected: string;
  optional?: boolean;
}
export interface Shape {
  readonly [member: string]: Field | Shape;
}

const HEX64 = /^[0-9a-f]{64}$/;
/** Field builders, shared with the serve-session shapes (src/verify/session/). */
export const text: Field = { check: (v) => typeof v === "string" && v.length <= 4096, expected: "a string" };
export const hex64: Field = { check: (v) => typeof v === "string" && HEX64.test(v), expected: "64 lowercase hex digits" };
export const count: Field = { check: (v) => Number.isInteger(v) && (v as number) >= 0, expected: "a non-negative integer" };
/** A position in a chain (or a serve session's queue): exact, so a safe integer. */
export const safeCount: Field = { check: (v) => Number.isSafeInteger(v) && (v as number) >= 0, expected: "a non-negative integer" };
export const bool: Field = { check: (v) => typeof v === "boolean", expected: "true or false" };
export const id: Field = { check: (v) => typeof v === "string" || typeof v === "number", expected: "a string or a number" };
export const nullable = (f: Field): Field => ({ check: (v) => v === null || f.check(v), expected: `${f.expected} or null` });
export const optional = (f: Field): Field => ({ ...f, optional: true });
export const oneOf = (...values: string[]): Field => ({ check: (v) => values.includes(v as string), expected: values.join(" | ") });

/**
 * A log line's CloudEvents envelope. v1 lines have no chain attributes (a `vigilseq` in a v1 log is
 * an unexpected member); chained (v2) lines must carry both (src/evidence/chain.ts).
 */
export function lineEnvelope(data: Shape, chained: boolean): Shape {
  const base: Record<string, Field | Shape> = {
    specversion: text,
    type: text,
    source: text,
    id: text,
    time: text,
    datacontenttype: oneOf("application/json"),
    subject: optional(text),
  };
  if (chained) {
    base.vigilseq = safeCount;
    base.vigilprev = hex64;
  }
  base.data = data;
  return base;
}

const DECISION_DATA: Shape = {
  session_id: text,
  seq: count,
  server_id: text,
  request_id: id,
  tool: nullable(text),
  decision: oneOf("allow", "deny", "would_deny"),
  reason_code: text,
  reason: text,
  matched_rule: nullable(text),
  policy_digest: nullable(text),
  arguments_sha256: hex64,
  dry_run: bool,
};

const RECEIPT_DATA: Shape = {
  session_id: text,
  seq: count,
  request_id: id,
  method: nullable(text),
  tool: optional(text),
  outcome: oneOf("response", "error", "denied", "rejected", "no_response"),
  request_sha256: hex64,
  response_sha256: optional(hex64),
  request_bytes: count,
  response_bytes: optional(count),
  started_at: text,
  duration_us: count,
};

export const DECISION_LINE = lineEnvelope(DECISION_DATA, false);
export const RECEIPT_LINE = lineEnvelope(RECEIPT_DATA, false);
export const DECISION_LINE_V2 = lineEnvelope(DECISION_DATA, true);
export const RECEIPT_LINE_V2 = lineEnvelope(RECEIPT_DATA, true);

const isField = (x: Field | Shape): x is Field => typeof (x as Field).check === "function";

/** Null when `value` has exactly this shape; otherwise "path: expected …". */
export function shapeProblem(value: unknown, shape: Shape, path = ""): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `${path || "record"}: expected an object`;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (!Object.hasOwn(shape, key)) return `${path}${key}: unexpected member`;
  }
  for (const key in shape) {
    const spec = shape[key]!;
    const present = Object.hasOwn(record, key);
    if (isField(spec)) {
      if (!present) {
        if (spec.optional) continue;
        return `${path}${key}: missing`;
      }
      if (!spec.check(record[key])) return `${path}${key}: expected ${spec.expected}`;
    } else {
      if (!present) return `${path}${key}: missing`;
      const inner = shapeProblem(record[key], spec, `${path}${key}.`);
      if (inner) return inner;
    }
  }
  return null;
}
