// Which daemon session owns MCP Events subscriptions, and how subscriptions decide a session's life
// (serve.md §1, §6 items 6–7; design notes §2.3, §3.5, §5.5): the configured subscriptions belong
// to one session started at boot, idle reaping spares a session only while a subscription can still
// deliver, a configured subscription that is down is retried (and stops when unsubscribed), a
// refused one is reported once and lets its session go, runtime subscriptions come back after a
// restart without their client (unless expired or their server is gone), and every client
// attached to the events session sees its frames.
//
// Against the compiled binary in daemon mode, the HTTP events fixture (its own process) and the
// mock model. Sessions are observed without holding them where reaping matters: through the
// daemon's health count and its "reaped" log lines, the fixture's request counters and the state
// on disk.
import { expect, test } from "bun:test";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import type { EventsFixtureEnv } from "../helpers/events-fixture.ts";
import {
  type EventsEnv,
  eventsEnvironment,
  httpServer,
  EVENTS_SESSION,
  inBatch,
  isEventFrame,
  isStatus,
  runsFor,
  snapshotOnDisk,
  startEventsDaemon,
  waitRuns,
} from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { sleep } from "../helpers/fixture.ts";
import { type Daemon, type Frame, SseReader, command, framesUrl, health } from "../helpers/serve.ts";

const cleanups = e2eSuite();

/** One configured poll subscription (build.finished) on server `tickets`, or the given entries. */
const environment = (o: { events?: Record<string, unknown>[]; fixtureEnv?: EventsFixtureEnv; knobs?: Record<string, string> } = {}) =>
  eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "tickets", o.events ?? [{ name: "build.finished" }])],
    ...(o.fixtureEnv !== undefined ? { fixtureEnv: o.fixtureEnv } : {}),
    ...(o.knobs !== undefined ? { knobs: o.knobs } : {}),
  });

const emit = (env: EventsEnv, eventId: string) => env.fixture!.control("emit", { name: "build.finished", event_id: eventId });
const state = (env: EventsEnv) => env.fixture!.state();
const eventsRequests = async (env: EventsEnv) => (await state(env)).requests.filter((r) => r.method.startsWith("events/")).length;

/** A poll subscription has its starting position once the fixture saw `n` polls in all. */
const polled = (env: EventsEnv, n = 2) => waitFor(async () => (await state(env)).polls >= n, { timeoutMs: E2E_WAIT_MS, label: `${n} polls at the fixture` });

const sessions = async (d: Daemon) => (await health(d)).body.sessions;
const reapedLine = (session: string) => `session ${JSON.stringify(session)} reaped`;
const waitReaped = (d: Daemon, session: string) => waitFor(() => d.client.stderrText().includes(reapedLine(session)), { timeoutMs: E2E_WAIT_MS, label: `${session} reaped` });

async function stop(d: Daemon): Promise<void> {
  process.kill(d.client.pid, "SIGTERM");
  expect((await d.client.exited(15_000)).code).toBe(0);
}

let ids = 0;
const list = async (d: Daemon, session: string) => {
  const r = await command(d, session, { type: "mcp_events_list", id: `l${++ids}` });
  expect(r.body.success).toBe(true);
  return r.body.data as { owns_configured: boolean; subscriptions: any[]; unestablished: any[]; pending: number };
};

const subscribe = (d: Daemon, session: string, spec: Record<string, unknown>) =>
  command(d, session, { type: "mcp_events_subscribe", id: `s${++ids}`, server: "tickets", ...spec });

/** Replays a session's frames from the start (this opens the session if it is not open). */
const replay = (d: Daemon, session: string) => SseReader.open(cleanups, framesUrl(d.base, session, 0));

/** The frames of the first run that started after an event's frame (its run_start … run_end). */
async function runAfterEvent(frames: SseReader, eventId: string): Promise<Frame[]> {
  const all = frames.frames;
  const bounds = () => {
    const event = all.findIndex(isEventFrame(eventId));
    const start = event === -1 ? -1 : all.findIndex((f, i) => i > event && f.type === "run_start");
    const end = start === -1 ? -1 : all.findIndex((f, i) => i > start && f.type === "run_end");
    return { start, end };
  };
  await waitFor(() => bounds().end !== -1, { timeoutMs: E2E_WAIT_MS, label: `a run after the frame of ${eventId}` });
  const { start, end } = bounds();
  return all.slice(start, end + 1);
}

test("configured subscriptions belong to the events session alone, which runs at boot; one event is one run there", async () => {
  const env = await environment();
  const d = await startEventsDaemon(cleanups, env);
  // No client has addressed any session yet, and the subscription is already polling.
  await polled(env);
  for (const plain of ["plain-a", "plain-b"]) {
    expect(await list(d, plain)).toMatchObject({ owns_configured: false, subscriptions: [], unestablished: [], pending: 0 });
  }
  await emit(env, "one-1");
  await waitRuns(env.model, inBatch("one-1"));
  // Every session has polled past one-1 once a later event went through too.
  await emit(env, "one-2");
  await waitRuns(env.model, inBatch("one-2"));
  expect(runsFor(env.model, inBatch("one-1"))).toBe(1);

  const run = await runAfterEvent(await replay(d, EVENTS_SESSION), "one-1");
  expect(run[0]).toMatchObject({ type: "run_start", trigger: "mcp_events" });
  expect(run.find((f) => f.type === "message" && f.role === "user")?.text).toContain(inBatch("one-1"));
  expect(run.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
  const owner = await list(d, EVENTS_SESSION);
  expect(owner.owns_configured).toBe(true);
  expect(owner.subscriptions.map((s) => s.name)).toEqual(["build.finished"]);
  for (const plain of ["plain-a", "plain-b"]) expect(await list(d, plain)).toMatchObject({ subscriptions: [], pending: 0 });
});

test("--mcp-events-session moves the configured subscriptions to another session", async () => {
  const env = await environment();
  const d = await startEventsDaemon(cleanups, env, ["--mcp-events-session", "ops-events"]);
  await polled(env);
  await emit(env, "moved-1");
  await waitRuns(env.model, inBatch("moved-1"));
  const run = await runAfterEvent(await replay(d, "ops-events"), "moved-1");
  expect(run[0]).toMatchObject({ type: "run_start", trigger: "mcp_events" });
  expect((await list(d, "ops-events")).owns_configured).toBe(true);
  expect(await list(d, EVENTS_SESSION)).toMatchObject({ owns_configured: false, subscriptions: [], unestablished: [] });
  expect(runsFor(env.model, inBatch("moved-1"))).toBe(1);
});

test("idle reaping ends a plain session but spares the events session", async () => {
  const env = await environment();
  const d = await startEventsDaemon(cleanups, env, ["--session-idle-timeout", "1"]);
  await polled(env);
  expect((await command(d, "plain", { type: "get_state", id: "g1" })).body.success).toBe(true);
  expect(await sessions(d)).toBe(2);
  await waitReaped(d, "plain");
  // The events session has been idle at least as long (since boot): it would have gone too.
  expect(await sessions(d)).toBe(1);
  expect(d.client.stderrText()).not.toContain(reapedLine(EVENTS_SESSION));
  await emit(env, "alive-1");
  await waitRuns(env.model, inBatch("alive-1"));
  // The plain session's next command opens it again.
  expect((await command(d, "plain", { type: "get_state", id: "g2" })).body.success).toBe(true);
  expect(await sessions(d)).toBe(2);
});

test("with --mcp-events-reapable the events session is reaped too, and its subscription stops", async () => {
  const env = await environment();
  const d = await startEventsDaemon(cleanups, env, ["--session-idle-timeout", "1", "--mcp-events-reapable"]);
  await polled(env);
  await waitReaped(d, EVENTS_SESSION);
  expect(await sessions(d)).toBe(0);
  const polls = (await state(env)).polls;
  // Proving an absence: a live poll loop (100 ms floor) would poll several times in this window.
  await sleep(600);
  expect((await state(env)).polls).toBe(polls);
});

test("a runtime subscription keeps its session alive until the server terminates it, then the session is reaped", async () => {
  const env = await environment({ events: [] });
  const d = await startEventsDaemon(cleanups, env, ["--session-idle-timeout", "1"]);
  const sub = await subscribe(d, "rt", { name: "ticket.updated", delivery: "push" });
  expect(sub.body).toMatchObject({ success: true, data: { state: "active", delivery: "push" } });
  // Proving an absence: with nothing to keep it, the reaper (1 s timeout, checked every 250 ms)
  // would have ended it within this window.
  await sleep(1500);
  expect(d.client.stderrText()).not.toContain(reapedLine("rt"));
  expect(await sessions(d)).toBe(1);
  expect((await state(env)).streams_open).toBe(1);

  expect(await env.fixture!.control("terminate")).toEqual({ streams: 1 });
  await waitReaped(d, "rt");
  expect(await sessions(d)).toBe(0);
  // The ended runtime subscription is forgotten: nothing would restore it.
  expect(Object.keys(snapshotOnDisk(env.stateDir, "rt")?.subscriptions ?? {})).toEqual([]);
  const terminated = await (await replay(d, "rt")).until(isStatus("terminated"));
  expect(terminated.at(-1)).toMatchObject({ server: "tickets", name: "ticket.updated" });
});

test("a configured subscription whose server is down at boot is retried, keeps its session, and subscribes once the server is back", async () => {
  // A retry's `error` frame is not client activity: only the keep-alive rule spares the session.
  const env = await environment({ fixtureEnv: { MCP_FIXTURE_EVENTS_DOWN: true } });
  const d = await startEventsDaemon(cleanups, env, ["--session-idle-timeout", "1"]);
  await waitFor(async () => {
    expect(d.client.stderrText()).not.toContain(reapedLine(EVENTS_SESSION));
    return (await eventsRequests(env)) >= 3;
  }, { timeoutMs: E2E_WAIT_MS, label: "three attempts at the fixture" });
  expect(d.client.stderrText()).not.toContain(reapedLine(EVENTS_SESSION));
  expect(await sessions(d)).toBe(1);

  await env.fixture!.control("events_down", { down: false });
  await waitFor(async () => (await list(d, EVENTS_SESSION)).subscriptions.length === 1, { timeoutMs: E2E_WAIT_MS, label: "the subscription up" });
  await polled(env);
  await emit(env, "back-1");
  await waitRuns(env.model, inBatch("back-1"));
  await (await replay(d, EVENTS_SESSION)).until(isStatus("error"));
});

test("unsubscribing a configured subscription while its server is down stops the retries", async () => {
  const env = await environment({ fixtureEnv: { MCP_FIXTURE_EVENTS_DOWN: true } });
  const d = await startEventsDaemon(cleanups, env);
  await waitFor(async () => (await eventsRequests(env)) >= 2, { timeoutMs: E2E_WAIT_MS, label: "retries at the fixture" });
  const r = await command(d, EVENTS_SESSION, { type: "mcp_events_unsubscribe", id: "u1", server: "tickets", name: "build.finished" });
  expect(r.body).toMatchObject({ success: true, data: { removed: true } });
  const asked = await eventsRequests(env);
  await env.fixture!.control("events_down", { down: false });
  // Proving an absence: a retry loop (500 ms cap) would have asked at least twice by now.
  await sleep(1200);
  expect(await eventsRequests(env)).toBe(asked);
  expect(await list(d, EVENTS_SESSION)).toMatchObject({ subscriptions: [], unestablished: [] });
});

test("a configured subscription refused for good is reported once, not retried, and does not keep its session", async () => {
  const env = await environment({ events: [{ name: "no.such.event" }] });
  const d = await startEventsDaemon(cleanups, env, ["--session-idle-timeout", "1"]);
  // Attached: this client holds the session until it leaves.
  const frames = await replay(d, EVENTS_SESSION);
  const refused = (await frames.until(isStatus("refused"))).at(-1)!;
  expect(refused).toMatchObject({ server: "tickets", name: "no.such.event" });
  expect(String(refused.error)).toContain("no.such.event");
  const data = await list(d, EVENTS_SESSION);
  expect(data.subscriptions).toEqual([]);
  expect(data.unestablished).toMatchObject([{ server: "tickets", name: "no.such.event", state: "refused" }]);

  const before = await state(env);
  const statuses = () => frames.frames.filter((f) => f.type === "mcp_event_status").length;
  const reported = statuses();
  // Proving an absence: a transient retry (500 ms cap) would ask and report again in this window.
  await sleep(1500);
  const after = await state(env);
  expect(after.requests.length).toBe(before.requests.length);
  expect(after.list_calls).toBeLessThanOrEqual(2);
  expect(after.polls).toBe(0);
  expect(statuses()).toBe(reported);

  frames.close();
  await waitReaped(d, EVENTS_SESSION);
  expect(await sessions(d)).toBe(0);
});

test("a runtime subscription is restored after a restart without its client", async () => {
  const env = await environment({ events: [] });
  const d1 = await startEventsDaemon(cleanups, env);
  expect((await subscribe(d1, "r1", { name: "build.finished" })).body.success).toBe(true);
  await stop(d1);
  const polls = (await state(env)).polls;

  // No client command after the restart: the daemon wakes r1 itself.
  const d2 = await startEventsDaemon(cleanups, env);
  await polled(env, polls + 2);
  expect(await sessions(d2)).toBe(1);
  await emit(env, "restored-1");
  await waitRuns(env.model, inBatch("restored-1"));
  const run = await runAfterEvent(await replay(d2, "r1"), "restored-1");
  expect(run[0]).toMatchObject({ type: "run_start", trigger: "mcp_events" });
});

test("a runtime subscription older than VIGIL_EVENTS_RUNTIME_TTL_MS is not restored: its session is not started", async () => {
  const env = await environment({ events: [], knobs: { VIGIL_EVENTS_RUNTIME_TTL_MS: "1" } });
  const d1 = await startEventsDaemon(cleanups, env);
  expect((await subscribe(d1, "r1", { name: "build.finished" })).body.success).toBe(true);
  await polled(env);
  await stop(d1);
  const asked = await eventsRequests(env);

  const d2 = await startEventsDaemon(cleanups, env);
  // Proving an absence: a restore happens right after boot and polls every 100 ms.
  await sleep(1000);
  expect(await eventsRequests(env)).toBe(asked);
  expect(await sessions(d2)).toBe(0);
});

test("a runtime subscription to a server removed from the config is refused on restore, forgotten, and not revived", async () => {
  const env = await environment({ events: [] });
  const d1 = await startEventsDaemon(cleanups, env);
  expect((await subscribe(d1, "r1", { name: "build.finished" })).body.success).toBe(true);
  await stop(d1);
  const runtimeKeys = () => Object.values(snapshotOnDisk(env.stateDir, "r1")?.subscriptions ?? {}).filter((r) => r.runtime !== undefined).length;
  expect(runtimeKeys()).toBe(1);

  // The server is renamed: "tickets" no longer exists.
  env.writeConfig([httpServer(env.fixture!, "renamed", [])]);
  const d2 = await startEventsDaemon(cleanups, env);
  await waitFor(() => runtimeKeys() === 0, { timeoutMs: E2E_WAIT_MS, label: "the runtime subscription forgotten on disk" });
  const refused = (await (await replay(d2, "r1")).until(isStatus("refused"))).at(-1)!;
  expect(String(refused.error)).toContain("tickets");
  await stop(d2);

  const d3 = await startEventsDaemon(cleanups, env);
  // Proving an absence: sessions to restore are woken right after boot.
  await sleep(1000);
  expect(await sessions(d3)).toBe(0);
});

test("every client attached to the events session gets its event frames", async () => {
  const env = await environment();
  const d = await startEventsDaemon(cleanups, env);
  await polled(env);
  const a = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION));
  const b = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION));
  await emit(env, "both-1");
  const fa = (await a.until(isEventFrame("both-1"))).at(-1)!;
  const fb = (await b.until(isEventFrame("both-1"))).at(-1)!;
  expect(fb).toEqual(fa);
  expect(fa).toMatchObject({ server: "tickets", name: "build.finished", delivery: "poll", action: "follow_up" });
  await a.until((f) => f.type === "run_end");
  await b.until((f) => f.type === "run_end");
  expect(a.problems).toEqual([]);
  expect(b.problems).toEqual([]);
});
