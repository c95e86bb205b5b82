/**
 * Poll delivery for one subscription (serve.md §6 item 2): `events/poll` in a loop.
 *
 * - The cursor moves only after the whole page was accepted and committed; a page that does not
 *   fit the queue, or cannot be stored, holds the cursor and is asked for again after the floor
 *   (what was already taken comes back as duplicates).
 * - `hasMore` re-polls at once only when the page brought something new; otherwise the wait is
 *   `max(nextPollMs, floor)`, so a broken server cannot spin us.
 * - `truncated` records a gap (frame, and a notice to the model).
 * Returns only when `signal` aborts; throws the first failed request (the caller classifies it).
 */
import { errorMessage } from "../../shared/errors.ts";
import { EventsRpcError } from "../rules/errors.ts";
import { adoptCursor, nextPollDelayMs, parsePollResult } from "../rules/poll-rules.ts";
import type { EventOccurrence } from "../types.ts";
import type { HostedSubscription, SubscriptionHost } from "./host.ts";
import { abortableSleep } from "./sleep.ts";

export const MAX_EVENTS_PER_POLL = 50;

export async function runPoll(host: SubscriptionHost, sub: HostedSubscription, signal: AbortSignal): Promise<void> {
  const wire = host.wire(sub.spec.server);
  const floor = host.tuning.pollFloorMs;
  const holdMs = Math.max(floor, 1000);
  while (!signal.aborted) {
    const params: Record<string, unknown> = {
      name: sub.spec.name,
      arguments: sub.spec.arguments,
      cursor: sub.cursor,
      maxEvents: MAX_EVENTS_PER_POLL,
    };
    if (sub.spec.max_age_ms !== undefined) params.maxAgeMs = sub.spec.max_age_ms;
    // Long poll only with a cursor: a null-cursor poll just bootstraps and returns at once.
    if (host.tuning.longPollMs > 0 && sub.cursor !== null) params.timeoutMs = host.tuning.longPollMs;
    const raw = await wire.poll(params, signal);
    if (signal.aborted) return;
    const page = parsePollResult(raw);
    if ("error" in page) throw new EventsRpcError(-32603, `events/poll: ${page.error}`);
    sub.markUp("poll");

    let fresh = 0;
    let full = false;
    for (const event of page.events) {
      const r = host.accept(sub, event as EventOccurrence, "poll");
      if (r === "full") {
        full = true;
        break;
      }
      if (r === "new") fresh++;
    }
    if (!full && page.truncated) {
      full = !host.gap(sub, { gap: true, cursor: page.cursor, reason: "truncated", eventId: null });
    }
    if (full) {
      host.status(sub, { kind: "error", error: "the pending queue is full; holding the cursor until the model catches up", retry_in_ms: holdMs });
      // What the page did fit is queued (and shown to clients): store it now rather than whenever
      // the queue drains. The cursor stays put either way, so a failure here loses nothing.
      await host.commit().catch(() => {});
      await abortableSleep(holdMs, signal);
      continue;
    }
    try {
      await host.commit();
    } catch (e) {
      host.status(sub, { kind: "error", error: `could not store events (holding the cursor): ${errorMessage(e)}`, retry_in_ms: holdMs });
      await abortableSleep(holdMs, signal);
      continue;
    }
    const next = adoptCursor(sub.cursor, page.cursor);
    if (next !== sub.cursor) {
      sub.cursor = next;
      host.persist(sub);
    }
    await abortableSleep(nextPollDelayMs({ hasMore: page.hasMore, newEvents: fresh, nextPollMs: page.nextPollMs, floorMs: floor }), signal);
  }
}
