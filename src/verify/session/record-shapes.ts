/**
 * Shapes of a serve session's log records, checked per line: the decision record (v1 data) and the
 * four event ledger records (serve.md "Evidence"), each a CloudEvent carrying its chain
 * (`vigilseq`, `vigilprev`). Compiled field tables like line-shapes.ts, for the same reason (a log
 * of 250,000 lines): every member checked, unknown members refused.
 */
import { EVENT_DELIVERED_TYPE, EVENT_DROPPED_TYPE, EVENT_GAP_TYPE, EVENT_RECEIVED_TYPE } from "../../evidence/format.ts";
import { LEDGER_CURSOR_MAX_CHARS } from "../../evidence/ledger-records.ts";
import { DECISION_LINE, type Shape } from "../line-shapes.ts";

interface Field {
  check: (v: unknown) => boolean;
  expected: string;
  optional?: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;
/** A delivered batch names at most this many events (far above any batch size serve uses). */
const MAX_BATCH = 100_000;

const isText = (v: unknown) => typeof v === "string" && v.length <= 4096;
const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const text: Field = { check: isText, expected: "a string" };
const hex64: Field = { check: (v) => typeof v === "string" && HEX64.test(v), expected: "64 lowercase hex digits" };
const count: Field = { check: isCount, expected: "a non-negative integer" };
const nullable = (f: Field): Field => ({ check: (v) => v === null || f.check(v), expected: `${f.expected} or null` });
const optional = (f: Field): Field => ({ ...f, optional: true });
const oneOf = (...values: string[]): Field => ({ check: (v) => values.includes(v as string), expected: values.join(" | ") });
const arrayOf = (item: (v: unknown) => boolean, expected: string): Field => ({
  check: (v) => Array.isArray(v) && v.length <= MAX_BATCH && v.every(item),
  expected,
});

function chained(data: Shape): Shape {
  return {
    specversion: text,
    type: text,
    source: text,
    id: text,
    time: text,
    datacontenttype: oneOf("application/json"),
    subject: optional(text),
    vigilseq: count,
    vigilprev: hex64,
    data,
  };
}

/** A decision record of a serve session: v1 data, chained envelope. */
export const SESSION_DECISION_LINE: Shape = chained(DECISION_LINE.data as Shape);

const RECEIVED: Shape = {
  session_id: text,
  seq: nullable(count),
  server: text,
  event_name: text,
  subscription_key_sha256: hex64,
  // "restored": queued before the ledger was kept, recorded when it was first opened (ledger-records.ts).
  delivery_mode: oneOf("poll", "push", "webhook", "restored"),
  action: oneOf("follow_up", "steer", "notify"),
  event_id: nullable(text),
  payload_sha256: hex64,
};

const GAP: Shape = {
  session_id: text,
  seq: nullable(count),
  server: text,
  event_name: text,
  subscription_key_sha256: hex64,
  reason: text,
  // A server's cursor, kept up to the events store's bound (far over `text`'s).
  cursor: nullable({ check: (v) => typeof v === "string" && v.length <= LEDGER_CURSOR_MAX_CHARS, expected: `a string of at most ${LEDGER_CURSOR_MAX_CHARS} characters` }),
};

const DELIVERED: Shape = {
  session_id: text,
  batch_tag: text,
  run_id: text,
  seqs: arrayOf(isCount, "an array of non-negative integers"),
  event_ids: arrayOf((v) => v === null || isText(v), "an array of strings or nulls"),
};

const DROPPED: Shape = {
  session_id: text,
  seq: count,
  event_id: nullable(text),
  attempts: count,
  error_code: text,
};

/** The ledger's record shapes by CloudEvents `type`. */
export const LEDGER_LINES: Readonly<Record<string, Shape>> = {
  [EVENT_RECEIVED_TYPE]: chained(RECEIVED),
  [EVENT_GAP_TYPE]: chained(GAP),
  [EVENT_DELIVERED_TYPE]: chained(DELIVERED),
  [EVENT_DROPPED_TYPE]: chained(DROPPED),
};

export interface ReceivedData {
  session_id: string;
  seq: number | null;
  action: "follow_up" | "steer" | "notify";
  event_id: string | null;
}
export interface GapData {
  session_id: string;
  seq: number | null;
}
export interface DeliveredData {
  session_id: string;
  seqs: number[];
  event_ids: (string | null)[];
}
export interface DroppedData {
  session_id: string;
  seq: number;
  event_id: string | null;
}
