/**
 * The predicate of a signed wrap capture (WRAP_SESSION_PREDICATE, written by wrap at close), and
 * what it must agree with: the stop record, the manifest, the recomputed chains and the
 * checkpoints file. Pure. Every field that differs is named in one `predicate_mismatch` finding.
 */
import * as v from "valibot";
import type { ChainHead } from "../evidence/chain.ts";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { canonicalJson } from "../shared/canonical-json.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { ChainHeads, Hex64, type ManifestT, NonNegInt, type StopRecordV2T, Text, firstIssue } from "./schemas.ts";

export const WrapPredicate = v.strictObject({
  session_id: Text,
  event_source: Text,
  server_id: Text,
  policy_digest: v.nullable(Text),
  producer: v.strictObject({ name: v.literal("vigil"), version: Text, binary_sha256: Hex64 }),
  stop: v.strictObject({
    session_end: Text,
    termination: Text,
    exit_code: v.nullable(v.pipe(v.number(), v.integer())),
    signal: v.nullable(NonNegInt),
    decision_log: Text,
    decision_events_written: v.nullable(NonNegInt),
    decision_events_dropped: v.nullable(NonNegInt),
    receipts: v.nullable(v.strictObject({ written: NonNegInt, dropped: NonNegInt })),
  }),
  logs: ChainHeads,
  checkpoints: v.strictObject({ written: NonNegInt }),
});
export type WrapPredicateT = v.InferOutput<typeof WrapPredicate>;

export interface WrapPredicateFacts {
  stop: StopRecordV2T;
  /** Null when the manifest could not be read (that is its own finding; producer and policy are then not compared). */
  manifest: ManifestT | null;
  /** Each log's recomputed chain head, by file name. */
  logs: ReadonlyMap<string, ChainHead>;
  /** Complete lines of checkpoints.ndjson (0 when there is none). */
  checkpoints: number;
}

/** At most this many differing fields are named. */
const MAX_NAMED = 8;

/** The predicate parsed strictly, or a finding; then each field against the facts. */
export function checkWrapPredicate(predicate: unknown, facts: WrapPredicateFacts): { predicate: WrapPredicateT | null; findings: Finding[] } {
  const file = CAPTURE_FILES.envelope;
  const parsed = v.safeParse(WrapPredicate, predicate);
  if (!parsed.success) return { predicate: null, findings: [unknownFinding("envelope_invalid", file, `predicate: ${firstIssue(parsed.issues)}`)] };
  const p = parsed.output;
  const d = facts.stop.data;
  const expected: [string, unknown, unknown][] = [
    ["session_id", p.session_id, d.session_id],
    ["event_source", p.event_source, facts.stop.source],
    ["server_id", p.server_id, d.server_id],
    ["stop.session_end", p.stop.session_end, d.session_end],
    ["stop.termination", p.stop.termination, d.termination],
    ["stop.exit_code", p.stop.exit_code, d.exit_code],
    ["stop.signal", p.stop.signal, d.signal],
    ["stop.decision_log", p.stop.decision_log, d.decision_log],
    ["stop.decision_events_written", p.stop.decision_events_written, d.decision_events_written],
    ["stop.decision_events_dropped", p.stop.decision_events_dropped, d.decision_events_dropped],
    ["stop.receipts", p.stop.receipts, d.receipts === null ? null : { written: d.receipts.written, dropped: d.receipts.dropped }],
    ["checkpoints.written", p.checkpoints.written, facts.checkpoints],
    ["checkpoints.written (session-stop)", p.checkpoints.written, d.checkpoints?.written ?? null],
  ];
  if (facts.manifest !== null) {
    const m = facts.manifest;
    expected.push(
      ["policy_digest", p.policy_digest, m.policy?.digest ?? null],
      ["producer.version", p.producer.version, m.vigil.version],
      ["producer.binary_sha256", p.producer.binary_sha256, m.vigil.binary_sha256],
    );
  }
  const names = new Set([...Object.keys(p.logs), ...facts.logs.keys()]);
  for (const name of [...names].sort()) expected.push([`logs.${name.slice(0, 64)}`, p.logs[name] ?? null, facts.logs.get(name) ?? null]);
  const differ = expected.filter(([, a, b]) => !sameJson(a, b)).map(([name]) => name);
  if (differ.length === 0) return { predicate: p, findings: [] };
  const listed = differ.slice(0, MAX_NAMED).join(", ") + (differ.length > MAX_NAMED ? `, and ${differ.length - MAX_NAMED} more` : "");
  return { predicate: p, findings: [unknownFinding("predicate_mismatch", file, `the signed predicate differs from the capture: ${listed}`)] };
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  return canonicalJson(a) === canonicalJson(b);
}
