/**
 * The one retry schedule of vigil: the n-th wait in a row (n from 0) is `firstMs · 2^n`, capped at
 * `capMs` — 1 s, 2 s, 4 s, … by default. Every retry uses it: subscriptions and push reconnects
 * (events/subscription/), the model backoff during an outage (events/delivery-rules.ts), MCP
 * server supervision (mcp/supervision.ts) and session restarts (serve/restart-backoff.ts).
 *
 * Supervised things (issue 12 items C and F: an MCP server, a session that failed) also start the
 * schedule over once they stayed up `healthyMs` (10 minutes): one that crashes right after every
 * start keeps doubling, so it is never restarted in a tight loop. Pure.
 */

export interface BackoffPolicy {
  /** First wait after a failure. */
  readonly initialMs: number;
  /** Longest wait. */
  readonly capMs: number;
  /** Up this long before it failed: the backoff starts over. */
  readonly healthyMs: number;
}

/** 1 s doubling to 60 s, starting over after 10 minutes up (serve.md §6 items 9 and 10). */
export const SUPERVISION_BACKOFF: BackoffPolicy = { initialMs: 1000, capMs: 60_000, healthyMs: 10 * 60_000 };

/** The wait after `n` waits in a row (n from 0; negative or NaN counts as 0). */
export function doublingBackoffMs(n: number, capMs: number, firstMs = 1000): number {
  // 2^40 times the first wait is far past any cap; stopping the exponent there keeps the arithmetic exact.
  const exponent = Number.isNaN(n) || n <= 0 ? 0 : Math.min(Math.floor(n), 40);
  return Math.max(0, Math.min(capMs, firstMs * 2 ** exponent));
}

/** Waits in a row for something that failed after being up `upMs`: none once it stayed up `healthyMs`. */
export function waitsAfterUptime(waits: number, upMs: number, healthyMs: number): number {
  return upMs >= healthyMs ? 0 : waits;
}
