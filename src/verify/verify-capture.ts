/**
 * Capture verification (verify.md "Checks", "With keys"). Pure: file states in, report out — no
 * I/O, no clock.
 *
 * v1 captures (vigil.capture.v1) are checked as they always were; they were never signed, so
 * keys make them `signature_missing`. v2 captures (vigil.capture.v2) are also checked along every
 * log's hash chain and against the stop record's chain heads, keys or not; with keys the envelope,
 * its statement and the checkpoints must hold too (authenticate-capture.ts). A v2 session that
 * died after a signed checkpoint has its own path (checkpointed-capture.ts).
 */
import type { TrustedKey } from "../evidence/dsse.ts";
import { CAPTURE_FILES, CAPTURE_FORMAT, STOP_TYPE, STOP_TYPE_V2, stopEventId } from "../evidence/format.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import { authenticateCapture, checkCaptureStatement } from "./authenticate-capture.ts";
import type { CaptureInput } from "./capture-input.ts";
import { checkCheckpointCount, checkStopChains } from "./capture-chains.ts";
import { checkDecisions, checkReceipts } from "./check-accounting.ts";
import { checkContextPair } from "./check-context.ts";
import { checkManifest } from "./check-manifest.ts";
import { diedAfterCheckpoints, verifyCheckpointed } from "./checkpointed-capture.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import type { RecomputedChain } from "./log-chain.ts";
import { readRecord } from "./read-record.ts";
import { type Authentication, type VerifyReport, buildReport, notAuthenticated } from "./report.ts";
import { type StopRecordT, StopRecord, StopRecordV2, type StopRecordV2T } from "./schemas.ts";

export type { Authentication, VerifyReport } from "./report.ts";

export interface VerifyOptions {
  requireReceipts: boolean;
  /** Keys from --public-key / --trusted-keys; none: the capture is checked but not authenticated. */
  trusted?: readonly TrustedKey[];
}

export function verifyCapture(input: CaptureInput, options: VerifyOptions): VerifyReport {
  const trusted = options.trusted ?? [];
  const keysGiven = trusted.length > 0;
  const findings: Finding[] = [];
  const checked = checkManifest(input, findings);
  const version = checked?.version ?? versionOnDisk(input);
  if (version === 2 && keysGiven && diedAfterCheckpoints(input)) return verifyCheckpointed(input, trusted);
  const manifest = checked?.manifest ?? null;
  const stopFile = CAPTURE_FILES.stop;
  const stop = readRecord(input.files[stopFile], stopFile, version === 2 ? StopRecordV2 : StopRecord, findings) as StopRecordT | null;
  if (stop === null) {
    const state = input.files[stopFile];
    if (state.kind === "problem" && state.problem === "missing") {
      findings.push(unknownFinding("stop_missing", stopFile, "no session-stop record: the session's ending is unknown"));
    }
    if (keysGiven) findings.push(...(version === 1 ? [v1Unsigned()] : checkCaptureStatement(input, trusted).findings));
    return buildReport(findings, { session_id: null, server: null, decisions: { written: null, dropped: null, verified: 0 }, authentication: notAuthenticated(keysGiven) });
  }
  const d = stop.data;
  const sid = d.session_id;
  const stopType = version === 2 ? STOP_TYPE_V2 : STOP_TYPE;
  if (stop.specversion !== "1.0" || stop.type !== stopType) findings.push(unknownFinding("envelope_invalid", stopFile, `not a ${stopType} event`));
  if (stop.id !== stopEventId(sid)) findings.push(unknownFinding("stop_id_mismatch", stopFile, `id ${stop.id} is not evt_stop_<session_id>`));
  if (manifest) {
    if (manifest.event_source !== stop.source) findings.push(unknownFinding("source_mismatch", stopFile, "source differs from the manifest's event_source"));
    if (manifest.session_id !== sid) findings.push(unknownFinding("manifest_mismatch", CAPTURE_FILES.manifest, "session_id differs from the stop record's"));
    if (manifest.server_id !== d.server_id) findings.push(unknownFinding("manifest_mismatch", CAPTURE_FILES.manifest, "server_id differs from the stop record's"));
  }
  checkContextPair(input, stop, findings);
  const decisions = checkDecisions(input, stop, version, findings);
  const receipts = checkReceipts(input, stop, version, options.requireReceipts, findings);
  let authentication: Authentication = notAuthenticated(keysGiven);
  if (version === 2) {
    const v2 = stop as StopRecordV2T;
    const chains = new Map<string, RecomputedChain>();
    if (decisions.chain !== null) chains.set(CAPTURE_FILES.decisions, decisions.chain);
    if (receipts.chain !== null) chains.set(CAPTURE_FILES.receipts, receipts.chain);
    findings.push(...checkStopChains(input, v2, chains), ...checkCheckpointCount(input, v2));
    if (keysGiven) {
      const auth = authenticateCapture({ input, trusted, stop: v2, manifest, chains });
      findings.push(...auth.findings);
      authentication = auth.authentication;
    }
  } else if (keysGiven) {
    findings.push(v1Unsigned());
  }
  return buildReport(findings, {
    session_id: sid,
    server: { exit_code: d.exit_code, signal: d.signal },
    decisions: { written: d.decision_events_written, dropped: d.decision_events_dropped, verified: decisions.verified },
    authentication,
  });
}

const v1Unsigned = () =>
  unknownFinding("signature_missing", CAPTURE_FILES.envelope, `a ${CAPTURE_FORMAT} capture: that format is never signed, so it cannot be authenticated`);

/**
 * The format version when the manifest cannot say (missing or unreadable): the stop record's type,
 * else whether there are checkpoints or chained log lines. Only chooses which checks apply; each
 * check still holds the files to that version's shapes.
 */
function versionOnDisk(input: CaptureInput): 1 | 2 {
  const stop = firstRecord(CAPTURE_FILES.stop, input, false) as { type?: unknown } | null;
  if (stop !== null) return stop.type === STOP_TYPE_V2 ? 2 : 1;
  const cp = input.files[CAPTURE_FILES.checkpoints];
  if (!(cp.kind === "problem" && cp.problem === "missing")) return 2;
  for (const log of [CAPTURE_FILES.decisions, CAPTURE_FILES.receipts] as const) {
    const line = firstRecord(log, input, true) as { vigilseq?: unknown } | null;
    if (line !== null) return "vigilseq" in line ? 2 : 1;
  }
  return 1;
}

/** The file's record (or its first line), parsed strictly, when it is an object; else null. */
function firstRecord(name: keyof CaptureInput["files"], input: CaptureInput, firstLine: boolean): object | null {
  const state = input.files[name];
  if (state.kind !== "read") return null;
  const nl = firstLine ? state.bytes.indexOf(0x0a) : -1;
  if (firstLine && nl < 0) return null;
  const r = parseStrictJson(firstLine ? state.bytes.subarray(0, nl) : state.bytes);
  return r.ok && typeof r.value === "object" && r.value !== null && !Array.isArray(r.value) ? r.value : null;
}
