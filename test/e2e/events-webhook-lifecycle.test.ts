// Webhook subscriptions across restarts and session lifecycles in `vigil serve` (serve.md §1, §6
// items 4, 6–7; events design notes §3.5, §4.1, §4.5, §8 "receiver", "lifecycle" and "webhook"
// suites), against the compiled binary, the HTTP events fixture (signing with standardwebhooks)
// and the mock model: runtime webhook subscriptions come back after a restart without their
// client (a retry that beats them is told to retry), one whose server is gone is forgotten, a
// restoring session that cannot help closes the restore window, a restart resumes from the
// persisted cursor, the receiver document can stand in for the challenge, the receiver exists
// only with its flags, and the reaper ends a detached session's webhook subscriptions only with
// --mcp-events-reapable. Every wait is bounded; no timing is asserted.
import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import type { EmitAnswer, FixtureHook } from "../helpers/events-fixture.ts";
import {
  EVENTS_SESSION,
  StdioServe,
  eventsEnvironment,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  runsFor,
  snapshotOnDisk,
  startEventsDaemon,
  waitRuns,
} from "../helpers/events-serve.ts";
import { type Daemon, type Frame, SseReader, command, framesUrl } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type WebhookStack, startWebhookStack } from "../helpers/webhook-serve.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";
/** The session that makes the runtime subscriptions. */
const RUNTIME = "r1";

let ids = 0;
const subscribeRuntime = (d: Daemon, session = RUNTIME) =>
  command(d, session, { type: "mcp_events_subscribe", id: `s${++ids}`, server: "fx", name: TICKETS, delivery: "webhook" });

const emit = (stack: WebhookStack, eventId: string) => stack.fixture.control<EmitAnswer>("emit", { name: TICKETS, event_id: eventId });

const hooks = async (stack: WebhookStack): Promise<FixtureHook[]> => (await stack.fixture.state()).hooks;

const oneHook = async (stack: WebhookStack): Promise<FixtureHook> =>
  (await waitFor(() => hooks(stack), { until: (h) => h.length === 1, timeoutMs: E2E_WAIT_MS, label: "one hook at the fixture" }))[0]!;

/** A runtime webhook subscription of session r1, routable (its grant is persisted before its route turns active). */
async function runtimeSubscribed(stack: WebhookStack): Promise<FixtureHook> {
  const sub = await subscribeRuntime(stack.daemon);
  expect(sub.body).toMatchObject({ success: true, data: { delivery: "webhook" } });
  const hook = await oneHook(stack);
  await waitFor(() => webhookRecords(stack, RUNTIME).some((w) => typeof w.subscription_id === "string"), {
    timeoutMs: E2E_WAIT_MS, label: "the runtime grant in the snapshot",
  });
  return hook;
}

type SnapshotRecord = { runtime?: unknown; cursor: string | null; recent: string[]; webhook?: { subscription_id: string | null } };
const records = (stack: WebhookStack, session: string): SnapshotRecord[] =>
  Object.values((snapshotOnDisk(stack.env.stateDir, session)?.subscriptions ?? {}) as Record<string, SnapshotRecord>);
const webhookRecords = (stack: WebhookStack, session: string) => records(stack, session).flatMap((r) => (r.webhook ? [r.webhook] : []));

/** A valid occurrence of ticket.updated, as the fixture would sign it. */
const occurrence = (eventId: string) => ({ eventId, name: TICKETS, timestamp: new Date().toISOString(), data: { ticket_id: eventId } });

const postTo = (stack: WebhookStack, hook: FixtureHook, eventId: string) =>
  stack.postSigned(hook.url, occurrence(eventId), { secret: hook.secrets.at(-1)!, headers: { "X-MCP-Subscription-Id": hook.id } });

/** Posts to `hook` until the answer is no longer 503 (the restore window, bounded); returns that answer's status. */
const afterTheWindow = (stack: WebhookStack, hook: FixtureHook, eventId: string) =>
  waitFor(async () => (await postTo(stack, hook, eventId)).status, { until: (s) => s !== 503, timeoutMs: E2E_WAIT_MS, label: "the restore window closed" });

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

const replay = (d: Daemon, session: string) => SseReader.open(cleanups, framesUrl(d.base, session, 0));
const reapedLine = (session: string) => `session ${JSON.stringify(session)} reaped`;
const waitReaped = (d: Daemon, session: string) =>
  waitFor(() => d.client.stderrText().includes(reapedLine(session)), { timeoutMs: E2E_WAIT_MS, label: `${session} reaped` });

test("with only runtime subscriptions, a retry that beats the resubscribe after a crash is told to retry (503), then lands", async () => {
  // No configured events; discovery is slow, so the restore's resubscribe comes late.
  const stack = await startWebhookStack(cleanups, { events: [], fixtureEnv: { MCP_FIXTURE_LIST_DELAY_MS: 2000 } });
  const hook = await runtimeSubscribed(stack);
  await stack.kill9();
  await stack.restart();
  expect((await postTo(stack, hook, "early-1")).status).toBe(503);
  await waitFor(async () => (await hooks(stack))[0]?.refreshes ?? 0, { until: (n) => n > hook.refreshes, timeoutMs: E2E_WAIT_MS, label: "the resubscribe" });
  const current = (await hooks(stack))[0]!;
  expect(current.url).toBe(hook.url);
  const landed = await afterTheWindow(stack, current, "early-1");
  expect(landed).toBe(200);
  await waitRuns(stack.env.model, inBatch("early-1"));
});

test("a runtime webhook subscription is restored after a restart without its client: same callback, the event runs that session", async () => {
  const stack = await startWebhookStack(cleanups, { events: [] });
  const before = await runtimeSubscribed(stack);
  // A graceful stop unsubscribes; the restore subscribes afresh on the old callback.
  expect(await stack.stop()).toBe(0);
  expect(await hooks(stack)).toEqual([]);
  await stack.restart();
  const after = await oneHook(stack);
  expect(after.url).toBe(before.url);
  // The fixture holds the hook once it answered; until vigil stored that answer a delivery gets
  // 503, and the fixture's retry lands it.
  await emit(stack, "restored-1");
  const landed = await waitFor(async () => (await stack.fixture.state()).deliveries.filter((d) => d.event_id === "restored-1"), {
    until: (d) => d.some((x) => x.status === 200), timeoutMs: E2E_WAIT_MS, label: "restored-1 acknowledged",
  });
  expect(landed.map((d) => d.status).filter((s) => s !== 503)).toEqual([200]);
  expect(new Set(landed.map((d) => d.url))).toEqual(new Set([before.url]));
  await waitRuns(stack.env.model, inBatch("restored-1"));
  const run = await runAfterEvent(await replay(stack.daemon, RUNTIME), "restored-1");
  expect(run[0]).toMatchObject({ type: "run_start", trigger: "mcp_events" });
  expect(runsFor(stack.env.model, inBatch("restored-1"))).toBe(1);
});

test("a runtime webhook subscription to a server removed from the config is forgotten: its token gets 410, no grant or secret left", async () => {
  const stack = await startWebhookStack(cleanups, { events: [] });
  const hook = await runtimeSubscribed(stack);
  await stack.kill9();
  // The server is renamed: "fx" no longer exists.
  stack.env.writeConfig([{ ...httpServer(stack.fixture, "renamed", []), headers: { Authorization: "Bearer alice" } }]);
  await stack.restart();
  await waitFor(() => records(stack, RUNTIME).filter((r) => r.runtime !== undefined).length === 0, {
    timeoutMs: E2E_WAIT_MS, label: "the runtime subscription forgotten on disk",
  });
  expect(await afterTheWindow(stack, hook, "late-1")).toBe(410);
  expect(webhookRecords(stack, RUNTIME)).toEqual([]);
  const onDisk = readFileSync(join(stack.env.stateDir, "sessions", RUNTIME, "mcp-events.json"), "utf8");
  expect(onDisk).not.toContain("whsec_");
  expect(onDisk).not.toContain(new URL(hook.url).pathname.split("/").at(-1)!);
});

const record = (seq: number) => `${JSON.stringify({ seq, time: "2030-01-01T00:00:00.000Z", type: "message", role: "user", text: `m${seq}` })}\n`;

/** How each case spoils the restore of r1, and what the daemon logs about it (null: nothing to look for). */
const SPOILED: [what: string, damage: (stack: WebhookStack) => void, logged: string | null][] = [
  [
    "fails to start (a corrupt transcript)",
    (stack) => writeFileSync(join(stack.env.stateDir, "sessions", RUNTIME, "transcript.jsonl"), `${record(1)}not a record\n${record(3)}`, { mode: 0o600 }),
    `session ${JSON.stringify(RUNTIME)} could not be started`,
  ],
  ["has no events (no server left in the config)", (stack) => stack.env.writeConfig([]), null],
];

for (const [what, damage, logged] of SPOILED) {
  test(`a restoring session that ${what} closes the restore window: a dead token gets 410`, async () => {
    const stack = await startWebhookStack(cleanups, { events: [] });
    const hook = await runtimeSubscribed(stack);
    expect(await stack.stop()).toBe(0);
    damage(stack);
    await stack.restart();
    // Within the bounded wait, far short of the 600 s the window may last at most.
    const dead = { ...hook, url: hook.url.replace(/[0-9a-f]{32}$/, randomBytes(16).toString("hex")) };
    expect(await afterTheWindow(stack, dead, "dead-1")).toBe(410);
    expect(await afterTheWindow(stack, hook, "dead-2")).toBe(410);
    if (logged !== null) expect(stack.daemon.client.stderrText()).toContain(logged);
  });
}

test("a restarted daemon resumes webhook delivery from its persisted cursor: what came while it was down arrives once", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS }] });
  await oneHook(stack);
  await waitFor(() => webhookRecords(stack, EVENTS_SESSION).some((w) => typeof w.subscription_id === "string"), { timeoutMs: E2E_WAIT_MS, label: "the grant on disk" });
  expect((await emit(stack, "r-1")).deliveries.map((d) => d.status)).toEqual([200]);
  await waitRuns(stack.env.model, inBatch("r-1"));
  expect(await stack.stop()).toBe(0);
  expect(records(stack, EVENTS_SESSION)).toMatchObject([{ cursor: "1", recent: ["r-1"] }]);
  // While vigil is down (unsubscribed), two more events.
  expect((await emit(stack, "r-2")).deliveries).toEqual([]);
  expect((await emit(stack, "r-3")).deliveries).toEqual([]);

  await stack.restart();
  await waitRuns(stack.env.model, inBatch("r-2"));
  await waitRuns(stack.env.model, inBatch("r-3"));
  // The backlog may beat vigil storing the grant (503, retried): what counts is that each landed once.
  const landed = (s: { deliveries: { replay: boolean; status: number; event_id: string }[] }) =>
    s.deliveries.filter((d) => d.replay && d.status === 200).map((d) => d.event_id).sort();
  const state = await waitFor(() => stack.fixture.state(), { until: (s) => landed(s).length >= 2, timeoutMs: E2E_WAIT_MS, label: "the backlog acknowledged" });
  expect(landed(state)).toEqual(["r-2", "r-3"]);
  expect(state.deliveries.filter((d) => d.replay).every((d) => d.status === 200 || d.status === 503)).toBe(true);
  const subscribes = state.requests.filter((r) => r.method === "events/subscribe");
  expect(subscribes.at(-1)!.params.cursor).toBe("1");
  // The server resending r-1 is acked and not surfaced again; a later event marks the point by which it would have run.
  expect((await stack.fixture.control<EmitAnswer>("redeliver", { event_id: "r-1" })).deliveries.map((d) => d.status)).toEqual([200]);
  await emit(stack, "r-4");
  await waitRuns(stack.env.model, inBatch("r-4"));
  for (const id of ["r-1", "r-2", "r-3"]) expect(runsFor(stack.env.model, inBatch(id))).toBe(1);
});

test("a server can verify the callback through the receiver document instead of a challenge", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS }], fixtureEnv: { MCP_FIXTURE_VERIFY_VIA_WELL_KNOWN: true } });
  const frames = await SseReader.open(cleanups, framesUrl(stack.base, EVENTS_SESSION, 0));
  const subscribed = (await frames.until(isStatus("subscribed"))).at(-1)!;
  expect(subscribed.subscription).toMatchObject({ name: TICKETS, delivery: "webhook", state: "active" });
  const hook = await oneHook(stack);
  expect((await stack.fixture.state()).verifications).toEqual([{ url: hook.url, via: "well-known", ok: true }]);
  expect((await emit(stack, "wk-1")).deliveries).toEqual([{ url: hook.url, status: 200 }]);
  await waitRuns(stack.env.model, inBatch("wk-1"));
});

test("the receiver needs --mcp-events-callback-url: without it its paths are 404 and a forced webhook names the missing flag", async () => {
  // Daemon without the callback URL.
  const env = await eventsEnvironment(cleanups, {
    fixtureEnv: { MCP_FIXTURE_ALLOW_HTTP_CALLBACK: true },
    servers: (fx) => [{ ...httpServer(fx!, "fx", []), headers: { Authorization: "Bearer alice" } }],
  });
  const d = await startEventsDaemon(cleanups, env);
  const post = await fetch(`${d.base}/_vigil/mcp-events/${"a".repeat(32)}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(occurrence("x-1")), signal: AbortSignal.timeout(10_000),
  });
  expect(post.status).toBe(404);
  const doc = await fetch(`${d.base}/.well-known/mcp-webhook-receiver.json`, { signal: AbortSignal.timeout(10_000) });
  expect(doc.status).toBe(404);
  const refused = await subscribeRuntime(d);
  expect(refused.body.success).toBe(false);
  expect(JSON.stringify(refused.body.error)).toContain("--mcp-events-callback-url");

  // Stdio mode: no listener at all.
  const stdio = StdioServe.start(cleanups, env, "s");
  const answer = await stdio.command({ type: "mcp_events_subscribe", id: "s-stdio", server: "fx", name: TICKETS, delivery: "webhook" });
  expect(answer.success).toBe(false);
  expect(answer.error?.message).toContain("--listen");

  // With both flags the same command is not refused.
  const stack = await startWebhookStack(cleanups, { events: [] });
  const accepted = await subscribeRuntime(stack.daemon);
  expect(accepted.body).toMatchObject({ success: true, data: { delivery: "webhook", state: "active" } });
});

test("--mcp-events-reapable: the reaper ends a detached session's webhook subscription and the teardown unsubscribes", async () => {
  const stack = await startWebhookStack(cleanups, { events: [], extraArgs: ["--session-idle-timeout", "1", "--mcp-events-reapable"] });
  const hook = await runtimeSubscribed(stack);
  await waitReaped(stack.daemon, RUNTIME);
  const state = await waitFor(() => stack.fixture.state(), { until: (s) => s.hooks.length === 0, timeoutMs: E2E_WAIT_MS, label: "the hook gone at the fixture" });
  expect(state.unsubscribes).toContainEqual({ name: TICKETS, arguments: {}, delivery: { mode: "webhook", url: hook.url } });
});

test("without --mcp-events-reapable an event arriving while detached is delivered (200, a run) and seen on reattach", async () => {
  const stack = await startWebhookStack(cleanups, { events: [], extraArgs: ["--session-idle-timeout", "1"] });
  const hook = await runtimeSubscribed(stack);
  // A plain session touched after r1's last command is reaped: r1 has been idle longer, and stays.
  expect((await command(stack.daemon, "plain", { type: "get_state", id: "g1" })).body.success).toBe(true);
  await waitReaped(stack.daemon, "plain");
  expect(stack.daemon.client.stderrText()).not.toContain(reapedLine(RUNTIME));
  expect((await emit(stack, "detached-1")).deliveries).toEqual([{ url: hook.url, status: 200 }]);
  await waitRuns(stack.env.model, inBatch("detached-1"));
  expect(stack.daemon.client.stderrText()).not.toContain(reapedLine(RUNTIME));
  expect((await stack.fixture.state()).unsubscribes).toEqual([]);
  // Reattaching: the catch-up shows the event and the run it caused.
  const run = await runAfterEvent(await replay(stack.daemon, RUNTIME), "detached-1");
  expect(run[0]).toMatchObject({ type: "run_start", trigger: "mcp_events" });
  expect(run.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
});
