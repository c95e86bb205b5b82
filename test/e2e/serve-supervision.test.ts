// Supervised MCP servers in `vigil serve` (serve.md §6 item 10; issue 12 item C), against
// dist/vigil, the events fixture (HTTP started late, or stdio started by vigil) and the mock model:
// a server that is down when serve starts is connected once it is up, its tools reach the model and
// its subscription comes up without a restart of serve; a stdio server killed with SIGKILL is
// restarted in a new group (the old one gone), its tools work again and its subscription resumes
// from its cursor; a tool call while a server is down answers an isError naming its state; an HTTP
// server that forgets the MCP session (404 to its Mcp-Session-Id) gets a fresh initialize, and the
// subscription goes on from its cursor.
import { describe, expect, test } from "bun:test";
import { groupAlive } from "../../src/shared/process-group.ts";
import type { RecordedRequest } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type ControlClient, type FixtureState, startEventsFixture, waitControl } from "../helpers/events-fixture.ts";
import {
  type EventsEnv,
  StdioServe,
  eventsEnvironment,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  runsFor,
  snapshotOnDisk,
  stdioFixtureEnvironment,
  waitRuns,
} from "../helpers/events-serve.ts";
import { procStat } from "../helpers/fixture.ts";
import { type Frame, lastUserText, messagesOf } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

/** The pool retries fast; the subscriptions' own backoff stays long (1 s doubling to 60 s). */
const KNOBS = { VIGIL_MCP_RECONNECT_INITIAL_MS: "200", VIGIL_MCP_RECONNECT_CAP_MS: "200", VIGIL_EVENTS_RETRY_CAP_MS: "60000" };

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response("") });
  const port = server.port!;
  server.stop(true);
  return port;
}

const toolMessages = (env: { model: { requests: readonly RecordedRequest[] } }) =>
  env.model.requests.flatMap((r) => messagesOf(r).filter((m) => m.role === "tool").map((m) => String(m.content)));

const toolNames = (body: unknown) => (((body as { tools?: { function?: { name?: string } }[] }).tools ?? []).map((t) => t.function?.name));

const serversOf = async (serve: StdioServe, id: string) =>
  ((await serve.command({ type: "get_state", id })).data as { servers?: { name: string; state: string; error?: string }[] }).servers;

/** The model's run of event `eventId` calls tix__echo with `text`; the call succeeds and its result reaches the model. */
async function nextEventCallsEcho(serve: StdioServe, env: EventsEnv, fixture: ControlClient, eventId: string, text: string): Promise<void> {
  env.model.script([{ toolCalls: [{ name: "tix__echo", arguments: { text } }] }, { text: "done" }]);
  await fixture.control("emit", { name: "ticket.updated", event_id: eventId });
  await serve.until(isEventFrame(eventId));
  await serve.until((f: Frame) => f.type === "tool_result");
  expect(serve.frames.find((f) => f.type === "tool_result")).toMatchObject({ is_error: false });
  await waitFor(() => toolMessages(env).some((t) => t.includes(text)), { timeoutMs: 15_000, label: "the echo result reached the model" });
}

describe("vigil serve: supervised MCP servers", () => {
  test("an HTTP server started after serve: a tool call meanwhile names its state; then its tools reach the model and its subscription comes up", async () => {
    const port = freePort();
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [{ name: "late", transport: "http", url: `http://127.0.0.1:${port}/mcp`, events: [{ name: "ticket.updated", delivery: "poll" }] }],
      knobs: KNOBS,
    });
    const serve = StdioServe.start(cleanups, env);
    await serve.client.waitForStderr(`MCP server "late" is unavailable`, 20_000);

    // (c) While it is down, a call to its tool answers an error naming the server's state.
    env.model.script([{ toolCalls: [{ name: "late__echo", arguments: { text: "hi" } }] }, { text: "noted" }]);
    await serve.command({ type: "prompt", id: "p1", message: "call the tool" });
    await serve.until((f) => f.type === "run_end");
    expect(serve.frames.find((f) => f.type === "tool_result")).toMatchObject({ is_error: true });
    expect(toolMessages(env).join("\n")).toContain(`MCP server "late" is reconnecting`);
    expect((await serversOf(serve, "s1"))?.[0]).toMatchObject({ name: "late", state: "reconnecting" });

    // The subscription keeps failing, its own waits doubling, until the next one is 8 s away.
    await serve.until((f) => isStatus("error")(f) && Number(f.retry_in_ms) >= 8000, 20_000);
    const fixture = await startEventsFixture({ env: { MCP_FIXTURE_PORT: port }, cleanups });

    // Up well before that wait ends: the pool's reconnect woke it.
    await serve.until(isStatus("subscribed"), 6000);
    expect((await serversOf(serve, "s2"))?.[0]).toMatchObject({ name: "late", state: "connected" });
    await fixture.control("emit", { name: "ticket.updated", event_id: "late-1", data: { ticket_id: "L-1" } });
    await serve.until(isEventFrame("late-1"));
    await waitRuns(env.model, inBatch("late-1"));
    const run = env.model.requests.find((r) => r.path.endsWith("/chat/completions") && lastUserText(r).includes(inBatch("late-1")))!;
    expect(toolNames(run.body)).toContain("late__echo");
  }, 60_000);

  test("a stdio server killed with SIGKILL is restarted in a new group; its tools work again and its subscription resumes from the cursor", async () => {
    const { env, entry } = await stdioFixtureEnvironment(cleanups, "tix", [{ name: "ticket.updated", delivery: "poll" }], KNOBS);
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));
    const first = await waitControl(entry.controlFile, { cleanups });
    const oldGroup = procStat(first.pid)?.pgrp;
    expect(oldGroup).toBe(first.pid);

    for (const id of ["e-1", "e-2"]) await first.control("emit", { name: "ticket.updated", event_id: id });
    await waitRuns(env.model, inBatch("e-2"));
    const cursorOf = () => Object.values(snapshotOnDisk(env.stateDir, "s")?.subscriptions ?? {})[0]?.cursor ?? null;
    await waitFor(cursorOf, { until: (c) => c === "2", timeoutMs: 10_000, label: "cursor 2 stored" });
    const requestsBefore = env.model.requests.length;

    process.kill(first.pid, "SIGKILL");
    const second = await waitFor(
      async () => {
        const c = await waitControl(entry.controlFile, { cleanups }).catch(() => null);
        return c !== null && c.pid !== first.pid ? c : null;
      },
      { timeoutMs: 20_000, label: "the fixture started again" },
    );
    expect(procStat(second.pid)?.pgrp).toBe(second.pid);
    expect(groupAlive(oldGroup!)).toBe(false);

    // The restarted server is polled from the stored cursor.
    const state = await waitFor(() => second.state(), {
      until: (s) => s.requests.some((r) => r.method === "events/poll"),
      timeoutMs: 15_000,
      label: "a poll of the restarted server",
    });
    expect(state.requests.find((r) => r.method === "events/poll")?.params.cursor).toBe("2");

    // Its tools work again: the run of the next event calls one.
    await nextEventCallsEcho(serve, env, second, "e-3", "after the restart");

    // Nothing acknowledged before the kill came again.
    expect(serve.count(isEventFrame("e-1"))).toBe(1);
    expect(serve.count(isEventFrame("e-2"))).toBe(1);
    const later = env.model.requests.slice(requestsBefore);
    expect(later.some((r) => r.path.endsWith("/chat/completions") && (lastUserText(r).includes(inBatch("e-1")) || lastUserText(r).includes(inBatch("e-2"))))).toBe(false);
    expect(runsFor(env.model, inBatch("e-3"))).toBeGreaterThanOrEqual(1);
  }, 60_000);

  test("an HTTP server that forgets the MCP session: serve initializes anew, the subscription goes on from its cursor, tools work", async () => {
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: { MCP_FIXTURE_SESSION: true },
      servers: (fx) => [httpServer(fx!, "tix", [{ name: "ticket.updated", delivery: "poll" }])],
      knobs: KNOBS,
    });
    const fixture = env.fixture!;
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));
    await fixture.control("emit", { name: "ticket.updated", event_id: "x-1" });
    await waitRuns(env.model, inBatch("x-1"));
    const cursorOf = () => Object.values(snapshotOnDisk(env.stateDir, "s")?.subscriptions ?? {})[0]?.cursor ?? null;
    await waitFor(cursorOf, { until: (c) => c === "1", timeoutMs: 10_000, label: "cursor 1 stored" });
    const initializes = (s: FixtureState) => s.methods.filter((m) => m === "initialize").length;
    expect(initializes(await fixture.state())).toBe(1);
    const requestsBefore = env.model.requests.length;

    // The server forgets every session: the next request with the old Mcp-Session-Id gets 404.
    expect(await fixture.control("expire_sessions")).toMatchObject({ expired: 1 });
    // Every events/* request the fixture records from here on came with a session it knows: a new one.
    const recordedAtExpiry = (await fixture.state()).requests.length;
    const state = await waitFor(() => fixture.state(), {
      until: (s) => initializes(s) === 2 && s.requests.slice(recordedAtExpiry).some((r) => r.method === "events/poll"),
      timeoutMs: 15_000,
      label: "a second initialize, then a poll in the new session",
    });
    expect(serve.client.stderrText()).toContain("the MCP session expired (HTTP 404 to a request with Mcp-Session-Id)");
    // Polled in the new session from the stored cursor: nothing acknowledged comes again.
    expect(state.requests.slice(recordedAtExpiry).find((r) => r.method === "events/poll")?.params.cursor).toBe("1");
    const [tix] = (await serversOf(serve, "s1")) ?? [];
    expect(tix).toMatchObject({ name: "tix", state: "connected" });
    expect((tix as { restarts?: number } | undefined)?.restarts).toBeGreaterThanOrEqual(1);

    // The next event arrives, and the model's tool call goes to the server in the new session.
    await nextEventCallsEcho(serve, env, fixture, "x-2", "after the expiry");

    expect(serve.count(isEventFrame("x-1"))).toBe(1);
    const later = env.model.requests.slice(requestsBefore);
    expect(later.some((r) => r.path.endsWith("/chat/completions") && lastUserText(r).includes(inBatch("x-1")))).toBe(false);
    expect(runsFor(env.model, inBatch("x-2"))).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
