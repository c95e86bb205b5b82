/**
 * The rules of one `events/poll` loop: reading a result tolerantly, choosing the wait before the
 * next poll and adopting cursors (the backoff after failures is shared/backoff.ts).
 */
import { type OccurrenceCheck, checkOccurrence, isStorableCursor, OCCURRENCE_LIMITS } from "./occurrence.ts";

/** A server may not hand us an unbounded page; past this the result is refused, not truncated. */
export const MAX_EVENTS_PER_PAGE = 10_000;
export const DEFAULT_NEXT_POLL_MS = 30_000;
/**
 * The longest wait a server can ask for. Timers overflow past 2^31-1 ms and then fire at once, so
 * an absurd nextPollMs would turn into a spin; an hour keeps a quiet server quiet.
 */
export const MAX_NEXT_POLL_MS = 3_600_000;

export interface PollPage {
  /** The occurrences, in order, each checked once (occurrence.ts): accepted, or to be reported as a gap. */
  entries: OccurrenceCheck[];
  /** The position after this page; null when the server sent none (nothing to persist) or one we cannot store. */
  cursor: string | null;
  /** The server's cursor was a string too long to store (its length); the position then stays where it was. */
  refusedCursorChars: number | null;
  hasMore: boolean;
  /** The server skipped events (retention, maxAgeMs, a ceiling): a possible gap. */
  truncated: boolean;
  nextPollMs: number | null;
}

export function parsePollResult(result: unknown): PollPage | { error: string } {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return { error: "the poll result is not a JSON object" };
  const r = result as Record<string, unknown>;
  // `events` is the one member the drafts insist on: without it the page says nothing.
  if (!Array.isArray(r.events)) return { error: "the poll result has no events array" };
  if (r.events.length > MAX_EVENTS_PER_PAGE) {
    return { error: `the poll result carries ${r.events.length} events (at most ${MAX_EVENTS_PER_PAGE} are accepted)` };
  }
  // Not an object, too deep, an over-long id…: each is kept in its place, to be reported there.
  const entries = r.events.map(checkOccurrence);
  // truncated, hasMore and nextPollMs appear in every example but no text makes them required.
  return {
    entries,
    cursor: isStorableCursor(r.cursor) ? r.cursor : null,
    refusedCursorChars: typeof r.cursor === "string" && r.cursor.length > OCCURRENCE_LIMITS.cursorChars ? r.cursor.length : null,
    hasMore: r.hasMore === true,
    truncated: r.truncated === true,
    nextPollMs: typeof r.nextPollMs === "number" && Number.isFinite(r.nextPollMs) && r.nextPollMs >= 0 ? r.nextPollMs : null,
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
 * The cursor to persist after a poll result or a notification. Every string we can store replaces
 * the old one; null, absent, garbage or a string over OCCURRENCE_LIMITS.cursorChars means "nothing
 * to persist", so the current cursor stays (storing an over-long one would fail every later write).
 * A cursor is never made up from anything else (an eventId is not a position).
 */
export function adoptCursor(current: string | null, received: unknown): string | null {
  return isStorableCursor(received) ? received : current;
}

/** The status text for a cursor that was not adopted because it is too long to store. */
export function refusedCursorText(chars: number): string {
  return `the server sent a cursor of ${chars} characters (at most ${OCCURRENCE_LIMITS.cursorChars} are stored); keeping the previous position`;
}
