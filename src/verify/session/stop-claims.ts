/**
 * The stop envelopes of a serve session (`stops/<n>.dsse.json`, one per stop of the session),
 * read into what each claims: every envelope must verify under a trusted key (DSSE, in-toto
 * payload type) and carry an in-toto Statement v1 with the serve-stop predicate of this session,
 * numbered as its file. What the claims say about the logs is checked later, against one pass over
 * each log (check-stops.ts). Pure.
 */
import * as v from "valibot";
import type { ChainHead } from "../../evidence/chain.ts";
import { IN_TOTO_PAYLOAD_TYPE, type TrustedKey, verifyEnvelope } from "../../evidence/dsse.ts";
import { SESSION_FILES } from "../../evidence/format.ts";
import { MAX_STOP_PENDING_LISTED } from "../../evidence/serve-stop.ts";
import { SERVE_STOP_PREDICATE, STATEMENT_TYPE } from "../../evidence/statement.ts";
import { parseStrictJson } from "../../shared/strict-json.ts";
import { type Finding, unknownFinding } from "../findings.ts";
import { problemFinding } from "../read-record.ts";
import { Hex64, Text, firstIssue } from "../schemas.ts";
import type { StopsState } from "./session-input.ts";

// Safe integers (not just integers): a seq or count past 2^53 cannot be compared exactly.
const Count = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const LogName = v.picklist([SESSION_FILES.decisions, SESSION_FILES.events]);
const SubjectName = v.picklist([SESSION_FILES.decisions, SESSION_FILES.events, SESSION_FILES.checkpoints]);

const ServeStopStatement = v.strictObject({
  _type: v.literal(STATEMENT_TYPE),
  subject: v.pipe(v.array(v.strictObject({ name: SubjectName, digest: v.strictObject({ sha256: Hex64 }) })), v.maxLength(3)),
  predicateType: v.literal(SERVE_STOP_PREDICATE),
  predicate: v.strictObject({
    session_id: Text,
    event_source: Text,
    policy_digest: v.nullable(Text),
    producer: v.strictObject({ name: v.literal("vigil"), version: Text }),
    stop: Count,
    reason: v.picklist(["shutdown", "reaped", "closed"]),
    logs: v.record(LogName, v.strictObject({ count: Count, head: Hex64 })),
    checkpoints: v.strictObject({ written: Count }),
    events: v.strictObject({ pending: v.pipe(v.array(Count), v.maxLength(MAX_STOP_PENDING_LISTED)), pending_count: Count, pending_sha256: Hex64 }),
  }),
});

/** What one verified stop envelope says. */
export interface StopClaim {
  n: number;
  file: string;
  keyid: string;
  eventSource: string;
  logs: Partial<Record<string, ChainHead>>;
  checkpointsWritten: number;
  /** The lowest pending seqs (ascending, at most MAX_STOP_PENDING_LISTED), how many there are, and the digest of them all. */
  pending: { listed: number[]; count: number; sha256: string };
  /** Subject name → sha256. */
  subjects: Map<string, string>;
}

export interface StopClaims {
  /** The stops whose envelope and statement hold, in number order. */
  claims: StopClaim[];
  /** Envelope files found (valid or not). */
  envelopes: number;
  findings: Finding[];
}

export function readStopClaims(stops: StopsState, trusted: readonly TrustedKey[], sessionId: string): StopClaims {
  const findings: Finding[] = [];
  if (stops.kind === "problem") return { claims: [], envelopes: 0, findings: [problemFinding(stops, SESSION_FILES.stopsDir)] };
  const claims: StopClaim[] = [];
  let expected = 1;
  for (const entry of stops.entries) {
    // Stops are numbered from 1 without holes: a missing one was removed.
    if (entry.n > expected) {
      const which = entry.n - 1 === expected ? `stop ${expected} is` : `stops ${expected} to ${entry.n - 1} are`;
      findings.push(unknownFinding("signature_missing", `${SESSION_FILES.stopsDir}/${expected}.dsse.json`, `${which} missing, but stop ${entry.n} exists`));
    }
    expected = entry.n + 1;
    if (entry.state.kind !== "read") {
      findings.push(problemFinding(entry.state as Extract<typeof entry.state, { kind: "problem" }>, entry.file));
      continue;
    }
    const claim = readClaim(entry.n, entry.file, entry.state.bytes, trusted, sessionId, findings);
    if (claim !== null) claims.push(claim);
  }
  return { claims, envelopes: stops.entries.length, findings };
}

function readClaim(n: number, file: string, bytes: Uint8Array, trusted: readonly TrustedKey[], sessionId: string, findings: Finding[]): StopClaim | null {
  const fail = (code: Finding["code"], message: string) => {
    findings.push(unknownFinding(code, file, message));
    return null;
  };
  const env = parseStrictJson(bytes, { maxDepth: 8 });
  if (!env.ok) return fail("envelope_invalid", env.message);
  const check = verifyEnvelope(env.value, trusted, IN_TOTO_PAYLOAD_TYPE);
  if (!check.ok) return fail(check.code, check.message);
  const payload = parseStrictJson(check.payload, { maxDepth: 8 });
  if (!payload.ok) return fail("envelope_invalid", `payload: ${payload.message}`);
  const r = v.safeParse(ServeStopStatement, payload.value);
  if (!r.success) return fail("envelope_invalid", `statement: ${firstIssue(r.issues)}`);
  const s = r.output;
  const p = s.predicate;
  if (p.session_id !== sessionId) return fail("predicate_mismatch", `names session ${JSON.stringify(p.session_id.slice(0, 64))}, not ${JSON.stringify(sessionId)} (the directory's name)`);
  if (p.stop !== n) return fail("predicate_mismatch", `is stop ${p.stop}, but its file is stop ${n}`);
  const { pending: listed, pending_count: count, pending_sha256: sha256 } = p.events;
  if (listed.length !== Math.min(count, MAX_STOP_PENDING_LISTED) || listed.some((seq, i) => i > 0 && seq <= listed[i - 1]!)) {
    return fail("predicate_mismatch", `lists ${listed.length} pending seqs for its ${count} pending events (expected the lowest ${Math.min(count, MAX_STOP_PENDING_LISTED)}, ascending)`);
  }
  const subjects = new Map<string, string>();
  for (const sub of s.subject) {
    if (subjects.has(sub.name)) return fail("envelope_invalid", `names subject ${sub.name} twice`);
    subjects.set(sub.name, sub.digest.sha256);
  }
  return { n, file, keyid: check.keyid, eventSource: p.event_source, logs: p.logs, checkpointsWritten: p.checkpoints.written, pending: { listed, count, sha256 }, subjects };
}

/** The counts each file's prefix digest is wanted at (a log's record count, the checkpoints' lines). */
export function wantedPrefixes(claims: readonly StopClaim[]): Map<string, Set<number>> {
  const want = new Map<string, Set<number>>();
  const add = (name: string, count: number) => {
    let set = want.get(name);
    if (set === undefined) want.set(name, (set = new Set()));
    set.add(count);
  };
  for (const c of claims) {
    for (const [name, head] of Object.entries(c.logs)) if (head !== undefined) add(name, head.count);
    add(SESSION_FILES.checkpoints, c.checkpointsWritten);
  }
  return want;
}
