/**
 * The signed statement of one stop of a serve session (`sessions/<name>/stops/<n>.dsse.json`,
 * serve.md "Evidence"): a DSSE envelope (payload type application/vnd.in-toto+json) around an
 * in-toto Statement v1 whose subjects are the session's evidence files as they stand at the stop
 * (decisions.ndjson, events.ndjson, checkpoints.ndjson — those that exist; a log's first `count`
 * lines as its predicate names them, the checkpoints file's complete lines: the whole file, unless
 * a failed write left a line after them) and
 * whose predicate (SERVE_STOP_PREDICATE) is, members in this order:
 *
 *   {"session_id":<session name>,"event_source","policy_digest":str|null,
 *    "producer":{"name":"vigil","version"},"stop":<n>,"reason":"shutdown"|"reaped"|"closed",
 *    "logs":{"<log file>":{"count","head"},…},"checkpoints":{"written":<lines of checkpoints.ndjson>},
 *    "events":{"pending":[<the lowest MAX_STOP_PENDING_LISTED pending seqs, ascending>],
 *              "pending_count":<all of them>,"pending_sha256":<pendingDigest of all of them>}}
 *
 * The pending seqs are those of the ledger after the lines the stop counts. The list is bounded
 * (a queue may hold far more entries than a stop envelope has room for: the verifier reads one of
 * at most 256 KiB); the count and the digest still pin the whole set.
 *
 * A serve session is never finished: every stop writes a new file, n = 1, 2, … Pure builders.
 */
import { sha256Hex } from "../shared/digest.ts";
import type { ChainHead } from "./chain.ts";
import { SERVE_STOP_PREDICATE, type Statement, type Subject, statement } from "./statement.ts";

/** A stop statement lists at most this many pending seqs (the lowest); `pending_count` and `pending_sha256` cover all. */
export const MAX_STOP_PENDING_LISTED = 1000;

export const SERVE_STOP_REASONS = ["shutdown", "reaped", "closed"] as const;
/** Why the session stopped: the process shut down, the idle reaper closed it, or it was closed on its own (a contained failure). */
export type ServeStopReason = (typeof SERVE_STOP_REASONS)[number];

export interface ServeStopInput {
  sessionId: string;
  eventSource: string;
  policyDigest: string | null;
  version: string;
  /** This stop's number (the file's n). */
  stop: number;
  reason: ServeStopReason;
  /** Each chained log this session opened, by file name. */
  logs: Readonly<Record<string, ChainHead>>;
  /** Complete lines of checkpoints.ndjson at the stop (every run's, not only this one's). */
  checkpointsWritten: number;
  /** The event ledger's entries still pending, any order (none without a ledger). */
  pending: readonly number[];
  /** The files covered, with their SHA-256. */
  subjects: readonly Subject[];
}

export function serveStopPredicate(x: ServeStopInput): Record<string, unknown> {
  const logs: Record<string, ChainHead> = {};
  for (const name of Object.keys(x.logs).sort()) logs[name] = { count: x.logs[name]!.count, head: x.logs[name]!.head };
  return {
    session_id: x.sessionId,
    event_source: x.eventSource,
    policy_digest: x.policyDigest,
    producer: { name: "vigil", version: x.version },
    stop: x.stop,
    reason: x.reason,
    logs,
    checkpoints: { written: x.checkpointsWritten },
    events: pendingClaim(x.pending),
  };
}

/** The predicate's `events`: the lowest pending seqs listed, all of them counted and digested. */
export function pendingClaim(seqs: readonly number[]): { pending: number[]; pending_count: number; pending_sha256: string } {
  const sorted = [...seqs].sort((a, b) => a - b);
  return { pending: sorted.slice(0, MAX_STOP_PENDING_LISTED), pending_count: sorted.length, pending_sha256: pendingDigest(sorted) };
}

/** Hex SHA-256 of the ascending seqs as a JSON array (`[3,4,9]`, which is also its RFC 8785 form). */
export function pendingDigest(ascending: readonly number[]): string {
  return sha256Hex(JSON.stringify(ascending));
}

export function serveStopStatement(x: ServeStopInput): Statement {
  return statement(x.subjects, SERVE_STOP_PREDICATE, serveStopPredicate(x));
}

const STOP_FILE = /^([1-9][0-9]{0,8})\.dsse\.json$/;

/** `<n>.dsse.json`. */
export function stopFileName(n: number): string {
  return `${n}.dsse.json`;
}

/** The number of a stop file's name, or null for any other name. */
export function stopNumberOf(name: string): number | null {
  const m = STOP_FILE.exec(name);
  return m === null ? null : Number(m[1]);
}

/** The next stop's number after the stop files among `names` (1 when there is none). */
export function nextStopNumber(names: Iterable<string>): number {
  let max = 0;
  for (const name of names) {
    const n = stopNumberOf(name);
    if (n !== null && n > max) max = n;
  }
  return max + 1;
}
