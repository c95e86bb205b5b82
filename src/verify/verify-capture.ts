/**
 * Capture verification (verify.md "Checks"). Pure: file states in, report out — no I/O, no clock.
 */
import {
  CAPTURE_FILES,
  CONTEXT_TYPE,
  DECISION_TYPE,
  RECEIPT_TYPE,
  STOP_TYPE,
  contextEventId,
  decisionEventId,
  receiptEventId,
  stopEventId,
} from "../evidence/format.ts";
import { BOUNDS, type CaptureInput, type FileState } from "./capture-input.ts";
import { checkLog } from "./check-log.ts";
import { type Finding, type Verdict, lossFinding, unknownFinding, verdictOf } from "./findings.ts";
import { checkManifest } from "./check-manifest.ts";
import { DECISION_LINE, RECEIPT_LINE } from "./line-shapes.ts";
import { type ContextRecordT, ContextRecord, type StopRecordT, StopRecord } from "./schemas.ts";
import { problemFinding, readRecord } from "./read-record.ts";

export interface VerifyReport {
  verdict: Verdict;
  reasons: Finding[];
  session_id: string | null;
  server: { exit_code: number | null; signal: number | null } | null;
  decisions: { written: number | null; dropped: number | null; verified: number };
}

export interface VerifyOptions {
  requireReceipts: boolean;
}

export function verifyCapture(input: CaptureInput, options: VerifyOptions): VerifyReport {
  const findings: Finding[] = [];
  const manifest = checkManifest(input, findings);
  const stop = readRecord(input.files[CAPTURE_FILES.stop], CAPTURE_FILES.stop, StopRecord, findings) as StopRecordT | null;
  if (stop === null) {
    const state = input.files[CAPTURE_FILES.stop];
    if (state.kind === "problem" && state.problem === "missing") {
      findings.push(unknownFinding("stop_missing", CAPTURE_FILES.stop, "no session-stop record: the session's ending is unknown"));
    }
    return report(findings, null, 0);
  }
  const d = stop.data;
  const sid = d.session_id;
  if (stop.specversion !== "1.0" || stop.type !== STOP_TYPE) {
    findings.push(unknownFinding("envelope_invalid", CAPTURE_FILES.stop, `not a ${STOP_TYPE} event`));
  }
  if (stop.id !== stopEventId(sid)) findings.push(unknownFinding("stop_id_mismatch", CAPTURE_FILES.stop, `id ${stop.id} is not evt_stop_<session_id>`));
  if (manifest) {
    if (manifest.event_source !== stop.source) findings.push(unknownFinding("source_mismatch", CAPTURE_FILES.stop, "source differs from the manifest's event_source"));
    if (manifest.session_id !== sid) findings.push(unknownFinding("manifest_mismatch", CAPTURE_FILES.manifest, "session_id differs from the stop record's"));
    if (manifest.server_id !== d.server_id) findings.push(unknownFinding("manifest_mismatch", CAPTURE_FILES.manifest, "server_id differs from the stop record's"));
  }
  checkContextPair(input, stop, findings);
  const verified = checkDecisions(input, stop, findings);
  checkReceipts(input, stop, options, findings);
  return report(findings, stop, verified);
}

function report(all: Finding[], stop: StopRecordT | null, verified: number): VerifyReport {
  // A file that is, say, a symlink is found both by the manifest check and by its reader: once is enough.
  const seen = new Set<string>();
  const findings = all.filter((f) => {
    const key = `${f.code}\u0000${f.file}\u0000${f.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return {
    verdict: verdictOf(findings),
    reasons: findings,
    session_id: stop?.data.session_id ?? null,
    server: stop ? { exit_code: stop.data.exit_code, signal: stop.data.signal } : null,
    decisions: { written: stop?.data.decision_events_written ?? null, dropped: stop?.data.decision_events_dropped ?? null, verified },
  };
}

function checkContextPair(input: CaptureInput, stop: StopRecordT, findings: Finding[]): void {
  const file = CAPTURE_FILES.context;
  const state = input.files[file];
  const claimed = stop.data.session_context_id;
  if (state.kind === "problem" && state.problem === "missing") {
    if (claimed !== null) findings.push(unknownFinding("context_missing", file, `session-stop names context ${claimed}, but there is no context record`));
    return;
  }
  const ctx = readRecord(state, file, ContextRecord, findings) as ContextRecordT | null;
  if (ctx === null) return;
  const c = ctx.data;
  const s = stop.data;
  if (ctx.specversion !== "1.0" || ctx.type !== CONTEXT_TYPE) findings.push(unknownFinding("envelope_invalid", file, `not a ${CONTEXT_TYPE} event`));
  if (ctx.id !== contextEventId(c.session_id)) findings.push(unknownFinding("context_id_mismatch", file, `id ${ctx.id} is not evt_context_<session_id>`));
  if (claimed !== ctx.id) findings.push(unknownFinding("context_pair_mismatch", CAPTURE_FILES.stop, `session_context_id ${JSON.stringify(claimed)} does not name the context record ${ctx.id}`));
  if (ctx.source !== stop.source) findings.push(unknownFinding("source_mismatch", file, "source differs from the stop record's"));
  const stable: [string, unknown, unknown][] = [
    ["session_id", c.session_id, s.session_id],
    ["server_id", c.server_id, s.server_id],
    ["server_pid", c.server_pid, s.server_pid],
    ["event_source", c.event_source, stop.source],
  ];
  for (const [field, a, b] of stable) {
    if (a !== b) findings.push(unknownFinding("context_field_mismatch", file, `${field} differs between context and stop`));
  }
}

function checkDecisions(input: CaptureInput, stop: StopRecordT, findings: Finding[]): number {
  const file = CAPTURE_FILES.decisions;
  const state = input.files[file];
  const s = stop.data;
  const present = !(state.kind === "problem" && state.problem === "missing");
  if (s.decision_log === "absent") {
    if (present) findings.push(unknownFinding("decision_log_unexpected", file, "present, but session-stop says no decision log was requested"));
    if (s.decision_events_written !== null || s.decision_events_dropped !== null || s.decision_prefix_sha256 !== null) {
      findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, "accounting fields set for an absent decision log"));
    }
    return 0;
  }
  if (s.decision_log === "temporary" || s.decision_log === "unknown") {
    findings.push(unknownFinding("decision_accounting_unknown", CAPTURE_FILES.stop, `decision_log is ${s.decision_log}: no retained accounting to check`));
    return 0;
  }
  const written = s.decision_events_written;
  const dropped = s.decision_events_dropped;
  const prefix = s.decision_prefix_sha256;
  if (written === null || dropped === null || prefix === null) {
    findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, `decision_log is ${s.decision_log} but its accounting is null`));
    return 0;
  }
  if (s.decision_log === "complete" && dropped > 0) {
    findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, `decision_log is complete but ${dropped} events were dropped`));
  }
  if (state.kind !== "read") {
    findings.push(state.kind === "problem" && state.problem === "missing" ? unknownFinding("decision_log_missing", file, "session-stop says a decision log was written, but it is missing") : problemFinding(state as Extract<FileState, { kind: "problem" }>, file));
    return 0;
  }
  const incomplete = s.decision_log === "incomplete";
  const result = checkLog({
    file,
    bytes: state.bytes,
    maxLines: BOUNDS.decisionLines,
    written,
    prefixSha256: prefix,
    tailAllowed: incomplete,
    shape: DECISION_LINE,
    fileSha256: state.sha256,
    type: DECISION_TYPE,
    source: stop.source,
    sessionId: s.session_id,
    idFor: (seq) => decisionEventId(s.session_id, seq),
    codes: { count: "decision_count_mismatch", digest: "decision_digest_mismatch", record: "decision_record_invalid", seq: "decision_seq_gap", session: "decision_session_mismatch", tail: "decision_partial_tail" },
  });
  findings.push(...result.findings);
  if (incomplete) {
    findings.push(lossFinding("decision_events_lost", file, `evidence was lost: ${written} written, ${dropped} dropped (known loss, recorded by the producer)`));
  }
  return result.verified;
}

function checkReceipts(input: CaptureInput, stop: StopRecordT, options: VerifyOptions, findings: Finding[]): void {
  const file = CAPTURE_FILES.receipts;
  const state = input.files[file];
  const present = !(state.kind === "problem" && state.problem === "missing");
  const accounting = stop.data.receipts;
  if (!present) {
    if (options.requireReceipts) findings.push(unknownFinding("receipts_missing", file, "receipts are required (--require-receipts) but missing"));
    else if (accounting !== null) findings.push(unknownFinding("receipts_missing", file, "session-stop accounts for receipts, but the file is missing"));
    return;
  }
  if (accounting === null) {
    findings.push(unknownFinding("receipts_accounting_missing", CAPTURE_FILES.stop, "receipts are present but session-stop has no receipts accounting"));
    return;
  }
  if (state.kind !== "read") {
    findings.push(problemFinding(state as Extract<FileState, { kind: "problem" }>, file));
    return;
  }
  const s = stop.data;
  const result = checkLog({
    file,
    bytes: state.bytes,
    maxLines: BOUNDS.receiptLines,
    written: accounting.written,
    prefixSha256: accounting.prefix_sha256,
    tailAllowed: accounting.dropped > 0,
    shape: RECEIPT_LINE,
    fileSha256: state.sha256,
    type: RECEIPT_TYPE,
    source: stop.source,
    sessionId: s.session_id,
    idFor: (seq) => receiptEventId(s.session_id, seq),
    codes: { count: "receipts_count_mismatch", digest: "receipts_digest_mismatch", record: "receipt_record_invalid", seq: "receipt_seq_gap", session: "receipt_session_mismatch", tail: "receipts_partial_tail" },
  });
  findings.push(...result.findings);
  if (accounting.dropped > 0) findings.push(lossFinding("receipts_lost", file, `${accounting.dropped} receipts dropped (known loss)`));
}
