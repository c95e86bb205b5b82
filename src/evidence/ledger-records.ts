/**
 * The records of a serve session's event ledger `events.ndjson` (serve.md "Evidence"): one
 * CloudEvent per change of the session's pending queue, digests only (never a payload). Builders
 * only: they take the facts and return the event; the ledger (events/store/ledger.ts) chains it
 * (`vigilseq`, `vigilprev`) and writes it in the same commit as the pending-log change. The id is
 * `evt_ledger_<session>_<vigilseq>`, so the builder is given the record's place in the chain.
 *
 * A ledger opened for the first time over a pending queue that already holds entries records each
 * of them first (received with delivery_mode "restored", or its gap), so what follows is accounted.
 *
 * Accounting: a queued entry (received, or gap with a seq) is pending until a delivered record
 * names its seq in `seqs`, or a dropped record names it; a record with seq null (an acknowledged
 * notify event, or a gap that was not queued) is accounted at receipt.
 *
 * Member order is fixed (golden tests pin it), so records are stable byte for byte.
 */
import {
  EVENT_DELIVERED_TYPE,
  EVENT_DROPPED_TYPE,
  EVENT_GAP_TYPE,
  EVENT_RECEIVED_TYPE,
  cloudEvent,
  ledgerEventId,
} from "./format.ts";

/**
 * The longest cursor a gap record carries: what the events store keeps (events/rules/occurrence.ts
 * OCCURRENCE_LIMITS.cursorChars, the snapshot's bound). `vigil verify` reads gap records up to it.
 */
export const LEDGER_CURSOR_MAX_CHARS = 65_536;

/**
 * How the event reached the session; "restored": queued before the ledger was kept (by an older
 * vigil, or before `evidence` was configured) and recorded when the ledger was first opened, its
 * delivery mode unknown.
 */
export type LedgerDeliveryMode = "poll" | "push" | "webhook" | "restored";
export type LedgerAction = "follow_up" | "steer" | "notify";

export interface ReceivedData {
  session_id: string;
  /** The pending-queue seq, or null for an event that was not queued (action notify). */
  seq: number | null;
  server: string;
  event_name: string;
  subscription_key_sha256: string;
  delivery_mode: LedgerDeliveryMode;
  action: LedgerAction;
  event_id: string | null;
  /** Hex SHA-256 of the occurrence's RFC 8785 canonical JSON. */
  payload_sha256: string;
}

export interface GapData {
  session_id: string;
  /** The pending-queue seq, or null when the notice was not queued. */
  seq: number | null;
  server: string;
  event_name: string;
  subscription_key_sha256: string;
  reason: string;
  cursor: string | null;
}

export interface DeliveredData {
  session_id: string;
  batch_tag: string;
  run_id: string;
  seqs: number[];
  /** Per seq, in the same order: the event id its received record names (null for a gap: its record names none). */
  event_ids: (string | null)[];
}

export interface DroppedData {
  session_id: string;
  seq: number;
  event_id: string | null;
  attempts: number;
  /** A stable short code: the last run's code, or what became of it (delivery-rules.ts `droppedErrorCode`). */
  error_code: string;
}

export function receivedRecord(source: string, vigilseq: number, d: ReceivedData, timeMs?: number): Record<string, unknown> {
  return cloudEvent(EVENT_RECEIVED_TYPE, source, ledgerEventId(d.session_id, vigilseq), {
    session_id: d.session_id,
    seq: d.seq,
    server: d.server,
    event_name: d.event_name,
    subscription_key_sha256: d.subscription_key_sha256,
    delivery_mode: d.delivery_mode,
    action: d.action,
    event_id: d.event_id,
    payload_sha256: d.payload_sha256,
  }, undefined, timeMs);
}

export function gapRecord(source: string, vigilseq: number, d: GapData, timeMs?: number): Record<string, unknown> {
  return cloudEvent(EVENT_GAP_TYPE, source, ledgerEventId(d.session_id, vigilseq), {
    session_id: d.session_id,
    seq: d.seq,
    server: d.server,
    event_name: d.event_name,
    subscription_key_sha256: d.subscription_key_sha256,
    reason: d.reason,
    cursor: d.cursor,
  }, undefined, timeMs);
}

export function deliveredRecord(source: string, vigilseq: number, d: DeliveredData, timeMs?: number): Record<string, unknown> {
  return cloudEvent(EVENT_DELIVERED_TYPE, source, ledgerEventId(d.session_id, vigilseq), {
    session_id: d.session_id,
    batch_tag: d.batch_tag,
    run_id: d.run_id,
    seqs: [...d.seqs],
    event_ids: [...d.event_ids],
  }, undefined, timeMs);
}

export function droppedRecord(source: string, vigilseq: number, d: DroppedData, timeMs?: number): Record<string, unknown> {
  return cloudEvent(EVENT_DROPPED_TYPE, source, ledgerEventId(d.session_id, vigilseq), {
    session_id: d.session_id,
    seq: d.seq,
    event_id: d.event_id,
    attempts: d.attempts,
    error_code: d.error_code,
  }, undefined, timeMs);
}
