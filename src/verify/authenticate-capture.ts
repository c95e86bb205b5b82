/**
 * A closed v2 capture checked against trusted keys (verify.md "With keys"): the envelope
 * (capture.dsse.json) signs a statement whose subjects are exactly the capture's files and whose
 * predicate agrees with the stop record, the manifest and the recomputed chains; every checkpoint
 * is signed and names heads of those chains, as many as the stop record says. Pure.
 */
import type { TrustedKey } from "../evidence/dsse.ts";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { WRAP_SESSION_PREDICATE } from "../evidence/statement.ts";
import type { CaptureInput, FileState } from "./capture-input.ts";
import { checkpointLines, headsOf, verifyCaptureCheckpoints } from "./capture-chains.ts";
import { type StatementResult, checkStatement } from "./check-statement.ts";
import type { Finding } from "./findings.ts";
import type { RecomputedChain } from "./log-chain.ts";
import type { Authentication } from "./report.ts";
import type { ManifestT, StopRecordV2T } from "./schemas.ts";
import { checkWrapPredicate } from "./wrap-predicate.ts";

export interface CaptureAuthenticationInput {
  input: CaptureInput;
  trusted: readonly TrustedKey[];
  stop: StopRecordV2T;
  manifest: ManifestT | null;
  /** The recomputed chains of the logs that were checked, by file name. */
  chains: ReadonlyMap<string, RecomputedChain>;
}

/** Every capture file but the envelope: what its statement's subjects must be. */
export function signableFiles(input: CaptureInput): Map<string, FileState> {
  const files = new Map<string, FileState>();
  for (const name of Object.values(CAPTURE_FILES)) if (name !== CAPTURE_FILES.envelope) files.set(name, input.files[name]);
  return files;
}

/** The envelope and its subjects alone: all that can be checked when the stop record cannot be read. */
export function checkCaptureStatement(input: CaptureInput, trusted: readonly TrustedKey[]): StatementResult {
  const file = CAPTURE_FILES.envelope;
  return checkStatement({
    file,
    state: input.files[file],
    trusted,
    predicateType: WRAP_SESSION_PREDICATE,
    files: signableFiles(input),
    missingMessage: "no capture.dsse.json: the capture is not signed, so it cannot be authenticated",
  });
}

export function authenticateCapture(x: CaptureAuthenticationInput): { findings: Finding[]; authentication: Authentication } {
  const statement = checkCaptureStatement(x.input, x.trusted);
  const findings = [...statement.findings];
  const heads = headsOf(x.chains);
  let covered: Authentication["covered"] = null;
  if (statement.predicate !== null) {
    const p = checkWrapPredicate(statement.predicate, { stop: x.stop, manifest: x.manifest, logs: heads, checkpoints: checkpointLines(x.input) ?? 0 });
    findings.push(...p.findings);
    if (p.predicate !== null) covered = { files: statement.subjects ?? [], logs: p.predicate.logs, checkpoints: p.predicate.checkpoints.written };
  }
  const identity = { sessionId: x.stop.data.session_id, eventSource: x.stop.source };
  // A stop record was written, so the checkpoints file was closed whole: a torn line is tampering.
  findings.push(...verifyCaptureCheckpoints(x.input, x.trusted, identity, x.chains, false).findings);
  const authenticated = statement.keyid !== null && findings.length === 0;
  return {
    findings,
    authentication: { authenticated, keyid: statement.keyid, covered: authenticated ? covered : null, keysGiven: true },
  };
}
