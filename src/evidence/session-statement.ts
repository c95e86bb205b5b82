/**
 * The signed statement of a finished wrap capture (capture.dsse.json, wrap.md §12): an in-toto
 * Statement v1 whose subjects are the capture's other files and whose predicate
 * (WRAP_SESSION_PREDICATE) repeats what a verifier checks against them:
 *
 *   {"session_id","event_source","server_id","policy_digest","producer":{"name","version","binary_sha256"},
 *    "stop":{"session_end","termination","exit_code","signal","decision_log","decision_events_written",
 *            "decision_events_dropped","receipts":{"written","dropped"}|null},
 *    "logs":{"<log file name>":{"count","head"},…},"checkpoints":{"written"}}
 *
 * Pure: the stop record's data and the files' digests in, the statement out (member order fixed,
 * pinned by a unit test).
 */
import type { ChainHead } from "./chain.ts";
import type { StopDataV2 } from "./records.ts";
import { type Statement, type Subject, WRAP_SESSION_PREDICATE, statement } from "./statement.ts";

export interface WrapSessionFacts {
  eventSource: string;
  policyDigest: string | null;
  version: string;
  binarySha256: string;
  /** The stop record's data, as written to session-stop.json. */
  stop: StopDataV2;
}

export function wrapSessionPredicate(f: WrapSessionFacts): Record<string, unknown> {
  const s = f.stop;
  const logs: Record<string, ChainHead> = {};
  for (const [name, head] of Object.entries(s.chains)) logs[name] = { count: head.count, head: head.head };
  return {
    session_id: s.session_id,
    event_source: f.eventSource,
    server_id: s.server_id,
    policy_digest: f.policyDigest,
    producer: { name: "vigil", version: f.version, binary_sha256: f.binarySha256 },
    stop: {
      session_end: s.session_end,
      termination: s.status.termination,
      exit_code: s.status.exit_code,
      signal: s.status.signal,
      decision_log: s.decision_log,
      decision_events_written: s.decision_events_written,
      decision_events_dropped: s.decision_events_dropped,
      receipts: s.receipts === null ? null : { written: s.receipts.written, dropped: s.receipts.dropped },
    },
    logs,
    // Only a signed capture has a statement, and a signed capture always has a checkpoints file.
    checkpoints: { written: s.checkpoints?.written ?? 0 },
  };
}

/** The statement over `files` (file name → lowercase hex SHA-256), subjects sorted by name. */
export function wrapSessionStatement(files: Readonly<Record<string, string>>, f: WrapSessionFacts): Statement {
  const subjects: Subject[] = Object.entries(files).map(([name, sha256]) => ({ name, digest: { sha256 } }));
  return statement(subjects, WRAP_SESSION_PREDICATE, wrapSessionPredicate(f));
}
