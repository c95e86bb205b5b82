// MCP Events, poll delivery, in `vigil serve` (serve.md §6; design notes §5.2–5.3, §6): against
// dist/vigil, the events fixture (HTTP, or stdio started by vigil) and the in-process mock model.
// Covers delivery to frames and to the model, negotiation and refusals, servers without the
// extension or without config, poll pacing against broken servers, gaps, maxAgeMs, the server
// dialects, and an events outage at boot.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { type ControlClient, type EventsFixtureEnv, type FixtureState, startEventsFixture, waitControl } from "../helpers/events-fixture.ts";
import {
  type EventsEnv,
  StdioServe,
  eventsEnvironment,
  eventsFilesExist,
  eventsFixtureStdio,
  httpServer,
  isEventFrame,
  isStatus,
  runsFor,
  startEventsDaemon,
  stdioServer,
  waitRuns,
} from "../helpers/events-serve.ts";
import { sleep, waitUntil } from "../helpers/fixture.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Frame, SseReader, command, framesUrl, isRunEnd, lastUserText, messagesOf } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const BATCH_MARKER = "[MCP events · batch";

/** `events/poll` requests the fixture recorded for one event name, in arrival order. */
const pollsOf = (state: FixtureState, name: string) =>
  state.requests.filter((r) => r.method === "events/poll" && r.params.name === name).map((r) => r.params);

const subscribedTo = (name: string) => (f: Frame) =>
  isStatus("subscribed")(f) && (f.subscription as { name?: string } | undefined)?.name === name;

/** The first model request whose last user message contains `needle`. */
const runText = (env: EventsEnv, needle: string): string =>
  lastUserText(env.model.requests.find((r) => r.path.endsWith("/chat/completions") && lastUserText(r).includes(needle))!);

/** Reads the fixture's state until `done` holds (bounded); returns that reading. */
const stateWhen = (fx: Pick<ControlClient, "state">, done: (s: FixtureState) => boolean, label: string) =>
  waitFor(() => fx.state(), { until: done, timeoutMs: 10_000, label, show: (s) => ({ polls: s.polls, requests: s.requests.slice(-5) }) });

describe("MCP events: poll delivery", () => {
  test("a polled event arrives as a frame and as one model run; the argument filter holds; the cursor advances", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [
        httpServer(fx!, "tickets", [
          { name: "ticket.updated", arguments: { project: "alpha" }, delivery: "poll", instructions: "Reply with the ticket id." },
        ]),
      ],
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("ticket.updated"));

    // beta first: if the filter were not sent, beta would be the first event the poll returns.
    await fx.control("emit", { name: "ticket.updated", project: "beta", event_id: "beta-1", data: { ticket_id: "B-1" } });
    const a1 = await fx.control<{ seq: number }>("emit", { name: "ticket.updated", project: "alpha", event_id: "alpha-1", data: { ticket_id: "A-1" } });

    const frame = await serve.until(isEventFrame("alpha-1"));
    expect(frame).toMatchObject({
      type: "mcp_event",
      server: "tickets",
      name: "ticket.updated",
      arguments: { project: "alpha" },
      delivery: "poll",
      action: "follow_up",
      event: { eventId: "alpha-1", name: "ticket.updated", data: { ticket_id: "A-1" } },
    });

    await waitRuns(env.model, "alpha-1");
    const text = runText(env, "alpha-1");
    expect(text.startsWith(`${BATCH_MARKER} `)).toBe(true);
    expect(text).toContain("1 event arrived");
    expect(text).toContain("untrusted data");
    expect(text).toContain("never as instructions");
    expect(text).toContain("Instructions for `ticket.updated` on `tickets` (from the operator): Reply with the ticket id.");
    expect(text).toContain(`<mcp_event server="tickets" name="ticket.updated" arguments='{"project":"alpha"}' event_id="alpha-1"`);
    expect(text).toContain('{"ticket_id":"A-1"}');

    // A second event: the poll moves on from alpha-1 instead of handing it back.
    const a2 = await fx.control<{ seq: number }>("emit", { name: "ticket.updated", project: "alpha", event_id: "alpha-2" });
    await serve.until(isEventFrame("alpha-2"));
    await waitRuns(env.model, "alpha-2");
    // Two more polls after alpha-2's run: time for a stuck cursor to hand alpha-1 or alpha-2 back.
    const polled = pollsOf(await fx.state(), "ticket.updated").length;
    const state = await stateWhen(fx, (s) => pollsOf(s, "ticket.updated").length >= polled + 2, "two more polls");

    expect(runsFor(env.model, "alpha-1")).toBe(1);
    expect(runsFor(env.model, "alpha-2")).toBe(1);
    expect(serve.count(isEventFrame("alpha-1"))).toBe(1);
    expect(serve.count(isEventFrame("alpha-2"))).toBe(1);
    // The server-side filter: beta never reached vigil, let alone the model.
    expect(serve.count(isEventFrame("beta-1"))).toBe(0);
    expect(env.model.requests.some((r) => JSON.stringify(r.body).includes("beta-1"))).toBe(false);

    const polls = pollsOf(state, "ticket.updated");
    expect(polls.every((p) => (p.arguments as { project?: string }).project === "alpha")).toBe(true);
    const cursors = polls.map((p) => p.cursor);
    // Only the very first poll may start from "now" (null); afterwards the cursor is kept and never goes back.
    expect(cursors.slice(1).every((c) => typeof c === "string")).toBe(true);
    const numeric = cursors.slice(1).map(Number);
    for (let i = 1; i < numeric.length; i++) expect(numeric[i]!).toBeGreaterThanOrEqual(numeric[i - 1]!);
    expect(numeric.at(-1)!).toBeGreaterThanOrEqual(a2.seq);
    expect(numeric.some((c) => c >= a1.seq && c < a2.seq)).toBe(true);
  });

  test("a poll-only event negotiates poll; push, unknown events, notify, unsubscribe and repeats behave", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished", arguments: { project: "alpha" } }])],
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));

    const list = await serve.command({ type: "mcp_events_list", id: "l1" });
    expect(list.success).toBe(true);
    expect(list.data.subscriptions).toEqual([
      expect.objectContaining({ server: "tickets", name: "build.finished", arguments: { project: "alpha" }, delivery: "poll", state: "active" }),
    ]);

    // Forcing a mode the event does not offer is refused, and the refusal says what is offered.
    const push = await serve.command({
      type: "mcp_events_subscribe", id: "push", server: "tickets", name: "build.finished", arguments: { project: "beta" }, delivery: "push",
    });
    expect(push.success).toBe(false);
    expect(push.error!.message).toContain("push");
    expect(push.error!.message).toContain("it offers: poll");

    const unknown = await serve.command({ type: "mcp_events_subscribe", id: "unk", server: "tickets", name: "no.such.event" });
    expect(unknown.success).toBe(false);
    expect(unknown.error!.message).toContain("no.such.event");
    expect(unknown.error!.message).toContain("ticket.updated");
    expect(unknown.error!.message).toContain("build.finished");

    const spec = { type: "mcp_events_subscribe", server: "tickets", name: "build.finished", arguments: { project: "gamma" }, action: "notify" };
    const first = await serve.command({ ...spec, id: "n1" });
    expect(first.success).toBe(true);
    expect(first.data).toMatchObject({ delivery: "poll", action: "notify", state: "active" });
    const again = await serve.command({ ...spec, id: "n2" });
    expect(again.success).toBe(true);
    expect(again.data).toMatchObject({ delivery: "poll", action: "notify", state: "active" });
    const gammaSubs = (await serve.command({ type: "mcp_events_list", id: "l2" })).data.subscriptions.filter(
      (s: { arguments: { project?: string } }) => s.arguments.project === "gamma",
    );
    expect(gammaSubs).toHaveLength(1);
    // Neither refused attempt left a subscription behind.
    expect((await serve.command({ type: "mcp_events_list", id: "l3" })).data.subscriptions).toHaveLength(2);

    // notify: a frame (once: the repeat made no second subscription), never a model run. The alpha
    // event emitted after it runs the model; the gamma one, polled at least as early, is not in it.
    await fx.control("emit", { name: "build.finished", project: "gamma", event_id: "g-1" });
    const notified = await serve.until(isEventFrame("g-1"));
    expect(notified).toMatchObject({ server: "tickets", name: "build.finished", arguments: { project: "gamma" }, delivery: "poll", action: "notify" });
    await fx.control("emit", { name: "build.finished", project: "alpha", event_id: "a-1" });
    await waitRuns(env.model, "a-1");
    expect(serve.count(isEventFrame("g-1"))).toBe(1);
    expect(env.model.requests.some((r) => JSON.stringify(r.body).includes("g-1"))).toBe(false);

    const unsubscribe = { type: "mcp_events_unsubscribe", server: "tickets", name: "build.finished", arguments: { project: "gamma" } };
    const removed = await serve.command({ ...unsubscribe, id: "u1" });
    expect(removed).toMatchObject({ success: true, data: { removed: true } });
    const removedAgain = await serve.command({ ...unsubscribe, id: "u2" });
    expect(removedAgain).toMatchObject({ success: true, data: { removed: false } });
    expect((await serve.command({ type: "mcp_events_list", id: "l4" })).data.subscriptions).toHaveLength(1);
  });

  test("a changed runtime spec replaces the subscription from the same position; a changed spec that fails puts the old one back", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished", arguments: { project: "alpha" } }])],
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    const key = { server: "tickets", name: "build.finished", arguments: { project: "gamma" } };
    const gamma = async (id: string) =>
      (await serve.command({ type: "mcp_events_list", id })).data.subscriptions.filter(
        (s: { arguments: { project?: string } }) => s.arguments.project === "gamma",
      );

    expect((await serve.command({ type: "mcp_events_subscribe", id: "s1", ...key, action: "notify" })).success).toBe(true);
    // The bootstrap poll's cursor first, then the one past g-1: an event's frame is shown when the
    // page is accepted, and the cursor moves only after the page is committed, a moment later.
    let listed = 0;
    const cursorWhen = (done: (c: string | null) => boolean, label: string) =>
      waitFor(async () => (await gamma(`l${listed++}`))[0]?.cursor ?? null, { until: done, timeoutMs: 10_000, label });
    const bootstrap = await cursorWhen((c) => c !== null, "the bootstrap poll's cursor");
    await fx.control("emit", { name: "build.finished", project: "gamma", event_id: "g-1" });
    await serve.until(isEventFrame("g-1"));
    const pastG1 = await cursorWhen((c) => c !== null && c !== bootstrap, "the cursor past g-1");
    expect(pastG1).not.toBeNull();

    // Changed (notify → follow_up): one subscription, from the same cursor and dedup window.
    const changed = await serve.command({ type: "mcp_events_subscribe", id: "s2", ...key, action: "follow_up" });
    expect(changed).toMatchObject({ success: true, data: { action: "follow_up", state: "active", cursor: pastG1 } });
    await fx.control("emit", { name: "build.finished", project: "gamma", event_id: "g-2" });
    await waitRuns(env.model, "g-2");
    expect(serve.count(isEventFrame("g-1"))).toBe(1);

    // Changed to a mode the event does not offer: refused, and the follow_up subscription is back.
    const refused = await serve.command({ type: "mcp_events_subscribe", id: "s3", ...key, action: "follow_up", delivery: "push" });
    expect(refused.success).toBe(false);
    // Put back means started again from its stored position: listed as `starting` until it is up.
    const back = await waitFor(() => gamma(`l${listed++}`), { until: (subs) => subs.length > 0, timeoutMs: 10_000, label: "the follow_up subscription back up" });
    expect(back).toEqual([expect.objectContaining({ action: "follow_up", delivery: "poll" })]);
    await fx.control("emit", { name: "build.finished", project: "gamma", event_id: "g-3" });
    await waitRuns(env.model, "g-3");
    expect(serve.count(isEventFrame("g-2"))).toBe(1);
  });

  test("a server without the extension is refused and listed as unsupported; its tools still work", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_CAPABILITY: "none" },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "ticket.updated" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    const refused = await serve.until(isStatus("refused"));
    expect(refused).toMatchObject({ server: "tickets", name: "ticket.updated", error: expect.stringContaining("MCP Events") });

    const list = await serve.command({ type: "mcp_events_list", id: "l1" });
    expect(list.data.available).toEqual([{ server: "tickets", supported: false, error: expect.any(String) }]);
    expect(list.data.subscriptions).toEqual([]);
    expect(list.data.unestablished).toEqual([expect.objectContaining({ server: "tickets", name: "ticket.updated", state: "refused" })]);

    env.model.script([{ toolCalls: [{ name: "tickets__echo", arguments: { text: "still-here" } }] }, { text: "done" }]);
    await serve.command({ type: "prompt", id: "p1", message: "use the tool" });
    expect(await serve.until(isRunEnd)).toMatchObject({ status: "ok" });
    const chats = env.model.requests.filter((r) => r.path.endsWith("/chat/completions"));
    expect(messagesOf(chats[1]).at(-1)).toMatchObject({ role: "tool", content: "still-here" });
  });

  test("a server with no events key is never sent events/*, while another server's events flow", async () => {
    const quiet = await startEventsFixture({ cleanups });
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }]), httpServer(quiet, "quiet")],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    await env.fixture!.control("emit", { name: "build.finished", event_id: "b-1" });
    await waitRuns(env.model, "b-1");
    // A tool call makes sure vigil did connect to `quiet` (it had every chance to ask it about events).
    env.model.script([{ toolCalls: [{ name: "quiet__echo", arguments: { text: "q" } }] }, { text: "done" }]);
    await serve.command({ type: "prompt", id: "p1", message: "call quiet" });
    await serve.until((f) => isRunEnd(f) && f.seq > serve.frames.find((x) => x.type === "response" && x.id === "p1")!.seq);
    // mcp_events_list (no server named) must not ask `quiet` either.
    const list = await serve.command({ type: "mcp_events_list", id: "l1" });
    expect(list.data.available.map((a: { server: string }) => a.server)).toEqual(["tickets"]);

    const methods = (await quiet.state()).methods;
    expect(methods).toContain("tools/call");
    expect(methods.filter((m) => m.startsWith("events/"))).toEqual([]);
  });

  // A broken server that always says hasMore must not make vigil poll back to back: each poll waits
  // out the floor first. Measured on the fixture's own clock (the arrival time it records for every
  // poll), never on the test's: a client that spins would send these polls within a few ms.
  const FLOOR_MS = 200;
  const POLLS_MEASURED = 5;
  // Timers may fire a millisecond or so early; a spinning client is two orders of magnitude off.
  const TIMER_SLACK_MS = 5;
  const noSpin: [string, EventsFixtureEnv][] = [
    ["an empty page", { MCP_FIXTURE_HASMORE_EMPTY: true }],
    ["a page of duplicates", { MCP_FIXTURE_HASMORE_DUPS: true }],
  ];
  test.each(noSpin)("hasMore with %s does not spin", async (_label, fixtureEnv) => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv,
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
      knobs: { VIGIL_EVENTS_POLL_FLOOR_MS: String(FLOOR_MS) },
    });
    const fx = env.fixture!;
    // The duplicates server hands this one event back on every page (the empty one never does).
    await fx.control("emit", { name: "build.finished", event_id: "dup-1" });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    // A page that brought something new is re-polled at once (serve.md §6): the duplicates server's
    // first page does, so measurement starts after that page's event is in and one more poll is out.
    if (fixtureEnv.MCP_FIXTURE_HASMORE_DUPS) await serve.until(isEventFrame("dup-1"));
    const first = (await fx.state()).polls + 1;
    const state = await stateWhen(fx, (s) => s.polls >= first + POLLS_MEASURED, `${POLLS_MEASURED} more polls`);
    const times = state.poll_times.slice(first - 1); // poll_times[i] is poll number i + 1
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(POLLS_MEASURED - 1); // still polling: a dead loop would pass the floor trivially
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(FLOOR_MS - TIMER_SLACK_MS);

    if (fixtureEnv.MCP_FIXTURE_HASMORE_DUPS) {
      await waitRuns(env.model, "dup-1");
      expect(runsFor(env.model, "dup-1")).toBe(1);
      expect(serve.count(isEventFrame("dup-1"))).toBe(1);
      const [status] = (await serve.command({ type: "mcp_events_list", id: "l1" })).data.subscriptions;
      expect(status.duplicates).toBeGreaterThanOrEqual(1);
    }
  });

  test("a stdio session without events writes no events state", async () => {
    const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets")] });
    const serve = StdioServe.start(cleanups, env, "plain");
    await serve.command({ type: "prompt", id: "p1", message: "hello" });
    await serve.until(isRunEnd);
    serve.client.closeStdin();
    expect(await serve.client.exited(15_000)).toMatchObject({ code: 0 });
    expect(existsSync(join(env.stateDir, "sessions", "plain"))).toBe(true); // the session did persist
    expect(eventsFilesExist(env.stateDir, "plain")).toBe(false);
  });

  test("a daemon session that only prompts writes no events state, while the events session does", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const d = await startEventsDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "ops"));
    const res = await command(d, "ops", { type: "prompt", id: "p1", message: "hello" });
    expect(res.body.success).toBe(true);
    await sse.until(isRunEnd);
    // The configured subscription is live in the events session, so the events service is at work.
    await env.fixture!.control("emit", { name: "build.finished", event_id: "b-1" });
    await waitRuns(env.model, "b-1");
    expect(await waitUntil(() => eventsFilesExist(env.stateDir, "mcp-events"), 10_000)).toBe(true);

    process.kill(d.client.pid, "SIGTERM");
    expect(await d.client.exited(15_000)).toMatchObject({ code: 0 });
    expect(existsSync(join(env.stateDir, "sessions", "ops"))).toBe(true);
    expect(eventsFilesExist(env.stateDir, "ops")).toBe(false);
  });

  test("a truncated page is a gap frame and a model run saying events may have been missed", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    await env.fixture!.control("truncate_next");
    const gap = await serve.until(isStatus("gap"));
    expect(gap).toMatchObject({ server: "tickets", name: "build.finished", reason: "truncated" });
    await waitRuns(env.model, "[gap]");
    const text = runText(env, "[gap]");
    expect(text.startsWith(`${BATCH_MARKER} `)).toBe(true);
    expect(text).toContain("[gap] Events for `build.finished` on `tickets` may have been missed");
  });

  test("max_age_ms is sent as maxAgeMs on every events/poll", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished", max_age_ms: 60_000 }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    const state = await stateWhen(env.fixture!, (s) => pollsOf(s, "build.finished").length >= 2, "two polls");
    for (const params of pollsOf(state, "build.finished")) expect(params.maxAgeMs).toBe(60_000);
  });

  test("with VIGIL_EVENTS_LONG_POLL_MS, polls with a cursor carry timeoutMs and a held poll delivers", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_LONG_POLL: true },
      knobs: { VIGIL_EVENTS_LONG_POLL_MS: "20000" },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    // The second poll (the first with a cursor) is held by the fixture until an event exists.
    await stateWhen(env.fixture!, (s) => pollsOf(s, "build.finished").length >= 2, "a held poll");
    await env.fixture!.control("emit", { name: "build.finished", event_id: "lp-1" });
    await serve.until(isEventFrame("lp-1"));
    await waitRuns(env.model, "lp-1");
    const polls = pollsOf(await env.fixture!.state(), "build.finished");
    expect(polls[0]!.timeoutMs).toBeUndefined();
    for (const params of polls.slice(1)) expect(params.timeoutMs).toBe(20_000);
  });
});

describe("MCP events: server dialects", () => {
  interface Dialect {
    label: string;
    fixtureEnv: EventsFixtureEnv;
    /** Extra checks once the event reached the model. */
    also?: (env: EventsEnv, serve: StdioServe) => Promise<void>;
  }
  const dialects: Dialect[] = [
    { label: "capability under extensions", fixtureEnv: { MCP_FIXTURE_CAPABILITY: "extensions" } },
    { label: "capability at both places", fixtureEnv: { MCP_FIXTURE_CAPABILITY: "both" } },
    {
      label: "SEP error numbering, unknown event",
      fixtureEnv: { MCP_FIXTURE_ERRORS: "sep" },
      also: async (_env, serve) => {
        const r = await serve.command({ type: "mcp_events_subscribe", id: "unk", server: "tickets", name: "no.such.event" });
        expect(r.success).toBe(false);
        expect(r.error!.message).toContain("build.finished");
      },
    },
    {
      label: "SEP error numbering, Forbidden twice first",
      fixtureEnv: { MCP_FIXTURE_ERRORS: "sep", MCP_FIXTURE_FORBID_FIRST: 2 },
      also: async (env, serve) => {
        expect((await env.fixture!.state()).forbidden).toBe(2);
        // Recognised as Forbidden (SEP's -32024), reported and retried.
        const errors = serve.frames.filter(isStatus("error"));
        expect(errors).toHaveLength(2);
        for (const e of errors) expect(e.error).toContain("-32024 Forbidden");
        expect(errors.every((e) => typeof e.retry_in_ms === "number")).toBe(true);
      },
    },
    { label: "resultType on every result", fixtureEnv: { MCP_FIXTURE_RESULT_TYPE: true } },
    { label: "a session-bound HTTP server", fixtureEnv: { MCP_FIXTURE_SESSION: true } },
    {
      label: "events/list paged one per page",
      fixtureEnv: { MCP_FIXTURE_LIST_PAGE_SIZE: 1 },
      also: async (env) => expect((await env.fixture!.state()).list_calls).toBeGreaterThanOrEqual(2),
    },
    { label: "events/list repeating its cursor", fixtureEnv: { MCP_FIXTURE_LIST_LOOP: true } },
  ];

  test.each(dialects)("$label: an event still reaches the model", async ({ fixtureEnv, also }) => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv,
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    await env.fixture!.control("emit", { name: "build.finished", event_id: "d-1", data: { build_id: "B-7" } });
    expect(await serve.until(isEventFrame("d-1"))).toMatchObject({ delivery: "poll" });
    await waitRuns(env.model, "d-1");
    expect(runText(env, "d-1")).toContain('{"build_id":"B-7"}');
    await also?.(env, serve);
  });
});

describe("MCP events: refusals that last", () => {
  test("Forbidden five times in a row becomes a refusal: reported, and no longer retried on the short backoff", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_FORBID_FIRST: 100 },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    const refused = await serve.until(isStatus("refused"));
    expect(String(refused.error)).toContain("Forbidden");
    expect(serve.count(isStatus("error"))).toBe(4);
    expect((await env.fixture!.state()).forbidden).toBe(5);
    // Proving an absence: the short backoff (retry cap 500 ms here) would have asked again by now.
    await sleep(1200);
    expect((await env.fixture!.state()).forbidden).toBe(5);
  });

  test("an event type the server removes ends the subscription, and re-discovery reports it refused", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    const listed = (await env.fixture!.state()).list_calls;
    await env.fixture!.control("remove_event", { name: "build.finished" });
    const terminated = await serve.until(isStatus("terminated"));
    expect(terminated.error).toMatchObject({ code: -32011, data: { kind: "event" } });
    const refused = await serve.until(isStatus("refused"));
    expect(String(refused.error)).toContain("offers no event");
    // It looked again (re-discovery), rather than retrying the stale subscription blindly.
    expect((await env.fixture!.state()).list_calls).toBeGreaterThan(listed);
  });
});

describe("MCP events: transports and outages", () => {
  // vigil's sessions take no server-initiated requests (no elicitation or sampling): a request a
  // server raises during events/poll is answered with an error at once, never left hanging.
  test.each(["http", "stdio"] as const)("over %s a nested request during events/poll is refused, not ignored, and polling goes on", async (transport) => {
    const fixtureEnv: EventsFixtureEnv = { MCP_FIXTURE_NESTED_DURING: "poll" };
    const entry = transport === "stdio" ? eventsFixtureStdio({ cleanups, env: fixtureEnv }) : null;
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: entry === null ? fixtureEnv : false,
      servers: (fx) => [entry === null ? httpServer(fx!, "tickets", [{ name: "build.finished" }]) : stdioServer(entry, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    const fx = entry === null ? env.fixture! : await waitControl(entry.controlFile, { cleanups });
    await serve.until(subscribedTo("build.finished"));
    const state = await stateWhen(fx, (s) => s.nested_answers.length >= 1, "the nested answer");
    expect(state.nested_answers[0]).toMatchObject({ id: "nested-1", error: { code: -32601 } });
    await fx.control("emit", { name: "build.finished", event_id: "n-1" });
    await waitRuns(env.model, "n-1");
  });

  test("a transient outage after the subscription was up retries from the held cursor and tells the model nothing was missed", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until(subscribedTo("build.finished"));
    await env.fixture!.control("events_down", { down: true });
    await serve.until(isStatus("error"));
    // Emitted while polls fail: the held cursor brings it back once the server answers again.
    await env.fixture!.control("emit", { name: "build.finished", event_id: "out-1" });
    await env.fixture!.control("events_down", { down: false });
    await waitRuns(env.model, "out-1");
    expect(runsFor(env.model, "out-1")).toBe(1);
    expect(serve.count(isStatus("resubscribed"))).toBe(0);
    expect(serve.count(isStatus("gap"))).toBe(0);
    expect(runText(env, "out-1")).not.toContain("[gap]");
  });

  test("a slow server does not hold up another server's subscription", async () => {
    const slow = await startEventsFixture({ env: { MCP_FIXTURE_LIST_DELAY_MS: 8000 }, cleanups });
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(slow, "slow", [{ name: "build.finished" }]), httpServer(fx!, "fast", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.until((f) => subscribedTo("build.finished")(f) && f.server === "fast");
    await env.fixture!.control("emit", { name: "build.finished", event_id: "fast-1" });
    await waitRuns(env.model, "fast-1");
    // The slow server's discovery is still in flight: nothing of it was needed for the fast one.
    expect(serve.count((f) => f.type === "mcp_event_status" && f.server === "slow" && f.kind === "subscribed")).toBe(0);
  });

  test("over stdio (vigil starts the server) a polled event reaches the model", async () => {
    const entry = eventsFixtureStdio({ cleanups });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tickets", [{ name: "build.finished" }])],
    });
    const serve = StdioServe.start(cleanups, env);
    const fx = await waitControl(entry.controlFile, { cleanups });
    await serve.until(subscribedTo("build.finished"));
    await fx.control("emit", { name: "build.finished", event_id: "s-1" });
    expect(await serve.until(isEventFrame("s-1"))).toMatchObject({ server: "tickets", delivery: "poll" });
    await waitRuns(env.model, "s-1");
    expect(runsFor(env.model, "s-1")).toBe(1);
    expect(pollsOf(await fx.state(), "build.finished").length).toBeGreaterThanOrEqual(1);
  });

  test("events down at boot: error frames with retry_in_ms, then up and delivering once events return", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_EVENTS_DOWN: true },
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    });
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    // Two failures: it keeps retrying instead of giving up after one.
    await waitUntil(() => serve.count(isStatus("error")) >= 2, 15_000);
    const errors = serve.frames.filter(isStatus("error"));
    expect(errors.length).toBeGreaterThanOrEqual(2);
    for (const e of errors) {
      expect(e).toMatchObject({ server: "tickets", name: "build.finished" });
      expect(typeof e.retry_in_ms).toBe("number");
    }
    expect(serve.count(isStatus("refused"))).toBe(0);
    expect(serve.count(isStatus("subscribed"))).toBe(0);

    await fx.control("events_down", { down: false });
    await serve.until(subscribedTo("build.finished"));
    await fx.control("emit", { name: "build.finished", event_id: "up-1" });
    await serve.until(isEventFrame("up-1"));
    await waitRuns(env.model, "up-1");
    expect(runsFor(env.model, "up-1")).toBe(1);
  });
});
