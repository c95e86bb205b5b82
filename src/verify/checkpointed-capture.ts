/**
 * A v2 capture whose session died before its stop record (SIGKILL of vigil, a crash): no stop
 * record, no manifest, no envelope, but signed checkpoints. Checked against trusted keys it is
 * `incomplete` (`stop_missing_checkpointed`) when the checkpoints are valid and every complete line
 * of every log links along its chain; records after the last checkpoint are `not_covered` (a known
 * loss: nothing signs them). Anything else is `unknown`. Pure.
 */
import type { TrustedKey } from "../evidence/dsse.ts";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import type { CaptureInput } from "./capture-input.ts";
import { type CheckpointIdentity, verifyCaptureCheckpoints } from "./capture-chains.ts";
import { type LogKind, checkCaptureLog, logFile } from "./check-accounting.ts";
import { readContext } from "./check-context.ts";
import { type Finding, lossFinding, unknownFinding } from "./findings.ts";
import type { RecomputedChain } from "./log-chain.ts";
import { problemFinding } from "./read-record.ts";
import { type VerifyReport, buildReport } from "./report.ts";

/** The state this path is for: no stop record, manifest or envelope, and a checkpoints file. */
export function diedAfterCheckpoints(input: CaptureInput): boolean {
  const missing = (name: keyof CaptureInput["files"]) => {
    const s = input.files[name];
    return s.kind === "problem" && s.problem === "missing";
  };
  return missing(CAPTURE_FILES.stop) && missing(CAPTURE_FILES.manifest) && missing(CAPTURE_FILES.envelope) && !missing(CAPTURE_FILES.checkpoints);
}

export function verifyCheckpointed(input: CaptureInput, trusted: readonly TrustedKey[]): VerifyReport {
  const findings: Finding[] = [];
  const ctx = readContext(input, findings);
  // Without a context record the session is the one the (signed) checkpoints name; checkCheckpoints
  // then holds every checkpoint to it under a trusted signature.
  const identity: CheckpointIdentity = ctx !== null ? { sessionId: ctx.data.session_id, eventSource: ctx.source } : identityOfFirstCheckpoint(input);
  const owner = { source: identity.eventSource, sessionId: identity.sessionId, version: 2 as const };
  const chains = new Map<string, RecomputedChain>();
  let verified = 0;
  for (const kind of ["decisions", "receipts"] as LogKind[]) {
    const file = logFile(kind);
    const state = input.files[file];
    if (state.kind === "problem") {
      if (state.problem !== "missing") findings.push(problemFinding(state, file));
      continue;
    }
    if (state.kind !== "read") continue;
    // The session died mid-write at worst: a torn last line is expected, and there is no accounting to hold the log to.
    const r = checkCaptureLog(kind, state, owner, null, true);
    findings.push(...r.findings);
    if (r.chain !== null) chains.set(file, r.chain);
    if (kind === "decisions") verified = r.verified;
  }
  const cp = verifyCaptureCheckpoints(input, trusted, identity, chains, true);
  findings.push(...cp.findings);
  for (const stray of input.strayEntries) findings.push(unknownFinding("manifest_file_unlisted", stray.slice(0, 128), "unexpected entry in the capture directory"));
  const result = cp.result;
  const covered = result !== null && result.valid > 0 ? result.covered : null;
  if (covered === null) {
    findings.push(unknownFinding("stop_missing", CAPTURE_FILES.stop, "no session-stop record and no valid signed checkpoint: the session's ending is unknown"));
  } else {
    const parts: string[] = [];
    for (const [name, chain] of chains) {
      const signed = Math.min(covered[name]?.count ?? 0, chain.head.count);
      parts.push(`${name} ${signed} of ${chain.head.count} records`);
      const after = chain.head.count - signed;
      if (after > 0) findings.push(lossFinding("not_covered", name, `${after} records after the last signed checkpoint: no signature covers them`));
    }
    const what = parts.length > 0 ? parts.join(", ") : "no log records";
    findings.push(lossFinding("stop_missing_checkpointed", CAPTURE_FILES.stop, `no session-stop record (the session ended without one); its last signed checkpoint (${result!.valid} valid) covers ${what}`));
  }
  const authenticated = covered !== null && cp.findings.length === 0;
  return buildReport(findings, {
    session_id: identity.sessionId || null,
    server: null,
    decisions: { written: null, dropped: null, verified },
    authentication: {
      authenticated,
      keyid: result?.keyids[0] ?? null,
      covered: authenticated ? { files: [], logs: covered!, checkpoints: result!.valid } : null,
      keysGiven: true,
    },
  });
}

/** The session and event source the first checkpoint line claims (not yet trusted), or empty strings. */
function identityOfFirstCheckpoint(input: CaptureInput): CheckpointIdentity {
  const none = { sessionId: "", eventSource: "" };
  const state = input.files[CAPTURE_FILES.checkpoints];
  if (state.kind !== "read") return none;
  const nl = state.bytes.indexOf(0x0a);
  const line = parseStrictJson(state.bytes.subarray(0, nl < 0 ? state.bytes.length : nl), { maxDepth: 8 });
  const env = line.ok ? (line.value as { payload?: unknown }) : null;
  if (env === null || typeof env !== "object" || typeof env.payload !== "string") return none;
  const payload = parseStrictJson(Buffer.from(env.payload, "base64"), { maxDepth: 8 });
  const p = payload.ok ? (payload.value as { session_id?: unknown; event_source?: unknown }) : null;
  if (p === null || typeof p !== "object" || typeof p.session_id !== "string" || typeof p.event_source !== "string") return none;
  return { sessionId: p.session_id, eventSource: p.event_source };
}
