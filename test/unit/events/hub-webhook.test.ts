/**
 * The hub's side of webhook delivery (host.ts `ingest`, `persistWebhook`; events design notes
 * §4.3, §4.5): a delivery is acknowledged only once the pending log holding it is synced, in log
 * order; a duplicate waits for its first copy to be durable; a full queue, a failed write and a
 * write past its deadline answer 503 and the retry lands once; the tokens of subscriptions coming
 * back are reserved when the hub opens, and a forgotten subscription's token is released.
 *
 * A real store in a temp dir; its fault seam holds or fails the log write. Nothing sleeps.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EventsFrame } from "../../../src/events/frames.ts";
import { EventsHub } from "../../../src/events/hub.ts";
import type { EventsServices, EventsTuning } from "../../../src/events/ports.ts";
import { DedupWindow } from "../../../src/events/rules/dedup.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { EventsStore, type FaultOp } from "../../../src/events/store/events-store.ts";
import { EVENTS_SNAPSHOT_FILE } from "../../../src/events/store/files.ts";
import type { HostedSubscription } from "../../../src/events/subscription/host.ts";
import type { SubscriptionSpec } from "../../../src/events/types.ts";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import type { WebhookAbility, WebhookAnswer, WebhookRecord } from "../../../src/events/webhook/types.ts";
import { TEST_EVENTS_TUNING, recordingEventsSession } from "../../helpers/events-hub.ts";
import { tmpDir } from "../../helpers/fixture.ts";
import { waitFor } from "../../helpers/wait.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SPEC: SubscriptionSpec = { server: "srv", name: "ticket.updated", arguments: { project: "a" }, delivery: "webhook", action: "follow_up" };
const KEY = subscriptionKey(SPEC.server, SPEC.name, SPEC.arguments);
const token = (n: number) => n.toString(16).padStart(32, "0");
const record = (n: number): WebhookRecord => ({
  token: token(n), secret: `whsec_${Buffer.alloc(32, n).toString("base64")}`, previous: null, subscription_id: `sub-${n}`, refresh_before: null,
});

/** A log write that waits until released: the fault seam is awaited before the step it names. */
class Gate {
  private release: (() => void) | null = null;
  private holding: Promise<void> | null = null;
  failNext = 0;
  hold(): void {
    this.holding = new Promise((resolve) => (this.release = resolve));
  }
  open(): void {
    this.release?.();
    this.holding = null;
  }
  fault = async (op: FaultOp) => {
    if (op !== "log_append" && op !== "compact") return;
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error("EIO: planted"), { code: "EIO" });
    }
    if (this.holding !== null) await this.holding;
  };
}

function webhookAbility(routes = new WebhookRouteTable(), keys = new ServerKeyStore()): WebhookAbility & { available: true } {
  return { available: true, routes, keys, callbackUrl: (t) => `http://127.0.0.1:9/_vigil/mcp-events/${t}` };
}

interface Opened {
  hub: EventsHub;
  store: EventsStore;
  gate: Gate;
  frames: EventsFrame[];
  dir: string;
  wireCalls: string[];
}

async function openHub(o: {
  dir?: string; tuning?: Partial<EventsTuning>; webhook?: WebhookAbility; configured?: SubscriptionSpec[]; onWire?: () => void;
} = {}): Promise<Opened> {
  let dir = o.dir;
  if (dir === undefined) {
    const tmp = tmpDir("vigil-unit-hub-webhook");
    cleanups.push(() => tmp.cleanup());
    dir = tmp.path;
  }
  const tuning = { ...TEST_EVENTS_TUNING, ...o.tuning };
  const gate = new Gate();
  const store = await EventsStore.open(dir, { maxPending: tuning.maxPending, maxPendingBytes: tuning.maxPendingBytes, fault: gate.fault });
  const frames: EventsFrame[] = [];
  const wireCalls: string[] = [];
  const services: EventsServices = {
    tuning,
    webhook: o.webhook ?? webhookAbility(),
    wire: (server) => {
      wireCalls.push(server);
      o.onWire?.();
      throw new Error("not connected");
    },
    configured: () => o.configured ?? [],
    eventServers: () => ["srv"],
  };
  const hub = await EventsHub.open(recordingEventsSession("s1", frames), dir, services, true, Date.now, store, (e) => { throw e; });
  cleanups.push(async () => {
    gate.open();
    await hub.close();
  });
  return { hub, store, gate, frames, dir, wireCalls };
}

/** A subscription as the webhook route hands it to the host (no loop of its own; `stop` for the hub's close). */
function hosted(spec: SubscriptionSpec = SPEC, recent: string[] = []): HostedSubscription {
  const sub: HostedSubscription & { stop(): Promise<void> } = {
    key: subscriptionKey(spec.server, spec.name, spec.arguments), spec, origin: "runtime", cursor: null, dedup: new DedupWindow(recent),
    delivered: 0, duplicates: 0, up: true, markUp: () => {}, stored: async () => {}, stop: async () => {},
  };
  return sub;
}

const occurrence = (id: string, cursor?: string) => ({ eventId: id, name: "ticket.updated", timestamp: "2030-01-01T00:00:00Z", data: { id }, ...(cursor !== undefined ? { cursor } : {}) });
const eventIds = (store: EventsStore) => store.pending().map((e) => (e.event as { eventId?: string }).eventId);

/** Whether a promise has settled, after letting every ready continuation run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
  return done;
}

describe("EventsHub.ingest", () => {
  test("concurrent deliveries are acknowledged in log order, each only once its write is synced", async () => {
    const { hub, store, gate } = await openHub();
    const sub = hosted();
    gate.hold(); // the first write is held: A is in flight, B waits for the next sync
    const acks: string[] = [];
    const a = hub.ingest(sub, occurrence("A")).then((r) => (acks.push("A"), r));
    const b = hub.ingest(sub, occurrence("B")).then((r) => (acks.push("B"), r));
    expect(await settled(a)).toBe(false);
    expect(await settled(b)).toBe(false);
    gate.open();
    expect(await a).toEqual({ status: 200, body: {} });
    expect(await b).toEqual({ status: 200, body: {} });
    expect(acks).toEqual(["A", "B"]);
    expect(eventIds(store)).toEqual(["A", "B"]);
    // One sync per write pass: B's write covered whatever arrived while A's was in flight.
    expect(store.writes.logSyncs).toBeLessThanOrEqual(2);
  });

  test("a duplicate waits until its first copy is durable, then is answered 200 and stored once", async () => {
    const { hub, store, gate } = await openHub();
    const sub = hosted();
    gate.hold();
    const first = hub.ingest(sub, occurrence("A"));
    const again = hub.ingest(sub, occurrence("A"));
    expect(await settled(again)).toBe(false);
    gate.open();
    expect((await first).status).toBe(200);
    expect((await again).status).toBe(200);
    expect(eventIds(store)).toEqual(["A"]);
    expect(sub.duplicates).toBe(1);
  });

  test("a full queue answers 503 and records nothing", async () => {
    const { hub, store } = await openHub({ tuning: { maxPending: 1 } });
    const sub = hosted();
    expect((await hub.ingest(sub, occurrence("A"))).status).toBe(200);
    expect(await hub.ingest(sub, occurrence("B"))).toEqual({ status: 503 });
    expect(eventIds(store)).toEqual(["A"]);
    expect(sub.dedup.has("B")).toBe(false);
  });

  test("a failed write answers 503; the server's retry lands the event once", async () => {
    const { hub, store, gate, dir } = await openHub();
    const sub = hosted();
    gate.failNext = 1;
    expect(await hub.ingest(sub, occurrence("A", "w-1"))).toEqual({ status: 503 });
    expect((await hub.ingest(sub, occurrence("A", "w-1"))).status).toBe(200);
    expect(eventIds(store)).toEqual(["A"]);
    const reopened = await EventsStore.open(dir, { maxPending: 10, maxPendingBytes: 1 << 20 });
    cleanups.push(() => reopened.close());
    expect(eventIds(reopened)).toEqual(["A"]);
  });

  test("a write past the ack deadline answers 503; the retry after it lands gets 200, stored once", async () => {
    const { hub, store, gate } = await openHub({ tuning: { ackTimeoutMs: 30 } });
    const sub = hosted();
    gate.hold();
    expect(await hub.ingest(sub, occurrence("A"))).toEqual({ status: 503 });
    gate.open();
    expect((await hub.ingest(sub, occurrence("A"))).status).toBe(200);
    expect(eventIds(store)).toEqual(["A"]);
  });

  test("an invalid occurrence is a gap (invalid_event) queued for the model, answered 200", async () => {
    const { hub, store, frames } = await openHub();
    const sub = hosted();
    const answer: WebhookAnswer = await hub.ingest(sub, { eventId: 7, name: "ticket.updated", cursor: "w-3" });
    expect(answer.status).toBe(200);
    const [entry] = store.pending();
    expect(entry?.event).toMatchObject({ gap: true, reason: "invalid_event" });
    expect(frames.some((f) => f.type === "mcp_event_status" && JSON.stringify(f).includes("invalid_event"))).toBe(true);
    expect(sub.cursor).toBe("w-3");
  });

  test("the body's cursor is the watermark; the snapshot is not rewritten per delivery, yet window and cursor reach it", async () => {
    const { hub, store, dir } = await openHub({ configured: [] });
    // A subscription the hub knows (its record is written on the debounced flush).
    const sub = hosted();
    (hub as unknown as { subs: Map<string, HostedSubscription> }).subs.set(sub.key, sub);
    const n = 40;
    for (let i = 0; i < n; i++) expect((await hub.ingest(sub, occurrence(`e${i}`, `w-${i}`))).status).toBe(200);
    expect(sub.cursor).toBe(`w-${n - 1}`);
    expect(store.writes.logSyncs).toBeGreaterThanOrEqual(n);
    expect(store.writes.snapshots).toBeLessThan(n / 4);
    await waitFor(() => {
      const file = join(dir, EVENTS_SNAPSHOT_FILE);
      const text = existsSync(file) ? readFileSync(file, "utf8") : "";
      return text.includes(`"w-${n - 1}"`) && text.includes(`"e${n - 1}"`);
    }, { timeoutMs: 10_000, label: "the debounced snapshot with the last cursor and eventId" });
  });
});

describe("webhook records, reservations and keys", () => {
  function seedSnapshot(dir: string, o: { lastClient: number | null; runtime?: boolean; extra?: Record<string, unknown>; serverKeys?: Record<string, string[]> }) {
    const subscriptions: Record<string, unknown> = {
      [KEY]: { cursor: "c1", recent: ["old"], ...(o.runtime === true ? { runtime: SPEC } : {}), webhook: record(1) },
      ...o.extra,
    };
    writeFileSync(join(dir, EVENTS_SNAPSHOT_FILE), JSON.stringify({
      version: "vigil.mcp-events.v2", subscriptions, ...(o.serverKeys ? { server_keys: o.serverKeys } : {}), last_client_ms: o.lastClient,
    }));
  }

  test("on open, the tokens of subscriptions coming back are reserved before any starts; others are not", async () => {
    const tmp = tmpDir("vigil-unit-hub-webhook");
    cleanups.push(() => tmp.cleanup());
    const removed = { ...SPEC, name: "removed.from.config" };
    const removedKey = subscriptionKey(removed.server, removed.name, removed.arguments);
    seedSnapshot(tmp.path, { lastClient: null, extra: { [removedKey]: { cursor: null, recent: [], webhook: record(2) } } });
    const routes = new WebhookRouteTable();
    const seenAtStart: string[] = [];
    await openHub({
      dir: tmp.path,
      webhook: webhookAbility(routes),
      configured: [SPEC],
      onWire: () => seenAtStart.push(routes.lookup(token(1)).kind),
    });
    expect(routes.lookup(token(1))).toEqual({ kind: "held", reason: "reserved" });
    // Removed from the config: not coming back, so not held (410 once any restore window closed).
    expect(routes.lookup(token(2))).toEqual({ kind: "gone" });
    await waitFor(() => seenAtStart.length > 0, { timeoutMs: 10_000, label: "the configured subscription's first wire call" });
    expect(seenAtStart[0]).toBe("held");
  });

  test("a runtime record within the TTL is reserved; an expired one is forgotten, token and secret included", async () => {
    const fresh = tmpDir("vigil-unit-hub-webhook");
    const stale = tmpDir("vigil-unit-hub-webhook");
    cleanups.push(() => fresh.cleanup(), () => stale.cleanup());
    seedSnapshot(fresh.path, { lastClient: Date.now(), runtime: true });
    seedSnapshot(stale.path, { lastClient: 1, runtime: true });
    const routes = new WebhookRouteTable();
    await openHub({ dir: fresh.path, webhook: webhookAbility(routes) });
    expect(routes.lookup(token(1)).kind).toBe("held");
    const other = new WebhookRouteTable();
    const { hub } = await openHub({ dir: stale.path, webhook: webhookAbility(other) });
    expect(other.lookup(token(1)).kind).toBe("gone");
    await hub.close();
    const text = readFileSync(join(stale.path, EVENTS_SNAPSHOT_FILE), "utf8");
    expect(text).not.toContain("webhook");
    expect(text).not.toContain("whsec_");
  });

  test("forget releases the token (410 from then on) and drops the record; persistWebhook writes record and keys", async () => {
    const routes = new WebhookRouteTable();
    const keys = new ServerKeyStore();
    const { hub, store, dir } = await openHub({ webhook: webhookAbility(routes, keys) });
    const sub = hosted();
    (hub as unknown as { subs: Map<string, HostedSubscription> }).subs.set(sub.key, sub);
    const x = Buffer.alloc(32, 5).toString("base64url");
    keys.add("https://events.example.com", [x]);
    hub.persistWebhook(sub, record(3));
    await hub.commit();
    const written = JSON.parse(readFileSync(join(dir, EVENTS_SNAPSHOT_FILE), "utf8"));
    expect(written.subscriptions[KEY].webhook).toEqual(record(3));
    expect(written.server_keys).toEqual({ "https://events.example.com": [x] });
    routes.reserve(token(3));
    hub.forget(sub);
    expect(routes.lookup(token(3)).kind).toBe("gone");
    await store.commit();
    expect(readFileSync(join(dir, EVENTS_SNAPSHOT_FILE), "utf8")).not.toContain("whsec_");
  });

  test("server keys in the snapshot seed the process's key store on open", async () => {
    const tmp = tmpDir("vigil-unit-hub-webhook");
    cleanups.push(() => tmp.cleanup());
    const x = Buffer.alloc(32, 6).toString("base64url");
    seedSnapshot(tmp.path, { lastClient: null, serverKeys: { "https://events.example.com": [x] } });
    const keys = new ServerKeyStore();
    await openHub({ dir: tmp.path, webhook: webhookAbility(new WebhookRouteTable(), keys) });
    expect(keys.keys("https://events.example.com").length).toBe(1);
  });

  test("a delivery retried across a crash is not queued twice: pending eventIds seed the window", async () => {
    const tmp = tmpDir("vigil-unit-hub-webhook");
    cleanups.push(() => tmp.cleanup());
    // The log holds A (acknowledged), the snapshot's window does not (its debounced write was lost).
    seedSnapshot(tmp.path, { lastClient: null });
    const before = await EventsStore.open(tmp.path, { maxPending: 10, maxPendingBytes: 1 << 20 });
    before.tryAdd({ action: "follow_up", server: SPEC.server, name: SPEC.name, arguments: SPEC.arguments, event: occurrence("A") });
    await before.close();
    const { hub, store } = await openHub({ dir: tmp.path, configured: [SPEC] });
    const sub = (hub as unknown as { subs: Map<string, HostedSubscription> }).subs.get(KEY)!;
    expect(sub.dedup.has("A")).toBe(true);
    expect((await hub.ingest(sub, occurrence("A"))).status).toBe(200);
    expect(eventIds(store)).toEqual(["A"]);
  });
});
