/**
 * What the verified stop statements claim (stop-claims.ts), held against the logs as they are: each
 * log head the chain's head at that count, each subject digest the digest of the file's first that
 * many lines (for the last stop, when nothing was appended since, the whole file), the pending
 * events the ledger's pending set at that point, and counts that never go down from stop to stop.
 * Pure.
 */
import { SESSION_FILES } from "../../evidence/format.ts";
import { type Finding, unknownFinding } from "../findings.ts";
import type { LogScan } from "./scan-log.ts";
import type { StopClaim } from "./stop-claims.ts";

export interface ClaimContext {
  /** The session's event source (from its records), or null when it has none. */
  source: string | null;
  /** The scans of decisions.ndjson and events.ndjson (a missing log scans as empty). */
  scans: Record<string, LogScan>;
  /** Whether each evidence file exists. */
  present: (name: string) => boolean;
  checkpoints: FilePrefixes;
  /** By stop number: whether the ledger's pending set at the stop's events count equals its claim. */
  pendingAgrees: ReadonlyMap<number, boolean>;
}

export interface FilePrefixes {
  lines: number;
  prefix: Map<number, string>;
}

const LOGS = [SESSION_FILES.decisions, SESSION_FILES.events] as const;

export function checkStopClaims(claims: readonly StopClaim[], ctx: ClaimContext): Finding[] {
  const findings: Finding[] = [];
  let prev: StopClaim | null = null;
  for (const c of claims) {
    const say = (code: Finding["code"], message: string) => findings.push(unknownFinding(code, c.file, message));
    if (ctx.source !== null && c.eventSource !== ctx.source) say("predicate_mismatch", "names another event source than the session's records");
    for (const log of LOGS) checkLogClaim(c, prev, log, ctx.scans[log]!, ctx.present(log), say);
    checkCheckpointsClaim(c, prev, ctx, say);
    if (ctx.pendingAgrees.get(c.n) === false) {
      const at = c.logs[SESSION_FILES.events]?.count ?? 0;
      say("predicate_mismatch", `its ${c.pending.count} pending events differ from the ledger's pending events after ${at} records`);
    }
    prev = c;
  }
  return findings;
}

type Say = (code: Finding["code"], message: string) => void;

function checkLogClaim(c: StopClaim, prev: StopClaim | null, log: string, scan: LogScan, present: boolean, say: Say): void {
  const head = c.logs[log];
  const subject = c.subjects.get(log);
  const before = prev?.logs[log];
  if (head === undefined) {
    if (subject !== undefined) say("predicate_mismatch", `names ${log} as a subject but not its chain`);
    if (before !== undefined) say("predicate_mismatch", `no longer names ${log} (stop ${prev!.n} did)`);
    return;
  }
  // A log with no record yet may have no file (the ledger is created by its first record): its
  // chain is then the anchor alone, and there is nothing to hash.
  if (subject === undefined && head.count > 0) return say("predicate_mismatch", `names ${head.count} records of ${log} but not the file as a subject`);
  if (subject !== undefined && !present) return say("subject_missing", `signs ${log} (${head.count} records), but the file is missing`);
  if (before !== undefined && head.count < before.count) say("predicate_mismatch", `${log} count goes down (${head.count} after ${before.count} at stop ${prev!.n})`);
  const actual = scan.headAt(head.count);
  if (actual === null) return say("chain_head_mismatch", `names ${head.count} records of ${log}, but the log has ${scan.lines}`);
  if (actual !== head.head) return say("chain_head_mismatch", `head of ${log} at ${head.count} records differs from the log's chain`);
  if (subject !== undefined && scan.prefix.get(head.count) !== subject) say("subject_mismatch", `sha256 of ${log} differs from that of its first ${head.count} records`);
}

function checkCheckpointsClaim(c: StopClaim, prev: StopClaim | null, ctx: ClaimContext, say: Say): void {
  const name = SESSION_FILES.checkpoints;
  const subject = c.subjects.get(name);
  const written = c.checkpointsWritten;
  if (prev !== null && written < prev.checkpointsWritten) say("predicate_mismatch", `checkpoints written goes down (${written} after ${prev.checkpointsWritten} at stop ${prev.n})`);
  if (subject === undefined) {
    if (written > 0) say("predicate_mismatch", `names ${written} checkpoints but not ${name} as a subject`);
    return;
  }
  if (!ctx.present(name)) return say("subject_missing", `signs ${name} (${written} checkpoints), but the file is missing`);
  if (written > ctx.checkpoints.lines) return say("subject_mismatch", `names ${written} checkpoints, but ${name} has ${ctx.checkpoints.lines}`);
  if (ctx.checkpoints.prefix.get(written) !== subject) say("subject_mismatch", `sha256 of ${name} differs from that of its first ${written} checkpoints`);
}

/** Line count of an NDJSON file and the digests of its first n lines, for each wanted n. */
export function prefixDigests(bytes: Uint8Array, wanted: ReadonlySet<number>): FilePrefixes {
  const hasher = new Bun.CryptoHasher("sha256");
  const prefix = new Map<number, string>();
  let hashedTo = 0;
  let lines = 0;
  const take = (end: number) => {
    if (!wanted.has(lines)) return;
    hasher.update(bytes.subarray(hashedTo, end));
    hashedTo = end;
    prefix.set(lines, hasher.copy().digest("hex"));
  };
  take(0);
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) {
    lines++;
    take(at + 1);
  }
  return { lines, prefix };
}
