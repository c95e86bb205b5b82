/**
 * The coalescer's decisions about a batch that came back (serve.md §5 "Outages are not attempts",
 * §6 item 5), pure: how long to wait while the model is unavailable, and which events of a
 * returned batch count an attempt, which are dropped.
 *
 * - A run that ended `model_unavailable` (the model never accepted the request) counts no
 *   attempt: its events are ready again and the session waits 1 s, doubling per consecutive
 *   outage run, up to the cap (VIGIL_MODEL_BACKOFF_CAP_MS), before the next batch.
 * - A run aborted because its session is closing counts no attempt either (the coalescer tells),
 *   nor does a batch returned by a run that succeeded (a steer the model never saw).
 * - Any other return counts one attempt per event; the MAX_ATTEMPTS-th drops it.
 */

import { doublingBackoffMs } from "../shared/backoff.ts";
import type { RunSettled } from "./ports.ts";

export const MAX_ATTEMPTS = 3;
/** The first wait after a run found the model unavailable. */
export const MODEL_BACKOFF_START_MS = 1000;

/** The wait after the `outages`-th consecutive run that found the model unavailable (outages ≥ 1). */
export function modelBackoffMs(outages: number, capMs: number): number {
  return doublingBackoffMs(outages - 1, capMs, MODEL_BACKOFF_START_MS);
}

export interface ReturnedVerdict {
  /** New attempts counts of the events that stay (only those that changed). */
  counted: Map<number, number>;
  /** Events whose last attempt this was. */
  dropped: number[];
}

/**
 * What a returned batch does to its events, given their attempts so far. `notTheBatchsFault`: the
 * run never put the batch to the model's judgement (the model was unavailable, or the session
 * closed under the run), so nothing is counted.
 */
export function judgeReturned(seqs: readonly number[], attemptsOf: (seq: number) => number, notTheBatchsFault: boolean): ReturnedVerdict {
  const verdict: ReturnedVerdict = { counted: new Map(), dropped: [] };
  if (notTheBatchsFault) return verdict;
  for (const seq of seqs) {
    const n = attemptsOf(seq) + 1;
    if (n >= MAX_ATTEMPTS) verdict.dropped.push(seq);
    else verdict.counted.set(seq, n);
  }
  return verdict;
}

/**
 * The `dropped` status's error: the attempts, and what became of the last one, told from its run's
 * report so that it is true for each way a batch comes back counted (the model refused the request
 * and the run failed, a client aborted the run, or the run's transcript did not sync).
 */
export function droppedError(last: Pick<RunSettled, "status" | "succeeded" | "error">): string {
  return `dropped after ${MAX_ATTEMPTS} attempts; the last run ${lastAttempt(last)}`;
}

/**
 * The dropped ledger record's `error_code` (ledger-records.ts): the last run's stable code when it
 * has one, else a code for what became of that run — the same cases as `droppedError`.
 */
export function droppedErrorCode(last: Pick<RunSettled, "status" | "succeeded" | "code">): string {
  if (last.code !== undefined) return last.code;
  if (last.status === "failed") return "run_failed";
  if (last.status === "aborted") return "run_aborted";
  return "transcript_not_synced";
}

function lastAttempt({ status, succeeded, error }: Pick<RunSettled, "status" | "succeeded" | "error">): string {
  if (status === "failed") return `failed: ${error ?? "(no error given)"}`;
  if (status === "aborted") return error === undefined ? "was aborted" : `was aborted: ${error}`;
  // succeeded runs count no attempt (see judgeReturned), so what is left is a failed sync
  return succeeded ? "ended" : "ended but its transcript could not be synced";
}
