/**
 * When a failed session comes back (issue 12 item F; serve.md §6 item 9): the events session, and
 * any session holding runtime subscriptions or pending events, is reopened after a failure with
 * backoff — 1 s, doubling to 60 s — and the backoff starts over once the session has stayed up for
 * 10 minutes. Pure: the caller keeps the state per session and owns the clock.
 */

export const RESTART_FIRST_MS = 1000;
export const RESTART_CAP_MS = 60_000;
/** Up this long since its last (re)start: the next failure is a first one again. */
export const RESTART_RESET_AFTER_MS = 10 * 60_000;

export interface RestartState {
  /** The delay chosen for the last restart. */
  readonly lastDelayMs: number;
  /** When the session last (re)started (ms, the caller's clock). */
  readonly startedAt: number;
}

/** The delay before reopening a session that failed at `now`, given how its last restart went. */
export function nextRestartDelay(previous: RestartState | undefined, now: number): number {
  if (previous === undefined || now - previous.startedAt >= RESTART_RESET_AFTER_MS) return RESTART_FIRST_MS;
  return Math.min(RESTART_CAP_MS, previous.lastDelayMs * 2);
}
