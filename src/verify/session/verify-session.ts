/**
 * `vigil verify sessions/<name>`: the evidence of one serve session — its decision log
 * (decisions.ndjson), its event ledger (events.ndjson), and with keys its signed checkpoints
 * (checkpoints.ndjson) and stop envelopes (stops/<n>.dsse.json). Pure: file states in, report out.
 *
 * What the verdict means for a serve session (a session is never finished: every stop of it adds
 * an envelope, and a running daemon keeps appending):
 *
 * - `closed` describes the files as they stand when verify read them, not the session: a daemon
 *   still running can append after verify read them. It says that every complete line of both logs
 *   is a record of this session whose hash chain links from the log's anchor to its last line
 *   (nothing removed, reordered or inserted before it); that every event the ledger queued
 *   (`received` with a seq, or a `gap` with one) was delivered or dropped exactly once and none is
 *   pending; and, with `--public-key`/`--trusted-keys`, that every checkpoint and stop envelope
 *   verifies under a trusted key and agrees with the logs, and that the last stop or checkpoint
 *   covers every complete line of both logs. It cannot say that nothing was written after the last
 *   signed point and then removed: a log cut back to exactly its last checkpoint or stop looks like
 *   one that ended there. Without keys it authenticates nothing: anyone who can write these files
 *   can forge a consistent session.
 * - `incomplete`: everything above holds except for a known gap — events still pending (listed by
 *   seq and event id), or, with keys, records (or an unfinished last line) after the last signed
 *   point. A live session between two checkpoints, or with a batch not yet delivered, is normally
 *   `incomplete`.
 * - `unknown`: anything else — a file over its bound, a malformed or foreign record, a broken
 *   chain, a delivery of an event never received, a bad or untrusted signature, an envelope that
 *   disagrees with the logs, no envelope at all when keys are given, or (without keys) an
 *   unfinished last line, which nothing vouches for.
 */
import { type ChainHead, chainAnchor } from "../../evidence/chain.ts";
import type { TrustedKey } from "../../evidence/dsse.ts";
import { DECISION_TYPE, SESSION_FILES, decisionEventId, ledgerEventId } from "../../evidence/format.ts";
import { checkCheckpoints } from "../check-checkpoints.ts";
import type { FileState } from "../capture-input.ts";
import { type Finding, type Verdict, lossFinding, unknownFinding, verdictOf } from "../findings.ts";
import { problemFinding } from "../read-record.ts";
import { checkStopClaims, type FilePrefixes, prefixDigests } from "./check-stops.ts";
import { type LedgerCounts, LedgerAccounting, type PendingEvent } from "./ledger-accounting.ts";
import { LEDGER_LINES, SESSION_DECISION_LINE } from "./record-shapes.ts";
import { type LogScan, emptyScan, scanLog } from "./scan-log.ts";
import { SESSION_BOUNDS, type SessionInput } from "./session-input.ts";
import { type StopClaim, readStopClaims, wantedPrefixes } from "./stop-claims.ts";

/** Who vouches for the session: report.ts's Authentication, plus how many envelopes of each kind verified. */
export interface SessionAuthentication {
  /** Keys were given, at least one envelope verified, none failed, and everything they cover agrees with the logs. */
  authenticated: boolean;
  /** The first trusted key whose signature verified (also when what it covers then disagreed), or null. */
  keyid: string | null;
  /** Every trusted key that signed a verified envelope (a session's stops may span a key rotation). */
  keyids: string[];
  keysGiven: boolean;
  /** Verified stop envelopes and checkpoints. */
  stops: number;
  checkpoints: number;
  /** What the last stop or checkpoint (the one covering more) vouches for, only when authenticated. */
  covered: { files: string[]; logs: Record<string, ChainHead>; checkpoints: number } | null;
}

export interface SessionReport {
  kind: "serve_session";
  verdict: Verdict;
  reasons: Finding[];
  session_id: string;
  events: LedgerCounts & { pending: PendingEvent[] };
  decisions: { written: number; verified: number };
  authentication: SessionAuthentication;
}

export interface SessionVerifyOptions {
  /** Trusted public keys; none: the session is checked but not authenticated. */
  trusted: readonly TrustedKey[];
}

const D = SESSION_FILES.decisions;
const E = SESSION_FILES.events;
const C = SESSION_FILES.checkpoints;

export function verifySession(input: SessionInput, options: SessionVerifyOptions): SessionReport {
  const name = input.name;
  const keys = options.trusted.length > 0;
  const findings: Finding[] = [];
  const stops = keys ? readStopClaims(input.stops, options.trusted, name) : { claims: [], envelopes: 0, findings: [] };
  const authFailures: Finding[] = [...stops.findings];
  const want = wantedPrefixes(stops.claims);
  const source = { value: null as string | null };
  const anchorOf = (log: string) => (s: string) => chainAnchor(s, name, log);

  const decisions = scanFile(input.decisions, D, findings, source, anchorOf(D), (state) =>
    scanLog({
      file: D,
      bytes: state,
      maxLines: SESSION_BOUNDS.logLines,
      sessionId: name,
      source,
      anchor: anchorOf(D),
      shapeFor: (type) => (type === DECISION_TYPE ? SESSION_DECISION_LINE : null),
      idFor: (seq) => decisionEventId(name, seq),
      dataProblem: (data, seq) => (data.seq === seq ? null : { code: "decision_seq_gap", message: `seq ${data.seq}, expected ${seq} (its vigilseq)` }),
      prefixAt: want.get(D) ?? new Set(),
      codes: { record: "decision_record_invalid", session: "decision_session_mismatch" },
    }),
  );

  const ledger = new LedgerAccounting(E);
  const pendingAgrees = new Map<number, boolean>();
  const claimsAt = new Map<number, StopClaim[]>();
  for (const c of stops.claims) {
    const at = c.logs[E]?.count ?? 0;
    claimsAt.set(at, [...(claimsAt.get(at) ?? []), c]);
  }
  const afterCount = (count: number) => {
    for (const c of claimsAt.get(count) ?? []) pendingAgrees.set(c.n, ledger.pendingEquals(c.pending));
  };
  const events = scanFile(input.events, E, findings, source, anchorOf(E), (state) =>
    scanLog({
      file: E,
      bytes: state,
      maxLines: SESSION_BOUNDS.logLines,
      sessionId: name,
      source,
      anchor: anchorOf(E),
      // Own members only: a record's type "constructor" must not find Object's.
      shapeFor: (type) => (typeof type === "string" && Object.hasOwn(LEDGER_LINES, type) ? LEDGER_LINES[type]! : null),
      idFor: (seq) => ledgerEventId(name, seq),
      dataProblem: ledgerDataProblem,
      onRecord: (rec, line) => ledger.apply(rec.type, rec.data, line),
      afterCount,
      prefixAt: want.get(E) ?? new Set(),
      codes: { record: "ledger_record_invalid", session: "ledger_session_mismatch" },
    }),
  );
  if (input.events.kind !== "read") afterCount(0);
  findings.push(...ledger.findings());
  // With no record at all, the envelopes say which event source the (empty) chains start from.
  if (source.value === null) source.value = stops.claims[0]?.eventSource ?? null;

  let covered: Record<string, ChainHead> | null = null;
  let checkpointsValid = 0;
  const keyids = new Set(stops.claims.map((c) => c.keyid));
  if (keys) {
    const scans: Record<string, LogScan> = { [D]: decisions, [E]: events };
    let cpPrefixes: FilePrefixes = { lines: 0, prefix: new Map() };
    let cpCovered: Record<string, { count: number }> | null = null;
    const cp = input.checkpoints;
    if (cp.kind === "read") {
      cpPrefixes = prefixDigests(cp.bytes, want.get(C) ?? new Set());
      const r = checkCheckpoints({
        bytes: cp.bytes,
        maxLines: SESSION_BOUNDS.checkpointLines,
        trusted: options.trusted,
        sessionId: name,
        eventSource: source.value ?? "",
        headAt: (log, count) => scans[log]?.headAt(count) ?? null,
        // A daemon killed mid-write leaves a torn checkpoint line (cut at its next start): what
        // the checkpoints before it cover still holds.
        tailAllowed: true,
      });
      authFailures.push(...r.issues.map((i) => unknownFinding(i.code, C, i.message)));
      checkpointsValid = r.valid;
      cpCovered = r.covered;
      for (const k of r.keyids) keyids.add(k);
    } else if (cp.kind === "problem" && cp.problem !== "missing") {
      authFailures.push(problemFinding(cp, C));
    }
    const present = (file: string) => {
      const state = file === D ? input.decisions : file === E ? input.events : input.checkpoints;
      return !(state.kind === "problem" && state.problem === "missing");
    };
    authFailures.push(...checkStopClaims(stops.claims, { source: source.value, scans, present, checkpoints: cpPrefixes, pendingAgrees }));
    if (stops.envelopes === 0 && cpPrefixes.lines === 0) {
      authFailures.push(unknownFinding("signature_missing", C, "keys were given, but the session has no signed checkpoint and no stop envelope"));
    }
    const last = stops.claims.at(-1);
    if (last !== undefined || checkpointsValid > 0) {
      covered = {};
      for (const [log, scan] of Object.entries(scans)) {
        const count = Math.max(cpCovered?.[log]?.count ?? 0, last?.logs[log]?.count ?? 0);
        const head = scan.headAt(count);
        if (head !== null) covered[log] = { count, head };
        if (scan.lines > count) {
          findings.push(lossFinding("not_covered", log, `${count} of ${scan.lines} records are covered by the last checkpoint or stop; the ${scan.lines - count} after them ${scan.lines - count === 1 ? "is" : "are"} signed by nothing`));
        }
      }
    }
  }
  for (const scan of [decisions, events]) {
    if (scan.tailBytes === 0) continue;
    const what = `${scan.tailBytes} bytes after the last newline (an unfinished record)`;
    if (keys) findings.push(lossFinding("not_covered", scan.file, `${what}, after the last signed record`));
    else findings.push(unknownFinding(scan.file === D ? "decision_partial_tail" : "ledger_partial_tail", scan.file, `${what}; without keys nothing vouches for what came before it`));
  }
  findings.push(...authFailures);
  const authenticated = keys && stops.claims.length + checkpointsValid > 0 && authFailures.length === 0;
  return {
    kind: "serve_session",
    verdict: verdictOf(findings),
    reasons: findings,
    session_id: name,
    events: { ...ledger.counts, pending: ledger.pendingEvents() },
    decisions: { written: decisions.lines, verified: decisions.verified },
    authentication: {
      authenticated,
      keyid: keyids.values().next().value ?? null,
      keyids: [...keyids],
      keysGiven: keys,
      stops: stops.claims.length,
      checkpoints: checkpointsValid,
      covered: authenticated && covered !== null ? { files: coveredFiles(covered, checkpointsValid), logs: covered, checkpoints: checkpointsValid } : null,
    },
  };
}

/** The scan of a log that was read, or an empty one with the reason it was not. */
function scanFile(state: FileState, file: string, findings: Finding[], source: { value: string | null }, anchor: (s: string) => string, scan: (bytes: Uint8Array) => LogScan): LogScan {
  if (state.kind === "read") {
    const r = scan(state.bytes);
    findings.push(...r.findings);
    return r;
  }
  if (state.kind === "problem" && state.problem !== "missing") findings.push(problemFinding(state, file));
  return emptyScan(file, () => (source.value === null ? null : anchor(source.value)));
}

function ledgerDataProblem(data: Record<string, unknown>): { code: "ledger_record_invalid"; message: string } | null {
  if ("action" in data && data.seq === null && data.action !== "notify") return { code: "ledger_record_invalid", message: `a ${String(data.action)} event received without a queue seq` };
  if (Array.isArray(data.seqs) && Array.isArray(data.event_ids) && data.seqs.length !== data.event_ids.length) {
    return { code: "ledger_record_invalid", message: `delivers ${data.seqs.length} seqs but names ${data.event_ids.length} event ids` };
  }
  return null;
}

/** The files a signature vouches for (a prefix of each): the logs it covers records of, and the checkpoints. */
function coveredFiles(logs: Record<string, ChainHead>, checkpoints: number): string[] {
  const files = Object.entries(logs)
    .filter(([, h]) => h.count > 0)
    .map(([name]) => name);
  return checkpoints > 0 ? [...files, C] : files;
}
