// A poll page's cursor is stored by the same write as the page's events (src/events/hub.ts
// `commit(move)`, subscription/poll-loop.ts): by the time the loop asks for the next page, the
// snapshot on disk already holds the cursor past the page and its ids — a crash then resumes after
// the page. Before, the cursor went to the store after the commit and waited for a later, debounced
// write, so a crash in between polled the page again.
//
// A real hub and store in a temp dir; the server is a fake wire that answers the first poll with a
// page and reads the snapshot file when the second poll arrives.
import { afterEach, expect, test } from "bun:test";
import type { EventsFrame } from "../../../src/events/frames.ts";
import { EventsHub } from "../../../src/events/hub.ts";
import type { EventsServices } from "../../../src/events/ports.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { EventsStore, type SubscriptionRecord } from "../../../src/events/store/events-store.ts";
import type { ServerEvents } from "../../../src/events/wire/server-events.ts";
import type { SubscriptionSpec } from "../../../src/events/types.ts";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import { Cleanups } from "../../helpers/cleanups.ts";
import { TEST_EVENTS_TUNING, recordingEventsSession } from "../../helpers/events-hub.ts";
import { tmpDir } from "../../helpers/fixture.ts";
import { waitFor } from "../../helpers/wait.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const SPEC: SubscriptionSpec = { server: "srv", name: "ticket.updated", arguments: {}, delivery: "poll", action: "follow_up" };
const KEY = subscriptionKey(SPEC.server, SPEC.name, SPEC.arguments);
const occurrence = (id: string) => ({ eventId: id, name: SPEC.name, timestamp: "2030-01-01T00:00:00Z", data: { id } });

test("the snapshot on disk holds a page's cursor and ids before the next page is asked for", async () => {
  const tmp = tmpDir("vigil-unit-hub-page-cursor");
  cleanups.add(() => tmp.cleanup());
  const polls: { cursor: unknown; onDisk: SubscriptionRecord | undefined; snapshotsWritten: number }[] = [];
  let store: EventsStore | null = null;
  const wire = {
    canStream: false,
    invalidate: () => {},
    list: async () => [{ name: SPEC.name, delivery: ["poll"] }],
    poll: async (params: Record<string, unknown>, signal: AbortSignal) => {
      const snapshot = await EventsStore.readSnapshot(tmp.path);
      polls.push({ cursor: params.cursor, onDisk: snapshot?.subscriptions[KEY], snapshotsWritten: store?.writes.snapshots ?? 0 });
      // The first page also announces the subscription (a commit of its own); the second is a plain one.
      if (polls.length === 1) return { events: [occurrence("a"), occurrence("b"), occurrence("c")], cursor: "c3", hasMore: false, nextPollMs: 1 };
      if (polls.length === 2) return { events: [occurrence("d"), occurrence("e")], cursor: "c5", hasMore: false, nextPollMs: 1 };
      // Later polls wait for the hub's close (long-poll style), so nothing else is written meanwhile.
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      return { events: [], cursor: "c5", hasMore: false, nextPollMs: 1 };
    },
  } as unknown as ServerEvents;
  const tuning = { ...TEST_EVENTS_TUNING, pollFloorMs: 1, longPollMs: 0 };
  store = await EventsStore.open(tmp.path, { maxPending: tuning.maxPending, maxPendingBytes: tuning.maxPendingBytes });
  const services: EventsServices = {
    tuning,
    webhook: { available: true, routes: new WebhookRouteTable(), keys: new ServerKeyStore(), callbackUrl: (t) => `http://127.0.0.1:9/_vigil/mcp-events/${t}` },
    wire: () => wire,
    configured: () => [SPEC],
    eventServers: () => [SPEC.server],
  };
  const frames: EventsFrame[] = [];
  const hub = await EventsHub.open(recordingEventsSession("s1", frames), tmp.path, services, true, Date.now, store, (e) => {
    throw e;
  });
  cleanups.add(() => hub.close());

  await waitFor(() => polls.length >= 3, { timeoutMs: 10_000, label: "the third poll" });
  expect(polls.map((p) => p.cursor)).toEqual([null, "c3", "c5"]);
  // When the next page is asked for, the page before it is on disk whole: events, window and cursor.
  expect(store.pending().map((e) => (e.event as { eventId: string }).eventId)).toEqual(["a", "b", "c", "d", "e"]);
  expect(polls[1]!.onDisk?.cursor).toBe("c3");
  expect(polls[2]!.onDisk?.cursor).toBe("c5");
  expect(polls[2]!.onDisk?.recent).toEqual(["a", "b", "c", "d", "e"]);
  // One snapshot write per page carried them (none was left for a later, debounced write).
  expect(polls[2]!.snapshotsWritten - polls[1]!.snapshotsWritten).toBe(1);
});
