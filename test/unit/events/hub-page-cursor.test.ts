// A poll page's cursor and the ids its dedup window took are made durable by the same write as the
// page's events — a `position` record in that append (src/events/store/positions.ts), after them —
// not by a rewrite of the whole snapshot per page. By the time the loop asks for the next page, a
// restart from the files on disk resumes after the page (its cursor, its ids in the window), and a
// page after the first wrote no snapshot; the snapshot catches up at the next checkpoint.
//
// A real hub and store in a temp dir, the store on a frozen clock (a checkpoint comes due only when
// the test moves it); the server is a fake wire that answers the first polls with pages and, when
// the next poll arrives, copies the state directory and opens a store on the copy: what a kill -9
// at that moment would restart from.
import { afterEach, expect, test } from "bun:test";
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { EventsFrame } from "../../../src/events/frames.ts";
import { EventsHub } from "../../../src/events/hub.ts";
import type { EventsServices } from "../../../src/events/ports.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { EventsStore, type SubscriptionRecord } from "../../../src/events/store/events-store.ts";
import type { ServerEvents } from "../../../src/events/wire/server-events.ts";
import type { SubscriptionSpec } from "../../../src/events/types.ts";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import { CHECKPOINT_MS } from "../../../src/events/store/positions.ts";
import { COMMIT_DEBOUNCE_MS } from "../../../src/events/store/background-commits.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
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

test("a restart resumes after a page once the next page is asked for; pages after the first write no snapshot", async () => {
  const tmp = tmpDir("vigil-unit-hub-page-cursor");
  cleanups.add(() => tmp.cleanup());
  const polls: { cursor: unknown; restart: SubscriptionRecord | undefined; snapshotsWritten: number }[] = [];
  let store: EventsStore | null = null;
  const restartFrom = async () => {
    const copy = join(tmp.path, `restart-${polls.length}`);
    cpSync(join(tmp.path, "state"), copy, { recursive: true });
    const reopened = await EventsStore.open(copy, { maxPending: 1000, maxPendingBytes: 1 << 24 });
    const record = reopened.subscription(KEY);
    await reopened.close();
    return record;
  };
  const wire = {
    canStream: false,
    invalidate: () => {},
    list: async () => [{ name: SPEC.name, delivery: ["poll"] }],
    poll: async (params: Record<string, unknown>, signal: AbortSignal) => {
      polls.push({ cursor: params.cursor, restart: await restartFrom(), snapshotsWritten: store?.writes.snapshots ?? 0 });
      // The first page also announces the subscription (a commit of its own); the second is a plain one.
      if (polls.length === 1) return { events: [occurrence("a"), occurrence("b"), occurrence("c")], cursor: "c3", hasMore: false, nextPollMs: 1 };
      if (polls.length === 2) return { events: [occurrence("d"), occurrence("e")], cursor: "c5", hasMore: false, nextPollMs: 1 };
      // Later polls wait for the hub's close (long-poll style), so nothing else is written meanwhile.
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      return { events: [], cursor: "c5", hasMore: false, nextPollMs: 1 };
    },
  } as unknown as ServerEvents;
  const tuning = { ...TEST_EVENTS_TUNING, pollFloorMs: 1, longPollMs: 0 };
  const clock = new FakeScheduler();
  const dir = join(tmp.path, "state");
  mkdirSync(dir);
  store = await EventsStore.open(dir, { maxPending: tuning.maxPending, maxPendingBytes: tuning.maxPendingBytes, scheduler: clock });
  const services: EventsServices = {
    tuning,
    webhook: { available: true, routes: new WebhookRouteTable(), keys: new ServerKeyStore(), callbackUrl: (t) => `http://127.0.0.1:9/_vigil/mcp-events/${t}` },
    wire: () => wire,
    configured: () => [SPEC],
    eventServers: () => [SPEC.server],
  };
  const frames: EventsFrame[] = [];
  const hub = await EventsHub.open(recordingEventsSession("s1", frames), dir, services, true, Date.now, store, (e) => {
    throw e;
  });
  cleanups.add(() => hub.close());

  await waitFor(() => polls.length >= 3, { timeoutMs: 10_000, label: "the third poll" });
  expect(polls.map((p) => p.cursor)).toEqual([null, "c3", "c5"]);
  expect(store.pending().map((e) => (e.event as { eventId: string }).eventId)).toEqual(["a", "b", "c", "d", "e"]);
  // What a restart starts from when the next page is asked for: the page before it, whole.
  expect(polls[1]!.restart).toEqual({ cursor: "c3", recent: ["a", "b", "c"] });
  expect(polls[2]!.restart).toEqual({ cursor: "c5", recent: ["a", "b", "c", "d", "e"] });
  // The second page wrote no snapshot: its position rode in the log's append. The snapshot still says the first page.
  expect(polls[2]!.snapshotsWritten - polls[1]!.snapshotsWritten).toBe(0);
  expect((await EventsStore.readSnapshot(dir))?.subscriptions[KEY]?.cursor).toBe("c3");
  // At the checkpoint the snapshot catches up, and says which positions it covers.
  clock.advance(CHECKPOINT_MS + COMMIT_DEBOUNCE_MS);
  await waitFor(async () => (await EventsStore.readSnapshot(dir))?.subscriptions[KEY]?.cursor === "c5", { timeoutMs: 10_000, label: "the checkpoint" });
  const checkpoint = await EventsStore.readSnapshot(dir);
  expect(checkpoint?.subscriptions[KEY]?.recent).toEqual(["a", "b", "c", "d", "e"]);
  expect(checkpoint?.position).toBeGreaterThan(0);
});
