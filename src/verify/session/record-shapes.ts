/**
 * Shapes of a serve session's log records, checked per line: the decision record (v1 data) and the
 * four event ledger records (serve.md "Evidence"), each a CloudEvent carrying its chain
 * (`vigilseq`, `vigilprev`). Compiled field tables built with line-shapes.ts's fields and envelope,
 * for the same reason (a log of 250,000 lines): every member checked, unknown members refused.
 */
import { EVENT_DELIVERED_TYPE, EVENT_DROPPED_TYPE, EVENT_GAP_TYPE, EVENT_RECEIVED_TYPE } from "../../evidence/format.ts";
import { LEDGER_CURSOR_MAX_CHARS } from "../../evidence/ledger-records.ts";
import { DECISION_LINE_V2, type Field, type Shape, hex64, lineEnvelope, nullable, oneOf, safeCount as count, text } from "../line-shapes.ts";

/** A delivered batch names at most this many events (far above any batch size serve uses). */
const MAX_BATCH = 100_000;

const arrayOf = (item: (v: unknown) => boolean, expected: string): Field => ({
  check: (v) => Array.isArray(v) && v.length <= MAX_BATCH && v.every(item),
  expected,
});

/** A decision record of a serve session: v1 data, chained envelope (a v2 capture's decision line). */
export const SESSION_DECISION_LINE: Shape = DECISION_LINE_V2;

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
  seqs: arrayOf(count.check, "an array of non-negative integers"),
  event_ids: arrayOf((v) => v === null || text.check(v), "an array of strings or nulls"),
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
  [EVENT_RECEIVED_TYPE]: lineEnvelope(RECEIVED, true),
  [EVENT_GAP_TYPE]: lineEnvelope(GAP, true),
  [EVENT_DELIVERED_TYPE]: lineEnvelope(DELIVERED, true),
  [EVENT_DROPPED_TYPE]: lineEnvelope(DROPPED, true),
};
