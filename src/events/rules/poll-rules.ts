/**
 * The rules of one `events/poll` loop: reading a result tolerantly, choosing the wait before the
 * next poll, adopting cursors, and backing off after failures.
 */
import { isRecord } from "../../shared/guards.ts";

/** A server may not hand us an unbounded page; past this the result is refused, not truncated. */
export const MAX_EVENTS_PER_PAGE = 10_000;
export const DEFAULT_NEXT_POLL_MS = 30_000;
/**
 * The longest wait a server can ask for. Timers overflow past 2^31-1 ms and then fire at once, so
 * an absurd nextPollMs would turn into a spin; an hour keeps a quiet server quiet.
 */
export const MAX_NEXT_POLL_MS = 3_600_000;

export interface PollPage {
  /** The occurrences, in order: each one a JSON object (not yet checked further). */
  events: Record<string, unknown>[];
  /** The position after this page; null when the server sent none (nothing to persist). */
  cursor: string | null;
  hasMore: boolean;
  /** The server skipped events (retention, maxAgeMs, a ceiling): a possible gap. */
  truncated: boolean;
  nextPollMs: number | null;
  /** Entries of `events` that were not objects and were left out. */
  skipped: number;
}

export function parsePollResult(result: unknown): PollPage | { error: string } {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return { error: "the poll result is not a JSON object" };
  const r = result as Record<string, unknown>;
  // `events` is the one member the drafts insist on: without it the page says nothing.
  if (!Array.isArray(r.events)) return { error: "the poll result has no events array" };
  if (r.events.length > MAX_EVENTS_PER_PAGE) {
    return { error: `the poll result carries ${r.events.length} events (at most ${MAX_EVENTS_PER_PAGE} are accepted)` };
  }
  const events: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const event of r.events) {
    if (isRecord(event)) events.push(event);
    else skipped++;
  }
  // truncated, hasMore and nextPollMs appear in every example but no text makes them required.
  return {
    events,
    cursor: typeof r.cursor === "string" ? r.cursor : null,
    hasMore: r.hasMore === true,
    truncated: r.truncated === true,
    nextPollMs: typeof r.nextPollMs === "number" && Number.isFinite(r.nextPollMs) && r.nextPollMs >= 0 ? r.nextPollMs : null,
    skipped,
  };
}

export interface NextPollInput {
  hasMore: boolean;
  /** Events on this page that were not duplicates. */
  newEvents: number;
  nextPollMs: number | null;
  floorMs: number;
  defaultMs?: number;
}

export function nextPollDelayMs({ hasMore, newEvents, nextPollMs, floorMs, defaultMs = DEFAULT_NEXT_POLL_MS }: NextPollInput): number {
  // More is waiting and this page made progress: fetch it now, whatever nextPollMs says.
  if (hasMore && newEvents > 0) return 0;
  // hasMore without progress (an empty page, or replays only) would spin on a broken server.
  if (hasMore) return floorMs;
  return Math.max(Math.min(nextPollMs ?? defaultMs, MAX_NEXT_POLL_MS), floorMs);
}

/**
 * The cursor to persist after a poll result. Every string replaces the old one; null, absent or
 * garbage means "nothing to persist", so the current cursor stays. A cursor is never made up from
 * anything else (an eventId is not a position).
 */
export function adoptCursor(current: string | null, received: unknown): string | null {
  return typeof received === "string" ? received : current;
}

/** 1 s, 2 s, 4 s, … capped at `capMs`; `attempt` counts from 0. */
export function backoffMs(attempt: number, capMs: number): number {
  // 2^31 s is far past any cap; stopping the exponent there keeps the arithmetic exact.
  const n = Number.isNaN(attempt) || attempt <= 0 ? 0 : Math.min(Math.floor(attempt), 31);
  return Math.max(0, Math.min(capMs, 1000 * 2 ** n));
}
