// Issue 12 items D and C (last bullet), against dist/vigil and the events fixture: requests that
// completed are never cancelled (each request has its own signal, released when it settles), and a
// `notifications/events/list_changed` carried on a poll's SSE answer makes serve call `events/list`
// again by itself, refreshing what `mcp_events_list` shows as available.
import { describe, expect, test } from "bun:test";
import { type ControlClient, type FixtureState, waitControl } from "../helpers/events-fixture.ts";
import { StdioServe, eventsEnvironment, eventsFixtureStdio, httpServer, isStatus, stdioServer } from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import type { Frame } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const POLLS = 10_000;

const subscribedTo = (name: string) => (f: Frame) =>
  isStatus("subscribed")(f) && (f.subscription as { name?: string } | undefined)?.name === name;

const stateWhen = (fx: ControlClient, done: (s: FixtureState) => boolean, label: string, timeoutMs = 20_000) =>
  waitFor(() => fx.state(), {
    until: done,
    timeoutMs,
    label,
    show: (s) => ({ polls: s.polls, list_calls: s.list_calls, cancels: s.cancels, cancels_after_answer: s.cancels_after_answer, list_changed_sent: s.list_changed_sent }),
  });

describe("MCP events: no stray cancels, list_changed acted on", () => {
  test(`${POLLS} completed polls, then unsubscribe: no completed poll is cancelled`, async () => {
    // stdio: one ordered pipe, so anything serve sent before the next subscription's first poll
    // has reached the fixture by the time that poll has.
    const entry = eventsFixtureStdio({ cleanups, env: { MCP_FIXTURE_NEXT_POLL_MS: 0 } });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tickets", [])],
      knobs: { VIGIL_EVENTS_POLL_FLOOR_MS: "1" },
    });
    const serve = StdioServe.start(cleanups, env);
    const fx = await waitControl(entry.controlFile, { cleanups });
    const spec = { type: "mcp_events_subscribe", server: "tickets", name: "build.finished", action: "notify" };
    expect(await serve.command({ ...spec, id: "sub", arguments: { project: "soak" } })).toMatchObject({ success: true });
    await stateWhen(fx, (s) => s.polls >= POLLS, `${POLLS} polls`, 90_000);

    const removed = await serve.command({ type: "mcp_events_unsubscribe", id: "unsub", server: "tickets", name: "build.finished", arguments: { project: "soak" } });
    expect(removed).toMatchObject({ success: true, data: { removed: true } });
    // The soak subscription has stopped: its newest request is the last one it will ever send.
    const after = await fx.state();
    // A marker on the same pipe: a new subscription's first poll, sent after the unsubscribe.
    expect(await serve.command({ ...spec, id: "marker", arguments: { project: "marker" } })).toMatchObject({ success: true });
    const state = await stateWhen(fx, (s) => s.polls > after.polls, "the marker subscription's first poll");

    expect(after.polls).toBeGreaterThanOrEqual(POLLS);
    // The defect itself, classified by the fixture: no cancel names a request it had answered.
    expect(state.cancels_after_answer).toBe(0);
    // At most the one poll that was in flight when the subscription stopped may be cancelled (the
    // base protocol allows a cancel for a request still in progress), and then only that poll.
    expect(state.cancels).toBeLessThanOrEqual(1);
    if (state.cancels === 1) expect(state.cancelled).toEqual([after.last_request_id!]);
  }, 120_000);

  test("list_changed on a poll's SSE answer: events/list is called again without a client command, and mcp_events_list shows the new list", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "ticket.updated", delivery: "poll" }])],
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("ticket.updated"));
    const before = await fx.state();
    // No timer re-lists on its own: 20 more polls (2 s at the test floor of 100 ms) and no events/list.
    const quiet = await stateWhen(fx, (s) => s.polls >= before.polls + 20, "20 more polls");
    expect(quiet.list_calls).toBe(before.list_calls);

    // The list changes (build.finished is withdrawn); the server says so on its next poll answer only.
    await fx.control("remove_event", { name: "build.finished" });
    await fx.control("list_changed_on_poll");
    const relisted = await stateWhen(fx, (s) => s.list_calls > before.list_calls, "events/list called again after list_changed");
    expect(relisted.list_changed_sent).toBe(1);
    expect(relisted.list_calls).toBe(before.list_calls + 1);

    // The client asks only now: the answer is the refreshed cache, with no further events/list.
    const list = await serve.command({ type: "mcp_events_list", id: "l1" });
    expect(list.success).toBe(true);
    const available = (list.data.available as { server: string; events: { name: string }[] }[]).find((a) => a.server === "tickets")!;
    expect(available.events.map((e) => e.name)).toEqual(["ticket.updated"]);
    expect((await fx.state()).list_calls).toBe(before.list_calls + 1);
    // The subscription was never interrupted: the re-list came from the notice, not from a restart.
    expect(serve.count(isStatus("error")) + serve.count(isStatus("resubscribed"))).toBe(0);
  });
});
