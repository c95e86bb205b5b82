/**
 * The logs of a capture against the stop record's accounting (verify.md checks 4 and 5): the
 * decision log when one was requested, the receipts when present. A v2 capture's logs are chained
 * and their chains are recomputed on the way (check-log.ts).
 */
import { chainAnchor } from "../evidence/chain.ts";
import { CAPTURE_FILES, DECISION_TYPE, RECEIPT_TYPE, decisionEventId, receiptEventId } from "../evidence/format.ts";
import { BOUNDS, type CaptureInput, type FileState } from "./capture-input.ts";
import { type LogExpectation, type LogResult, checkLog } from "./check-log.ts";
import { type Finding, lossFinding, unknownFinding } from "./findings.ts";
import { DECISION_LINE, DECISION_LINE_V2, RECEIPT_LINE, RECEIPT_LINE_V2 } from "./line-shapes.ts";
import type { RecomputedChain } from "./log-chain.ts";
import { problemFinding } from "./read-record.ts";
import type { StopRecordT } from "./schemas.ts";

/** Whose log it is: the chain anchor and every record's identity come from here. */
export interface LogOwner {
  source: string;
  sessionId: string;
  version: 1 | 2;
}

export type LogKind = "decisions" | "receipts";

const LOGS = {
  decisions: {
    file: CAPTURE_FILES.decisions,
    maxLines: BOUNDS.decisionLines,
    shape: { 1: DECISION_LINE, 2: DECISION_LINE_V2 },
    type: DECISION_TYPE,
    idFor: decisionEventId,
    codes: { count: "decision_count_mismatch", digest: "decision_digest_mismatch", record: "decision_record_invalid", seq: "decision_seq_gap", session: "decision_session_mismatch", tail: "decision_partial_tail" },
  },
  receipts: {
    file: CAPTURE_FILES.receipts,
    maxLines: BOUNDS.receiptLines,
    shape: { 1: RECEIPT_LINE, 2: RECEIPT_LINE_V2 },
    type: RECEIPT_TYPE,
    idFor: receiptEventId,
    codes: { count: "receipts_count_mismatch", digest: "receipts_digest_mismatch", record: "receipt_record_invalid", seq: "receipt_seq_gap", session: "receipt_session_mismatch", tail: "receipts_partial_tail" },
  },
} as const;

export const logFile = (kind: LogKind) => LOGS[kind].file;

/** One log of a capture, read (`state.kind === "read"`), checked per record and, in v2, along its chain. */
export function checkCaptureLog(
  kind: LogKind,
  state: Extract<FileState, { kind: "read" }>,
  owner: LogOwner,
  accounting: LogExpectation["accounting"],
  tailAllowed: boolean,
): LogResult {
  const l = LOGS[kind];
  return checkLog({
    file: l.file,
    bytes: state.bytes,
    maxLines: l.maxLines,
    accounting,
    ...(owner.version === 2 ? { chainAnchor: chainAnchor(owner.source, owner.sessionId, l.file) } : {}),
    tailAllowed,
    shape: l.shape[owner.version],
    fileSha256: state.sha256,
    type: l.type,
    source: owner.source,
    sessionId: owner.sessionId,
    idFor: (seq) => l.idFor(owner.sessionId, seq),
    codes: l.codes,
  });
}

export interface AccountedLog {
  verified: number;
  /** The recomputed chain (v2, when the log was read and within its bound). */
  chain: RecomputedChain | null;
}

const NONE: AccountedLog = { verified: 0, chain: null };

export function checkDecisions(input: CaptureInput, stop: StopRecordT, version: 1 | 2, findings: Finding[]): AccountedLog {
  const file = CAPTURE_FILES.decisions;
  const state = input.files[file];
  const s = stop.data;
  const present = !(state.kind === "problem" && state.problem === "missing");
  if (s.decision_log === "absent") {
    if (present) findings.push(unknownFinding("decision_log_unexpected", file, "present, but session-stop says no decision log was requested"));
    if (s.decision_events_written !== null || s.decision_events_dropped !== null || s.decision_prefix_sha256 !== null) {
      findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, "accounting fields set for an absent decision log"));
    }
    return NONE;
  }
  if (s.decision_log === "temporary" || s.decision_log === "unknown") {
    findings.push(unknownFinding("decision_accounting_unknown", CAPTURE_FILES.stop, `decision_log is ${s.decision_log}: no retained accounting to check`));
    return NONE;
  }
  const written = s.decision_events_written;
  const dropped = s.decision_events_dropped;
  const prefix = s.decision_prefix_sha256;
  if (written === null || dropped === null || prefix === null) {
    findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, `decision_log is ${s.decision_log} but its accounting is null`));
    return NONE;
  }
  if (s.decision_log === "complete" && dropped > 0) {
    findings.push(unknownFinding("decision_accounting_inconsistent", CAPTURE_FILES.stop, `decision_log is complete but ${dropped} events were dropped`));
  }
  if (state.kind !== "read") {
    findings.push(state.kind === "problem" && state.problem === "missing" ? unknownFinding("decision_log_missing", file, "session-stop says a decision log was written, but it is missing") : problemFinding(state as Extract<FileState, { kind: "problem" }>, file));
    return NONE;
  }
  const incomplete = s.decision_log === "incomplete";
  const result = checkCaptureLog("decisions", state, { source: stop.source, sessionId: s.session_id, version }, { written, prefixSha256: prefix }, incomplete);
  findings.push(...result.findings);
  if (incomplete) {
    findings.push(lossFinding("decision_events_lost", file, `evidence was lost: ${written} written, ${dropped} dropped (known loss, recorded by the producer)`));
  }
  return { verified: result.verified, chain: result.chain };
}

export function checkReceipts(input: CaptureInput, stop: StopRecordT, version: 1 | 2, requireReceipts: boolean, findings: Finding[]): AccountedLog {
  const file = CAPTURE_FILES.receipts;
  const state = input.files[file];
  const present = !(state.kind === "problem" && state.problem === "missing");
  const accounting = stop.data.receipts;
  if (!present) {
    if (requireReceipts) findings.push(unknownFinding("receipts_missing", file, "receipts are required (--require-receipts) but missing"));
    else if (accounting !== null) findings.push(unknownFinding("receipts_missing", file, "session-stop accounts for receipts, but the file is missing"));
    return NONE;
  }
  if (accounting === null) {
    findings.push(unknownFinding("receipts_accounting_missing", CAPTURE_FILES.stop, "receipts are present but session-stop has no receipts accounting"));
    return NONE;
  }
  if (state.kind !== "read") {
    findings.push(problemFinding(state as Extract<FileState, { kind: "problem" }>, file));
    return NONE;
  }
  const owner = { source: stop.source, sessionId: stop.data.session_id, version };
  const result = checkCaptureLog("receipts", state, owner, { written: accounting.written, prefixSha256: accounting.prefix_sha256 }, accounting.dropped > 0);
  findings.push(...result.findings);
  if (accounting.dropped > 0) findings.push(lossFinding("receipts_lost", file, `${accounting.dropped} receipts dropped (known loss)`));
  return { verified: result.verified, chain: result.chain };
}
