/**
 * Poll delivery for one subscription (serve.md §6 item 2): `events/poll` in a loop.
 *
 * - The cursor moves only after the whole page was accepted and committed; a page that does not
 *   fit the queue, or cannot be stored, holds the cursor and is asked for again after the floor
 *   (what was already taken comes back as duplicates).
 * - `hasMore` re-polls at once only when the page brought something new; otherwise the wait is
 *   `max(nextPollMs, floor)`, so a broken server cannot spin us.
 * - `truncated` records a gap (frame, and a notice to the model).
 * - Each occurrence was checked once in parsePollResult (rules/occurrence.ts); one that failed is
 *   reported as an `invalid_event` gap in its place and the cursor moves past it with the page.
 * - A page cursor too long to store is not adopted (the position stays); said once per loop.
 * - An answer over the message cap is asked for again in smaller pages, down to one event; one
 *   event that alone is over the cap is an `oversized` gap, told once, and polled for again from
 *   the same cursor with backoff (rules/poll-page-size.ts decides; there is no way past it).
 * Returns only when `signal` aborts; throws the first failed request (the caller classifies it).
 */
import { errorMessage } from "../../shared/errors.ts";
import { EventsRpcError } from "../rules/errors.ts";
import type { OccurrenceCheck } from "../rules/occurrence.ts";
import { type PageSizing, afterOverCap, afterReadPage, fullPageSizing, isOverCapAnswer, overCapProblem, reported } from "../rules/poll-page-size.ts";
import { adoptCursor, nextPollDelayMs, parsePollResult, refusedCursorText } from "../rules/poll-rules.ts";
import type { Acceptance, HostedSubscription, SubscriptionHost } from "./host.ts";
import { abortableSleep } from "./sleep.ts";

export const MAX_EVENTS_PER_POLL = 50;
const noRelease = () => {};

export async function runPoll(host: SubscriptionHost, sub: HostedSubscription, signal: AbortSignal): Promise<void> {
  const wire = host.wire(sub.spec.server);
  const floor = host.tuning.pollFloorMs;
  const holdMs = Math.max(floor, 1000);
  let toldCursor = false;
  let sizing = fullPageSizing(MAX_EVENTS_PER_POLL);
  while (!signal.aborted) {
    const params: Record<string, unknown> = {
      name: sub.spec.name,
      arguments: sub.spec.arguments,
      cursor: sub.cursor,
      maxEvents: sizing.maxEvents,
    };
    if (sub.spec.max_age_ms !== undefined) params.maxAgeMs = sub.spec.max_age_ms;
    // Long poll only with a cursor: a null-cursor poll just bootstraps and returns at once.
    if (host.tuning.longPollMs > 0 && sub.cursor !== null) params.timeoutMs = host.tuning.longPollMs;
    let raw: Record<string, unknown>;
    try {
      raw = await wire.poll(params, signal);
    } catch (e) {
      if (signal.aborted || !(e instanceof EventsRpcError) || !isOverCapAnswer(e)) throw e;
      const step = await overCap(host, sub, sizing, e.message);
      sizing = step.sizing;
      await abortableSleep(step.waitMs, signal);
      continue;
    }
    if (signal.aborted) return;
    const receivedMs = performance.now();
    const page = parsePollResult(raw);
    if ("error" in page) throw new EventsRpcError(-32603, `events/poll: ${page.error}`);
    sub.markUp("poll");
    sizing = afterReadPage(MAX_EVENTS_PER_POLL);
    if (page.refusedCursorChars !== null && !toldCursor) {
      toldCursor = true;
      host.status(sub, { kind: "error", error: refusedCursorText(page.refusedCursorChars) });
    }

    let fresh = 0;
    let full = false;
    // The page's frames go to the transcript in one write, before the commit below.
    const release = host.holdFrames?.() ?? noRelease;
    try {
      for (const entry of page.entries) {
        const r = take(host, sub, entry, page.cursor, receivedMs);
        if (r === "full") {
          full = true;
          break;
        }
        if (r === "new") fresh++;
      }
      if (!full && page.truncated) {
        full = !host.gap(sub, { gap: true, cursor: page.cursor, reason: "truncated", eventId: null });
      }
      if (full) host.status(sub, { kind: "error", error: "the pending queue is full; holding the cursor until the model catches up", retry_in_ms: holdMs });
    } finally {
      release();
    }
    if (full) {
      // What the page did fit is queued (and shown to clients): store it now rather than whenever
      // the queue drains. The cursor stays put either way, so a failure here loses nothing.
      await host.commit().catch(() => {});
      await abortableSleep(holdMs, signal);
      continue;
    }
    // The page's cursor is stored by the same write as its events, after them.
    const next = adoptCursor(sub.cursor, page.cursor);
    try {
      await host.commit(next !== sub.cursor ? { sub, cursor: next } : undefined);
    } catch (e) {
      host.status(sub, { kind: "error", error: `could not store events (holding the cursor): ${errorMessage(e)}`, retry_in_ms: holdMs });
      await abortableSleep(holdMs, signal);
      continue;
    }
    sub.cursor = next;
    await sub.stored();
    await abortableSleep(nextPollDelayMs({ hasMore: page.hasMore, newEvents: fresh, nextPollMs: page.nextPollMs, floorMs: floor }), signal);
  }
}

/** An answer over the message cap: a smaller page at once, or (one event) a gap told once and a backoff. */
async function overCap(host: SubscriptionHost, sub: HostedSubscription, sizing: PageSizing, message: string): Promise<{ sizing: PageSizing; waitMs: number }> {
  const step = afterOverCap(sizing, sub.cursor, { floorMs: host.tuning.pollFloorMs, capMs: host.tuning.retryCapMs });
  if (!step.report) return step;
  const notice = { gap: true as const, cursor: sub.cursor, reason: "oversized", eventId: null, problem: overCapProblem(message) };
  // A full queue: not told yet, so the next over-cap answer tries again.
  const told = host.gap(sub, notice);
  // Like a page's gaps: made durable now (the cursor does not move, so a failed write loses no position).
  await host.commit().catch(() => {});
  return { sizing: told ? reported(step.sizing) : step.sizing, waitMs: step.waitMs };
}

/** One checked occurrence of a page: accepted, or reported as a gap (`invalid_event`, `oversized`) at the page's cursor. */
function take(host: SubscriptionHost, sub: HostedSubscription, entry: OccurrenceCheck, cursor: string | null, receivedMs: number): Acceptance {
  if (entry.ok) return host.accept(sub, entry.occurrence, "poll", receivedMs);
  // Told before (a replayed page): not progress, so a server repeating it with hasMore cannot spin us.
  const known = entry.seenKey !== null && sub.dedup.has(entry.seenKey);
  const notice = { gap: true as const, cursor, reason: entry.reason, eventId: entry.eventId, problem: entry.problem };
  if (!host.gap(sub, { ...notice, ...(entry.seenKey !== null ? { seen_key: entry.seenKey } : {}) })) return "full";
  return known ? "duplicate" : "new";
}
