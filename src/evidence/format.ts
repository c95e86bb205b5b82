/**
 * The on-disk evidence formats, versioned. Changing a field's meaning means a new version
 * (v2), never an edit here; golden tests pin these shapes.
 */
export const DECISION_TYPE = "vigil.mcp.decision.v1";
export const RECEIPT_TYPE = "vigil.mcp.receipt.v1";
export const CONTEXT_TYPE = "vigil.mcp.session.context.v1";
export const STOP_TYPE = "vigil.mcp.session.stop.v1";
/** v2: the stop record also names each log's chain head and count (`chains`). */
export const STOP_TYPE_V2 = "vigil.mcp.session.stop.v2";
export const CAPTURE_FORMAT = "vigil.capture.v1";
/** v2: every log is hash-chained (vigilseq/vigilprev) and the stop record is v2. */
export const CAPTURE_FORMAT_V2 = "vigil.capture.v2";

/** The event ledger of a serve session (events.ndjson), one type per kind of record. */
export const EVENT_RECEIVED_TYPE = "vigil.mcp.event.received.v1";
export const EVENT_DELIVERED_TYPE = "vigil.mcp.event.delivered.v1";
export const EVENT_DROPPED_TYPE = "vigil.mcp.event.dropped.v1";
export const EVENT_GAP_TYPE = "vigil.mcp.event.gap.v1";

/** File names inside a capture directory (wrap --capture-dir, read by verify). */
export const CAPTURE_FILES = {
  manifest: "capture.json",
  context: "session-context.json",
  stop: "session-stop.json",
  decisions: "decisions.ndjson",
  receipts: "receipts.ndjson",
  serverStderr: "server-stderr.log",
  checkpoints: "checkpoints.ndjson",
  /** The signed statement over every other file, written last (not listed in the manifest). */
  envelope: "capture.dsse.json",
} as const;

/** Evidence files of a serve session directory (sessions/<name>/), read by `vigil verify`. */
export const SESSION_FILES = {
  decisions: "decisions.ndjson",
  events: "events.ndjson",
  checkpoints: "checkpoints.ndjson",
  /** One signed statement per stop: stops/<n>.dsse.json, n from 1. */
  stopsDir: "stops",
} as const;

export const NON_CLAIMS = ["execution_proof", "authentication", "global_coverage", "durable_storage_proof"] as const;

export const contextEventId = (sessionId: string) => `evt_context_${sessionId}`;
export const stopEventId = (sessionId: string) => `evt_stop_${sessionId}`;
export const decisionEventId = (sessionId: string, seq: number) => `evt_decision_${sessionId}_${seq}`;
export const receiptEventId = (sessionId: string, seq: number) => `evt_receipt_${sessionId}_${seq}`;
/** A ledger record's id: its session and its place in the ledger's chain. */
export const ledgerEventId = (sessionId: string, vigilseq: number) => `evt_ledger_${sessionId}_${vigilseq}`;

let lastMs = Number.NaN;
let lastText = "";

/** RFC 3339 UTC timestamp with millisecond precision (formatted once per millisecond). */
export function rfc3339(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastText = new Date(ms).toISOString();
  }
  return lastText;
}

/** A CloudEvents 1.0 structured-mode envelope, members in a fixed order. */
export function cloudEvent(
  type: string,
  source: string,
  id: string,
  data: Record<string, unknown>,
  subject?: string,
  timeMs?: number,
): Record<string, unknown> {
  const time = rfc3339(timeMs);
  return subject === undefined
    ? { specversion: "1.0", type, source, id, time, datacontenttype: "application/json", data }
    : { specversion: "1.0", type, source, id, time, datacontenttype: "application/json", subject, data };
}
