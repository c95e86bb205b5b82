/**
 * When a failed session comes back (issue 12 item F; serve.md §6 item 9): the events session, and
 * any session holding runtime subscriptions or pending events, is reopened after a failure with
 * the supervision backoff (shared/backoff.ts) — 1 s, doubling to 60 s — which starts over once the
 * session has stayed up for 10 minutes. Pure: the caller keeps the state per session and owns the clock.
 */
import { SUPERVISION_BACKOFF, doublingBackoffMs, waitsAfterUptime } from "../shared/backoff.ts";

export interface RestartState {
  /** Restarts in a row before this one (0: the first since the session was up 10 minutes). */
  readonly inARow: number;
  /** When the session last (re)started (ms, the caller's clock). */
  readonly startedAt: number;
}

export interface NextRestart {
  /** The restart's place in the row (the backoff exponent): what `RestartState.inARow` records once it ran. */
  readonly inARow: number;
  readonly delayMs: number;
}

/** The restart of a session that failed at `now`, given how its last restart went (none: a first failure). */
export function nextRestart(previous: RestartState | undefined, now: number): NextRestart {
  const inARow = previous === undefined ? 0 : waitsAfterUptime(previous.inARow + 1, now - previous.startedAt, SUPERVISION_BACKOFF.healthyMs);
  return { inARow, delayMs: doublingBackoffMs(inARow, SUPERVISION_BACKOFF.capMs, SUPERVISION_BACKOFF.initialMs) };
}
