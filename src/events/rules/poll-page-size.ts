/**
 * The page size of an `events/poll` loop, and what it does with an answer over the MCP message cap
 * (serve.md §6 items 2 and 8; issue 11).
 *
 * An over-cap answer is never read (the transport fails the request with `-32000 response larger
 * than N bytes`), so its cursor is unknown and nothing of it can be skipped: asking again the same
 * way would fail the same way forever. The wire protocol offers no way past an event without the
 * server's cursor (reference mcp-events-wire.md §7: the cursor sits at the response level), so:
 *
 * - over the cap with more than one event asked for: ask again at once, from the same cursor, for
 *   half as many (50 → 25 → 12 → 6 → 3 → 1), so the events before the big one still come through;
 * - over the cap with `maxEvents: 1`: that one event cannot be read. It is reported once, as an
 *   `oversized` gap, and polled for again from the same cursor with backoff (the server may drop
 *   or shrink it, or move its cursor on: `truncated`);
 * - a page that was read restores the full size.
 */
import { OVERSIZED_RESPONSE_CODE } from "../../mcp/stdio-framing.ts";
import { doublingBackoffMs } from "../../shared/backoff.ts";

export interface PageSizing {
  /** `maxEvents` of the next poll. */
  readonly maxEvents: number;
  /** Set while a single event at `cursor` is over the cap. */
  readonly stuck: { readonly cursor: string | null; readonly attempts: number; readonly reported: boolean } | null;
}

export interface OverCapStep {
  sizing: PageSizing;
  /** Wait this long before polling again. */
  waitMs: number;
  /** Report the unreadable event now (an `oversized` gap); then call `reported`. */
  report: boolean;
}

export function fullPageSizing(maxEvents: number): PageSizing {
  return { maxEvents, stuck: null };
}

/** After a page that was read: the full size again. */
export function afterReadPage(full: number): PageSizing {
  return fullPageSizing(full);
}

/**
 * After an over-cap answer to a poll from `cursor` at `sizing.maxEvents`. The backoff while stuck
 * is 1 s doubling to `capMs`, never under `floorMs`.
 */
export function afterOverCap(sizing: PageSizing, cursor: string | null, bounds: { floorMs: number; capMs: number }): OverCapStep {
  if (sizing.maxEvents > 1) return { sizing: { maxEvents: Math.floor(sizing.maxEvents / 2), stuck: null }, waitMs: 0, report: false };
  const same = sizing.stuck !== null && sizing.stuck.cursor === cursor;
  const attempts = same ? sizing.stuck!.attempts : 0;
  const reported = same && sizing.stuck!.reported;
  return {
    sizing: { maxEvents: 1, stuck: { cursor, attempts: attempts + 1, reported } },
    waitMs: Math.max(bounds.floorMs, doublingBackoffMs(attempts, bounds.capMs)),
    report: !reported,
  };
}

/** The gap for the stuck event was recorded (not before: a full queue means "tell it next time"). */
export function reported(sizing: PageSizing): PageSizing {
  return sizing.stuck === null ? sizing : { ...sizing, stuck: { ...sizing.stuck, reported: true } };
}

/**
 * The transport's answer for a response over the message cap (mcp/stdio-framing.ts, and the HTTP
 * paths): code -32000 with "response larger than N bytes". A server that sends the same error
 * itself only makes us ask for smaller pages.
 */
export function isOverCapAnswer(error: { code: number; message: string }): boolean {
  return error.code === OVERSIZED_RESPONSE_CODE && /^response larger than \d+ bytes$/.test(error.message);
}

/** The `problem` of the gap for an event that cannot be read. */
export function overCapProblem(message: string): string {
  return `a poll answer holding just this one event was refused (${message}); asking again from the same cursor, with backoff`;
}
