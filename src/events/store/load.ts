/**
 * Opening a session's events state (events-store.ts `open`): the options checked, stale temps
 * swept, the snapshot read, the event ledger's tail read (with evidence configured), the pending
 * log replayed, and the ledger lines the pending log holds but events.ndjson lacks appended
 * (ledger.ts; a ledger with no record yet gets the records of the live entries, for the store's
 * first pass to write) — all before the store exists, so a refusal leaves nothing open.
 */
import { logLine } from "../../shared/log.ts";
import type { Scheduler } from "../../shared/time.ts";
import { EventsStoreError } from "./errors.ts";
import { sweepTemps } from "./files.ts";
import { EventLedger, type LedgerOptions, type LedgerTail, readLedgerTail } from "./ledger.ts";
import { COMPACT_MIN_BYTES } from "./log-backlog.ts";
import type { Fault, WriteCounters } from "./log-file.ts";
import { type ReplayedLog, replayLog } from "./pending-log.ts";
import { readSnapshotFile, type SnapshotData } from "./snapshot.ts";

export interface EventsStoreOptions {
  /** The queue refuses an entry once it holds this many. */
  maxPending: number;
  /** …or once this entry's line would take the live lines over this many bytes (one entry always fits an empty queue). */
  maxPendingBytes: number;
  /** Test seam: a throw here behaves like the failing system call at that step. */
  fault?: Fault;
  /** The timers of background commits and their retries; tests inject a fake one. */
  scheduler?: Scheduler;
  /** With evidence configured: keep the event ledger `events.ndjson` (ledger.ts). Nothing of it is written otherwise. */
  ledger?: LedgerOptions;
}

/** A log over this is refused on load rather than read: it is far past anything this store writes. */
export function maxLogFileBytes(maxPendingBytes: number): number {
  return 4 * maxPendingBytes + 64 * 1024 * 1024;
}

/** Unwritten bytes held while writes fail: log records past it give way to a rewrite; ledger lines refuse new arrivals. */
export const backlogCap = (maxPendingBytes: number) => 2 * maxPendingBytes + COMPACT_MIN_BYTES;

export interface LoadedState {
  snapshot: SnapshotData | undefined;
  replayed: ReplayedLog;
  counters: WriteCounters;
  ledger: EventLedger | null;
  /** The store's first write rewrites the log (see below). */
  mustRewrite: boolean;
}

export async function loadState(dir: string, options: EventsStoreOptions): Promise<LoadedState> {
  for (const [name, value] of [["maxPending", options.maxPending], ["maxPendingBytes", options.maxPendingBytes]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new EventsStoreError("invalid_argument", `${name} must be a positive integer`);
  }
  const lo = options.ledger;
  if (lo !== undefined && !(typeof lo.eventSource === "string" && lo.eventSource !== "" && typeof lo.sessionId === "string" && lo.sessionId !== "")) {
    throw new EventsStoreError("invalid_argument", "the event ledger needs an event source and a session id");
  }
  await sweepTemps(dir);
  const snapshot = readSnapshotFile(dir);
  const counters: WriteCounters = { logAppends: 0, logSyncs: 0, snapshots: 0, compactions: 0, logBytes: 0 };
  // The ledger's tail first: the replay keeps only the embedded lines events.ndjson may lack.
  const tail: LedgerTail | null = lo === undefined ? null : await readLedgerTail(dir, lo);
  let replayed: ReplayedLog | undefined;
  try {
    replayed = await replayLog(dir, maxLogFileBytes(options.maxPendingBytes), () => counters.logSyncs++, tail === null ? null : { keepFrom: Math.max(0, tail.head.count - 1) });
    const live = replayed.live;
    const ledger = tail === null || lo === undefined ? null : await EventLedger.recover(dir, lo, tail, replayed.ledger, {
      fault: options.fault,
      cap: backlogCap(options.maxPendingBytes),
      live,
    });
    if (replayed.uncommitted > 0) {
      logLine(`events state in ${dir}: ${replayed.uncommitted} record(s) of a write a crash cut short (before its commit point) were set aside`, { level: "warn", code: "events_state_uncommitted" });
    }
    // Records set aside, or ledger records a store without the ledger must not leave behind (a
    // later open with it would take what follows them for an uncommitted pass): rewritten away.
    const mustRewrite = replayed.uncommitted > 0 || (ledger === null && replayed.hasLedgerRecords);
    return { snapshot, replayed, counters, ledger, mustRewrite };
  } catch (e) {
    await replayed?.handle?.close().catch(() => {});
    await tail?.handle?.close().catch(() => {});
    throw e;
  }
}
