/**
 * The MCP Events metrics (issue 15 item 1; src/events/metrics.ts, metrics-gauges.ts): what counts
 * as received, duplicate, acknowledged (only after the write pass that makes it durable), delivered
 * and dropped; the latencies they observe; and the scrape-time gauges, which forget a closed hub.
 *
 * The meter alone with a fake clock, then a real store and hub in a temp dir (its fault seam fails
 * the log write). The registry is the process's one (METRICS): each test uses its own server name.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { EventsFrame } from "../../../src/events/frames.ts";
import { EventsHub } from "../../../src/events/hub.ts";
import { EventsMeter, RESTORED_MODE } from "../../../src/events/metrics.ts";
import { meterHub, meteredHubs, pendingSamples, subscriptionSamples } from "../../../src/events/metrics-gauges.ts";
import type { EventsServices } from "../../../src/events/ports.ts";
import { DedupWindow } from "../../../src/events/rules/dedup.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { EventsStore, type FaultOp } from "../../../src/events/store/events-store.ts";
import type { HostedSubscription } from "../../../src/events/subscription/host.ts";
import type { PendingEntry, SubscriptionSpec } from "../../../src/events/types.ts";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import { EVENTS, METRICS } from "../../../src/shared/metrics/catalog.ts";
import { renderMetrics } from "../../../src/shared/metrics/render.ts";
import { TEST_EVENTS_TUNING, recordingEventsSession } from "../../helpers/events-hub.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const EVENT = "ticket.updated";
type EventCounter = "received" | "acknowledged" | "duplicates" | "delivered" | "dropped";
const count = (family: EventCounter, server: string, mode: string): number => EVENTS[family].at(server, EVENT, mode).value;
const entry = (seq: number, server: string, gap = false): PendingEntry => ({
  seq, action: "follow_up", server, name: EVENT, arguments: {},
  event: gap ? { gap: true, cursor: null, reason: "truncated", eventId: null } : { eventId: `e${seq}` },
});

describe("EventsMeter", () => {
  test("an occurrence is acknowledged only by the write pass after it; a failed pass leaves it for the next", async () => {
    let now = 1000;
    const queued = new Set([1, 2]);
    const meter = new EventsMeter((seq) => queued.has(seq), () => now);
    const server = "m-ack";
    const ack = EVENTS.ackLatency.at("poll");
    const before = { n: ack.count, sum: ack.sum };
    meter.stored(1, entry(1, server), { subscriptionKey: "k", delivery: "poll", receivedMs: 900 });
    meter.stored(2, entry(2, server, true), { subscriptionKey: "k" }); // a gap notice: not an event
    expect(count("acknowledged", server, "poll")).toBe(0);
    await expect(meter.pass(async () => Promise.reject(new Error("EIO")))).rejects.toThrow("EIO");
    expect(count("acknowledged", server, "poll")).toBe(0);
    now = 1250;
    await meter.pass(async () => {});
    expect(count("acknowledged", server, "poll")).toBe(1);
    expect(ack.count - before.n).toBe(1);
    expect(ack.sum - before.sum).toBeCloseTo(0.35, 6); // receipt at 900 ms, durable at 1250 ms
    // Nothing left waiting: the next pass acknowledges nothing again.
    await meter.pass(async () => {});
    expect(count("acknowledged", server, "poll")).toBe(1);
    expect(meter.remembered).toBe(1);
  });

  test("delivered and dropped by the mode it came in; delivery latency from its acknowledgement; restored events by mode restored", async () => {
    let now = 0;
    const meter = new EventsMeter(() => true, () => now);
    const server = "m-done";
    const lat = EVENTS.deliveryLatency.at("push");
    const before = { n: lat.count, sum: lat.sum };
    for (const seq of [1, 2]) meter.stored(seq, entry(seq, server), { subscriptionKey: "k", delivery: "push", receivedMs: 0 });
    now = 100;
    await meter.pass(async () => {});
    now = 600;
    meter.done([entry(1, server)], { delivered: { batchTag: "mcp_events:1", runId: "r" } });
    meter.done([entry(2, server)], { dropped: { attempts: 3, errorCode: "model_error" } });
    meter.done([entry(3, server)], { delivered: { batchTag: "mcp_events:2", runId: "r" } }); // queued by an earlier process
    expect(count("delivered", server, "push")).toBe(1);
    expect(count("dropped", server, "push")).toBe(1);
    expect(count("delivered", server, RESTORED_MODE)).toBe(1);
    expect(lat.count - before.n).toBe(1);
    expect(lat.sum - before.sum).toBeCloseTo(0.5, 6);
    expect(meter.remembered).toBe(0);
  });

  test("a notify occurrence with nothing to store is acknowledged at once; one that left before its pass is not remembered", async () => {
    const meter = new EventsMeter(() => false);
    const server = "m-notify";
    expect(meter.unstored(entry(0, server), { subscriptionKey: "k", delivery: "webhook" })).toBe(true);
    expect(count("acknowledged", server, "webhook")).toBe(1);
    meter.stored(5, entry(5, server), { subscriptionKey: "k", delivery: "webhook" });
    await meter.pass(async () => {});
    expect(count("acknowledged", server, "webhook")).toBe(2);
    expect(meter.remembered).toBe(0);
  });
});

describe("the gauges", () => {
  const sub = (server: string, mode: string | null, kind: string) => ({ spec: { server }, mode, phase: { kind } });

  test("pending by session (summed when two hubs share a name); subscriptions by server, mode and state", () => {
    const hubs = [
      { session: "a", store: { pendingCount: 2, pendingBytes: 200 }, subscriptions: () => [sub("s", "poll", "up"), sub("s", "poll", "up"), sub("s", null, "starting")] },
      { session: "a", store: { pendingCount: 1, pendingBytes: 50 }, subscriptions: () => [sub("t", "push", "refused")] },
      { session: "b", store: { pendingCount: 0, pendingBytes: 0 }, subscriptions: () => [] },
    ];
    expect(pendingSamples(hubs, "pendingCount")).toEqual([{ labels: { session: "a" }, value: 3 }, { labels: { session: "b" }, value: 0 }]);
    expect(pendingSamples(hubs, "pendingBytes")).toEqual([{ labels: { session: "a" }, value: 250 }, { labels: { session: "b" }, value: 0 }]);
    expect(subscriptionSamples(hubs)).toEqual([
      { labels: { server: "s", mode: "poll", state: "active" }, value: 2 },
      { labels: { server: "s", mode: "none", state: "starting" }, value: 1 },
      { labels: { server: "t", mode: "push", state: "refused" }, value: 1 },
    ]);
  });

  test("a hub's series are scraped while it is open and gone once it closes", () => {
    const before = meteredHubs();
    const off = meterHub({ session: "gauge-probe", store: { pendingCount: 7, pendingBytes: 70 }, subscriptions: () => [sub("probe-srv", "webhook", "up")] });
    const text = renderMetrics(METRICS);
    expect(text).toContain('vigil_events_pending{session="gauge-probe"} 7\n');
    expect(text).toContain('vigil_events_pending_bytes{session="gauge-probe"} 70\n');
    expect(text).toContain('vigil_events_subscriptions{server="probe-srv",mode="webhook",state="active"} 1\n');
    off();
    off();
    expect(meteredHubs()).toBe(before);
    expect(renderMetrics(METRICS)).not.toContain("gauge-probe");
  });
});

// ---- a real hub and store ----

async function openHub(name: string) {
  const tmp = tmpDir("vigil-unit-events-metrics");
  cleanups.push(() => tmp.cleanup());
  let failNext = 0;
  const fault = async (op: FaultOp) => {
    if ((op === "log_append" || op === "compact") && failNext-- > 0) throw Object.assign(new Error("EIO: planted"), { code: "EIO" });
  };
  const store = await EventsStore.open(tmp.path, { maxPending: 1000, maxPendingBytes: 1 << 24, fault });
  const services: EventsServices = {
    tuning: TEST_EVENTS_TUNING,
    webhook: { available: true, routes: new WebhookRouteTable(), keys: new ServerKeyStore(), callbackUrl: (t) => `http://127.0.0.1:9/_vigil/mcp-events/${t}` },
    wire: () => {
      throw new Error("not connected");
    },
    configured: () => [],
    eventServers: () => ["srv"],
  };
  const frames: EventsFrame[] = [];
  const hub = await EventsHub.open(recordingEventsSession(name, frames), tmp.path, services, true, Date.now, store, (e) => {
    throw e;
  });
  cleanups.push(() => hub.close());
  return { hub, store, failNext: (n: number) => (failNext = n) };
}

function hosted(server: string, mode: "webhook" | "poll" = "webhook"): HostedSubscription {
  const spec: SubscriptionSpec = { server, name: EVENT, arguments: {}, delivery: mode, action: "follow_up" };
  return {
    key: subscriptionKey(spec.server, spec.name, spec.arguments), spec, origin: "runtime", cursor: null, dedup: new DedupWindow([]),
    delivered: 0, duplicates: 0, up: true, mode, markUp: () => {}, stored: async () => {},
  };
}

const occurrence = (id: string) => ({ eventId: id, name: EVENT, timestamp: "2030-01-01T00:00:00Z", data: { id } });

describe("through a hub and its store", () => {
  test("received before dedup, duplicates, acknowledged after the fdatasync'd write, a failed write not acknowledged", async () => {
    const { hub, failNext } = await openHub("metrics-hub-1");
    const server = "h-webhook";
    const sub = hosted(server);
    expect((await hub.ingest(sub, occurrence("A"), performance.now())).status).toBe(200);
    expect((await hub.ingest(sub, occurrence("A"))).status).toBe(200);
    failNext(1);
    expect((await hub.ingest(sub, occurrence("B"))).status).toBe(503);
    expect(count("acknowledged", server, "webhook")).toBe(1);
    // The server's retry of B: received again, a duplicate (it was queued), and acknowledged by this write.
    expect((await hub.ingest(sub, occurrence("B"))).status).toBe(200);
    expect(count("received", server, "webhook")).toBe(4);
    expect(count("duplicates", server, "webhook")).toBe(2);
    expect(count("acknowledged", server, "webhook")).toBe(2);
  });

  test("a gap is counted by reason and mode; an invalid occurrence is a gap, not a received event", async () => {
    const { hub } = await openHub("metrics-hub-2");
    const server = "h-gap";
    const sub = hosted(server, "poll");
    expect(hub.gap(sub, { gap: true, cursor: null, reason: "truncated", eventId: null })).toBe(true);
    expect((await hub.ingest(sub, { eventId: 7 })).status).toBe(200);
    expect(EVENTS.gaps.at(server, EVENT, "poll", "truncated").value).toBe(1);
    expect(EVENTS.gaps.at(server, EVENT, "poll", "invalid_event").value).toBe(1);
    expect(count("received", server, "poll")).toBe(0);
  });

  test("pending gauges follow the queue, and a closed session's series disappear", async () => {
    const before = meteredHubs();
    const { hub } = await openHub("metrics-hub-3");
    expect(meteredHubs()).toBe(before + 1);
    await hub.ingest(hosted("h-pending"), occurrence("P"));
    expect(renderMetrics(METRICS)).toContain('vigil_events_pending{session="metrics-hub-3"} 1\n');
    await hub.close();
    expect(meteredHubs()).toBe(before);
    expect(renderMetrics(METRICS)).not.toContain('session="metrics-hub-3"');
  });
});
