// MCP Events push delivery in `vigil serve` (serve.md §6 items 3, 5, 6; design notes §5.4, §6),
// end to end: dist/vigil in stdio mode, the events fixture (over streamable HTTP, or over stdio
// started by vigil) and the in-process mock model. Every wait is bounded; no timing is asserted.
import { describe, expect, test } from "bun:test";
import type { MockModel } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type ControlClient, type EventsFixtureEnv, type FixtureState, waitControl } from "../helpers/events-fixture.ts";
import {
  type EventsEnv,
  StdioServe,
  eventsEnvironment,
  eventsFixtureStdio,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  runsFor,
  stdioServer,
  waitRuns,
} from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Frame, lastUserText, messagesOf } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";
const PUSH = { name: TICKETS, delivery: "push" };

const chatRequests = (model: MockModel) => model.requests.filter((r) => r.path.endsWith("/chat/completions"));

/** Every event id quoted in any message of any model request. */
function eventIdsSeenByModel(model: MockModel): Set<string> {
  const ids = new Set<string>();
  for (const r of chatRequests(model)) {
    for (const m of messagesOf(r)) {
      if (typeof m.content !== "string") continue;
      for (const match of m.content.matchAll(/event_id="([^"]*)"/g)) ids.add(match[1]!);
    }
  }
  return ids;
}

/** Waits (bounded) for a fixture state that satisfies `done`; returns it. */
function fixtureState(fx: ControlClient, done: (s: FixtureState) => boolean, what: string, ms = 15_000): Promise<FixtureState> {
  return waitFor(() => fx.state(), {
    until: done,
    timeoutMs: ms,
    label: `fixture: ${what}`,
    show: (s) => ({ streams_total: s.streams_total, streams_open: s.streams_open, list_calls: s.list_calls, cancelled: s.cancelled, streams: s.streams.slice(-5) }),
  });
}

let listIds = 0;

/** The ticket subscription's status, as `mcp_events_list` reports it (data.subscriptions[]). */
async function subscriptionStatus(serve: StdioServe): Promise<Record<string, unknown>> {
  const list = await serve.command({ type: "mcp_events_list", id: `list-${++listIds}` });
  expect(list.success).toBe(true);
  const sub = (list.data.subscriptions as Record<string, unknown>[]).find((s) => s.name === TICKETS);
  if (sub === undefined) throw new Error(`no ${TICKETS} subscription in ${JSON.stringify(list.data)}`);
  return sub;
}

/** Polls `mcp_events_list` (bounded) until the ticket subscription's status satisfies `done`. */
function waitSubscription(serve: StdioServe, done: (s: Record<string, unknown>) => boolean, what: string, ms = 10_000): Promise<Record<string, unknown>> {
  return waitFor(() => subscriptionStatus(serve), { until: done, timeoutMs: ms, label: `subscription: ${what}` });
}

/** A stdio serve with one configured push subscription to the HTTP fixture, up and streaming. */
async function httpPush(knobs: Record<string, string> = {}, fixtureEnv: EventsFixtureEnv = {}): Promise<{ env: EventsEnv; fx: NonNullable<EventsEnv["fixture"]>; serve: StdioServe }> {
  const env = await eventsEnvironment(cleanups, {
    fixtureEnv,
    servers: (fx) => [httpServer(fx!, "tickets", [PUSH])],
    knobs,
  });
  const serve = StdioServe.start(cleanups, env);
  const subscribed = await serve.until(isStatus("subscribed"));
  expect((subscribed.subscription as { delivery: string }).delivery).toBe("push");
  return { env, fx: env.fixture!, serve };
}

const isRunEnd = (f: Frame) => f.type === "run_end";

/** Waits (bounded) until at least `n` frames match. */
async function untilCount(serve: StdioServe, match: (f: Frame) => boolean, n: number, ms = 15_000): Promise<void> {
  await waitFor(() => serve.count(match), {
    until: (seen) => seen >= n,
    timeoutMs: ms,
    label: `${n} matching frames`,
    show: (seen) => `${seen} matching; frames: ${JSON.stringify(serve.frames.map((f) => f.type + (f.kind ? `:${f.kind}` : "")))}`,
  });
}

/** The model requests whose last user message carries a `[gap]` notice. */
const gapNotices = (model: MockModel) => chatRequests(model).filter((r) => lastUserText(r).includes("[gap]"));

describe("MCP events: push", () => {
  test("over stdio: the frame carries the cursor, a redelivery is deduplicated, heartbeats keep the stream, unsubscribe cancels it", async () => {
    const entry = eventsFixtureStdio({ env: { MCP_FIXTURE_HEARTBEAT_MS: 100 }, cleanups });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tickets", [])],
      // Well under the time watched below: only the heartbeats can keep the stream from idling out.
      knobs: { VIGIL_EVENTS_STREAM_IDLE_MS: "700" },
    });
    const serve = StdioServe.start(cleanups, env);
    const fx = await waitControl(entry.controlFile, { cleanups });

    const sub = await serve.command({ type: "mcp_events_subscribe", id: "sub", server: "tickets", name: TICKETS, delivery: "push" });
    expect(sub.success).toBe(true);
    expect(sub.data).toMatchObject({ delivery: "push", state: "active" });

    const emitted = await fx.control<{ seq: number }>("emit", { event_id: "p-1" });
    const frame = await serve.until(isEventFrame("p-1"));
    expect(frame).toMatchObject({ server: "tickets", name: TICKETS, delivery: "push", action: "follow_up" });
    expect((frame.event as { cursor?: unknown }).cursor).toBe(String(emitted.seq));
    await waitRuns(env.model, inBatch("p-1"));

    // The same occurrence again: counted as a duplicate, never a second frame or run.
    await fx.control("redeliver", { event_id: "p-1" });
    const status = await waitSubscription(serve, (s) => (s.duplicates as number) >= 1, "a duplicate counted");
    expect(status.delivered).toBe(1);

    // Several heartbeats (100 ms) and two idle limits (700 ms) go by: the stream is not replaced.
    // Counted in heartbeats the fixture wrote (15 span two idle limits), not on the test's clock.
    const beats = (await fx.state()).heartbeats;
    const steady = await fixtureState(fx, (s) => s.heartbeats >= beats + 15, "15 more heartbeats");
    expect(steady.streams_total).toBe(1);
    expect(steady.streams_open).toBe(1);
    expect(serve.count(isEventFrame("p-1"))).toBe(1);
    expect(runsFor(env.model, inBatch("p-1"))).toBe(1);

    const unsub = await serve.command({ type: "mcp_events_unsubscribe", id: "unsub", server: "tickets", name: TICKETS });
    expect(unsub.data).toEqual({ removed: true });
    const streamId = steady.streams[0]!.id;
    const cancelled = await fixtureState(fx, (s) => s.cancelled.includes(streamId), "notifications/cancelled for the stream");
    expect(cancelled.methods).toContain("notifications/cancelled");
    expect(cancelled.streams[0]!.end).toBe("cancelled");
  });

  test("over streamable HTTP: an idle stream is reconnected from its cursor without duplicates, and a termination is reported and resubscribed", async () => {
    // Heartbeats are effectively off (60 s) and the idle limit is 1 s, so the stream is replaced
    // whenever it has been quiet for a second; events emitted while the fixture is silenced are
    // never sent live, so they can only arrive through the replay of a reconnect from the cursor.
    const { env, fx, serve } = await httpPush({ VIGIL_EVENTS_STREAM_IDLE_MS: "1000" }, { MCP_FIXTURE_HEARTBEAT_MS: 60_000 });
    const first = await fx.control<{ seq: number }>("emit", { event_id: "h-1" });
    expect(((await serve.until(isEventFrame("h-1"))).event as { cursor?: unknown }).cursor).toBe(String(first.seq));

    await fx.control("silence", { silent: true });
    const before = (await fx.state()).streams_total;
    await fx.control("emit", { event_id: "h-2" });
    const last = await fx.control<{ seq: number }>("emit", { event_id: "h-3" });
    // The reconnect that happens during the silence asks for everything after h-1.
    const during = await fixtureState(fx, (s) => s.streams_total > before, "a reconnect during the silence");
    expect(during.streams[before]!.cursor).toBe(String(first.seq));
    await fx.control("silence", { silent: false });

    await serve.until(isEventFrame("h-2"));
    await serve.until(isEventFrame("h-3"));
    // The next reconnect starts after h-3: nothing is replayed twice.
    await fixtureState(fx, (s) => s.streams.some((r) => r.cursor === String(last.seq)), "a reconnect from h-3's cursor");
    const cursors = (await fx.state()).streams.map((r) => (r.cursor === null ? 0 : Number(r.cursor)));
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
    await waitRuns(env.model, inBatch("h-2"));
    await waitRuns(env.model, inBatch("h-3"));
    const status = await subscriptionStatus(serve);
    expect(status).toMatchObject({ delivered: 3, duplicates: 0 });
    for (const id of ["h-1", "h-2", "h-3"]) {
      expect(serve.count(isEventFrame(id))).toBe(1);
      expect(runsFor(env.model, inBatch(id))).toBe(1);
    }

    await fx.control("terminate");
    const terminated = await serve.until(isStatus("terminated"));
    expect((terminated.error as { code: number }).code).toBe(-32012);
    await serve.until(isStatus("resubscribed"));
    await fx.control("emit", { event_id: "h-4" });
    await serve.until(isEventFrame("h-4"));
    await waitRuns(env.model, inBatch("h-4"));
  });

  test("events arriving during a busy run are shown live and coalesce into one follow-up run after it", async () => {
    const { env, fx, serve } = await httpPush();
    env.model.script([{ stall: true, then: { text: "done" } }]);
    serve.send({ type: "prompt", id: "p1", message: "work on something" });
    await env.model.waitForRequests(1, 10_000);

    for (const id of ["busy-1", "busy-2", "busy-3"]) await fx.control("emit", { event_id: id });
    for (const id of ["busy-1", "busy-2", "busy-3"]) await serve.until(isEventFrame(id));
    // The frames came while the run was still held at the model.
    expect(serve.count(isRunEnd)).toBe(0);
    expect(chatRequests(env.model)).toHaveLength(1);

    expect(env.model.release()).toBe(1);
    await waitRuns(env.model, "3 events arrived");
    const batch = chatRequests(env.model).find((r) => lastUserText(r).includes("3 events arrived"))!;
    for (const id of ["busy-1", "busy-2", "busy-3"]) expect(lastUserText(batch)).toContain(inBatch(id));
    await untilCount(serve, isRunEnd, 2);
    // What is checked is that no further run starts: once the queue is empty (the batch delivered
    // and marked done) the coalescer has nothing it could inject.
    await waitFor(async () => (await serve.command({ type: "mcp_events_list", id: `list-${++listIds}` })).data.pending === 0, {
      timeoutMs: 10_000,
      label: "an empty events queue",
    });
    expect(chatRequests(env.model)).toHaveLength(2);
    expect(serve.count(isRunEnd)).toBe(2);
  });

  // A burst far larger than the stream buffer is held back on the server's side (backpressure:
  // the transport stops reading while the stream is full), not overflowed: one stream, no
  // overflow → reconnect, every event once. (The overflow itself, the last resort, is unit-tested:
  // test/unit/events/push-stream-backpressure.test.ts.)
  test("over http: a burst of 15 times the stream buffer loses nothing and never overflows", async () => {
    const { env, fx, serve } = await httpPush({ VIGIL_EVENTS_STREAM_BUFFER: "4" });
    const before = await fx.state();
    const burst = await fx.control<{ first_seq: number; last_seq: number }>("emit_burst", { count: 60 });
    expect(burst).toEqual({ first_seq: 1, last_seq: 60 });
    const ids = Array.from({ length: 60 }, (_, i) => `evt-${i + 1}`);
    const delivered = () => ids.filter((id) => serve.count(isEventFrame(id)) > 0).length;
    await waitFor(() => delivered() === 60, { timeoutMs: 20_000, label: "60 event frames" });
    for (const id of ids) expect(serve.count(isEventFrame(id))).toBe(1);
    expect(serve.frames.some((f) => isStatus("error")(f) && /overflow/.test(String(f.error)))).toBe(false);
    expect((await fx.state()).streams_total).toBe(before.streams_total);

    const seen = () => ids.filter((id) => eventIdsSeenByModel(env.model).has(id)).length;
    await waitFor(() => seen() === 60, { timeoutMs: 20_000, label: "all 60 events in model messages" });
    for (const id of ids) expect(runsFor(env.model, inBatch(id))).toBe(1);
  });

  test("over stdio: a burst of 75 times the stream buffer loses nothing and never overflows", async () => {
    const entry = eventsFixtureStdio({ cleanups });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tickets", [PUSH])],
      knobs: { VIGIL_EVENTS_STREAM_BUFFER: "4" },
    });
    const serve = StdioServe.start(cleanups, env);
    const fx = await waitControl(entry.controlFile, { cleanups });
    await serve.until(isStatus("subscribed"));
    const before = await fx.state();
    await fx.control("emit_burst", { count: 300 });
    const ids = Array.from({ length: 300 }, (_, i) => `evt-${i + 1}`);
    const delivered = () => ids.filter((id) => serve.count(isEventFrame(id)) > 0).length;
    await waitFor(() => delivered() === 300, { timeoutMs: 20_000, label: "300 event frames" });
    for (const id of ids) expect(serve.count(isEventFrame(id))).toBe(1);
    expect(serve.frames.some((f) => isStatus("error")(f) && /overflow/.test(String(f.error)))).toBe(false);
    expect((await fx.state()).streams_total).toBe(before.streams_total);
  });

  test("a schema_changed termination re-discovers, resubscribes, tells the model of the gap, and delivery continues", async () => {
    const { env, fx, serve } = await httpPush();
    const before = await fx.state();
    await fx.control("schema_change");
    const terminated = await serve.until(isStatus("terminated"));
    expect(terminated.error).toMatchObject({ code: -32014, data: { reason: "schema_changed" } });
    await serve.until(isStatus("resubscribed"));
    const after = await fx.state();
    expect(after.list_calls).toBeGreaterThan(before.list_calls);
    expect(after.streams_total).toBeGreaterThan(before.streams_total);
    expect(serve.count(isStatus("refused"))).toBe(0);
    await waitFor(() => gapNotices(env.model).length > 0, { timeoutMs: 10_000, label: "a gap notice to the model" });
    expect(lastUserText(gapNotices(env.model)[0]!)).toContain("may have been missed");

    await fx.control("emit", { event_id: "after-schema" });
    await serve.until(isEventFrame("after-schema"));
    await waitRuns(env.model, inBatch("after-schema"));
  });

  test("the re-discovery budget recovers after a healthy period: six schema changes in a row are each resubscribed", async () => {
    // Every period up counts as healthy (1 ms), so the budget of 5 re-discoveries never runs out.
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [])],
      knobs: { VIGIL_EVENTS_HEALTHY_MS: "1" },
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    const sub = await serve.command({ type: "mcp_events_subscribe", id: "sub", server: "tickets", name: TICKETS, delivery: "push" });
    expect(sub.success).toBe(true);
    for (let n = 1; n <= 6; n++) {
      await fx.control("schema_change");
      await untilCount(serve, isStatus("resubscribed"), n, 15_000);
    }
    expect(serve.count(isStatus("terminated"))).toBe(6);
    expect(serve.count(isStatus("refused"))).toBe(0);
    await fx.control("emit", { event_id: "after-six" });
    await serve.until(isEventFrame("after-six"));
    expect(await subscriptionStatus(serve)).toMatchObject({ state: "active", delivery: "push" });
  }, 30_000);

  test("a stream error is reported and the same stream carries on", async () => {
    const { fx, serve } = await httpPush();
    await fx.control("emit", { event_id: "before-error" });
    await serve.until(isEventFrame("before-error"));
    const before = await fx.state();
    await fx.control("stream_error");
    const error = await serve.until((f) => isStatus("error")(f) && String(f.error).includes("UpstreamError"));
    expect(error).toMatchObject({ server: "tickets", name: TICKETS });
    await fx.control("emit", { event_id: "after-error" });
    await serve.until(isEventFrame("after-error"));
    const after = await fx.state();
    expect(after.streams_total).toBe(before.streams_total);
    expect(after.streams_open).toBe(1);
  });

  test("a push gap (active with truncated) is reported as a gap frame and explained to the model", async () => {
    const { env, fx, serve } = await httpPush();
    await fx.control("emit", { event_id: "g-1" });
    await serve.until(isEventFrame("g-1"));
    await fx.control("gap");
    const gap = await serve.until(isStatus("gap"));
    expect(gap).toMatchObject({ server: "tickets", name: TICKETS, reason: "truncated", cursor: "1" });
    await waitFor(() => gapNotices(env.model).length > 0, { timeoutMs: 10_000, label: "a gap notice to the model" });
    const notice = lastUserText(gapNotices(env.model)[0]!);
    expect(notice).toContain("may have been missed");
    expect(notice).toContain("`ticket.updated` on `tickets`");
  });

  // Each HTTP push stream holds one of the process's fetch slots for its lifetime: past the
  // budget, subscriptions poll where the event offers it, so model and tool calls keep a slot.
  test("past VIGIL_EVENTS_MAX_HTTP_STREAMS, a negotiated subscription polls and a forced push is refused until a slot frees", async () => {
    const env = await eventsEnvironment(cleanups, {
      knobs: { VIGIL_EVENTS_MAX_HTTP_STREAMS: "1" },
      servers: (fx) => [httpServer(fx!, "tickets", [])],
    });
    const serve = StdioServe.start(cleanups, env);
    const subscribe = (id: string, project: string, delivery?: string) =>
      serve.command({ type: "mcp_events_subscribe", id, server: "tickets", name: TICKETS, arguments: { project }, ...(delivery ? { delivery } : {}) });
    expect((await subscribe("a", "a")).data).toMatchObject({ delivery: "push", state: "active" });
    expect((await subscribe("b", "b")).data).toMatchObject({ delivery: "poll", state: "active" });
    const forced = await subscribe("c", "c", "push");
    expect(forced.success).toBe(false);
    expect(forced.error?.message).toContain("VIGIL_EVENTS_MAX_HTTP_STREAMS");
    await env.fixture!.control("emit", { project: "a", event_id: "slot-a" });
    await env.fixture!.control("emit", { project: "b", event_id: "slot-b" });
    await waitRuns(env.model, inBatch("slot-a"));
    await waitRuns(env.model, inBatch("slot-b"));
    // The slot frees with the stream: a forced push then comes up.
    expect((await serve.command({ type: "mcp_events_unsubscribe", id: "u", server: "tickets", name: TICKETS, arguments: { project: "a" } })).success).toBe(true);
    expect((await subscribe("c2", "c", "push")).data).toMatchObject({ delivery: "push", state: "active" });
    expect((await env.fixture!.state()).streams_open).toBe(1);
  });

  test("mcp_events commands are answered while a run is in flight", async () => {
    const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [])] });
    const serve = StdioServe.start(cleanups, env);
    env.model.script([{ stall: true, then: { text: "done" } }]);
    serve.send({ type: "prompt", id: "p1", message: "take your time" });
    await env.model.waitForRequests(1, 10_000);

    // The run is held at the model until release(): these answers cannot wait for it.
    const list = await serve.command({ type: "mcp_events_list", id: "l1" }, 10_000);
    expect(list.success).toBe(true);
    expect(list.data.available).toEqual([expect.objectContaining({ server: "tickets", supported: true })]);
    const sub = await serve.command({ type: "mcp_events_subscribe", id: "s1", server: "tickets", name: TICKETS, delivery: "push" }, 10_000);
    expect(sub.success).toBe(true);
    expect(sub.data).toMatchObject({ delivery: "push", state: "active" });
    expect(serve.count(isRunEnd)).toBe(0);

    expect(env.model.release()).toBe(1);
    const end = await serve.until(isRunEnd);
    expect(end.status).toBe("ok");
  });
});
