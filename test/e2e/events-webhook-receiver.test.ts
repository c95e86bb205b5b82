// Webhook ingestion and the restart window of `vigil serve` (serve.md §6 item 4; events design notes
// §4.3, §4.5), against the compiled binary, the HTTP events fixture (which signs with
// standardwebhooks and retries on 503) and the mock model: a delivery that cannot be stored is
// answered 503 and lands on the retry, the pending queue's byte bound answers 503, a crash after
// the 2xx loses nothing, the callback URL survives a crash, a retry that beats the resubscribe gets
// 503 (not 410), and a forgotten subscription's token gets 410.
import { expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import type { EmitAnswer, FixtureHook } from "../helpers/events-fixture.ts";
import { EVENTS_SESSION, httpServer, inBatch, pendingOnDisk, runsFor, snapshotOnDisk, waitRuns } from "../helpers/events-serve.ts";
import { command } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type WebhookStack, startWebhookStack } from "../helpers/webhook-serve.ts";

const cleanups = e2eSuite();

const TICKETS = { name: "ticket.updated", arguments: { project: "alpha" }, delivery: "webhook", action: "follow_up" };

const emit = (stack: WebhookStack, eventId: string, data: Record<string, unknown> = {}) =>
  stack.fixture.control<EmitAnswer>("emit", { name: "ticket.updated", project: "alpha", event_id: eventId, data });

const hooks = async (stack: WebhookStack): Promise<FixtureHook[]> => (await stack.fixture.state()).hooks;

/** The subscription is routable: its grant is on disk (it is persisted before the route turns active). */
async function subscribed(stack: WebhookStack, session = EVENTS_SESSION): Promise<FixtureHook> {
  await waitFor(() => {
    const snapshot = snapshotOnDisk(stack.env.stateDir, session) as { subscriptions: Record<string, { webhook?: { subscription_id: string | null } }> } | null;
    return Object.values(snapshot?.subscriptions ?? {}).some((r) => typeof r.webhook?.subscription_id === "string");
  }, { timeoutMs: E2E_WAIT_MS, label: "a webhook grant in the snapshot" });
  const [hook] = await waitFor(() => hooks(stack), { until: (h) => h.length === 1, timeoutMs: E2E_WAIT_MS, label: "one hook at the fixture" });
  return hook!;
}

/** A valid occurrence of ticket.updated, as the fixture would sign it. */
const occurrence = (eventId: string) => ({ eventId, name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket_id: eventId } });

const pendingIds = (stack: WebhookStack) => pendingOnDisk(stack.env.stateDir, EVENTS_SESSION).map((p) => String(p.event.eventId));

test("a delivery that cannot be stored is answered 503, and the server's retry lands it: one model run", async () => {
  const stack = await startWebhookStack(cleanups, { events: [TICKETS], fixtureEnv: { MCP_FIXTURE_WEBHOOK_RETRY_MS: "300,600,1200,2400,4800" } });
  await subscribed(stack);
  // A directory where the pending log goes: the log write fails (LogFile refuses it).
  const logPath = join(stack.env.stateDir, "sessions", EVENTS_SESSION, "mcp-events.log");
  mkdirSync(logPath);
  const first = await emit(stack, "unstorable-1");
  expect(first.deliveries.map((d) => d.status)).toEqual([503]);
  rmSync(logPath, { recursive: true });
  await waitRuns(stack.env.model, inBatch("unstorable-1"));
  await waitFor(async () => (await stack.fixture.state()).deliveries.some((d) => d.event_id === "unstorable-1" && d.status === 200), {
    timeoutMs: E2E_WAIT_MS, label: "a 200 for a retry of unstorable-1",
  });
  await waitFor(() => pendingIds(stack).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  // A redelivery now is a duplicate: 200, and no second run.
  const again = await stack.fixture.control<{ deliveries: { status: number }[] }>("redeliver", { event_id: "unstorable-1" });
  expect(again.deliveries.map((d) => d.status)).toEqual([200]);
  const later = await emit(stack, "after-1");
  expect(later.deliveries.map((d) => d.status)).toEqual([200]);
  await waitRuns(stack.env.model, inBatch("after-1"));
  expect(runsFor(stack.env.model, inBatch("unstorable-1"))).toBe(1);
});

test("the pending queue bounded in bytes answers 503 past its bound", async () => {
  const stack = await startWebhookStack(cleanups, {
    events: [TICKETS], fixtureEnv: { MCP_FIXTURE_WEBHOOK_RETRY_MS: "" }, knobs: { VIGIL_EVENTS_MAX_PENDING_BYTES: "2048" },
  });
  // The first batch stalls the model, so what arrives stays pending.
  stack.env.model.script([{ stall: true }]);
  await subscribed(stack);
  expect((await emit(stack, "big-1", { summary: "x".repeat(1500) })).deliveries.map((d) => d.status)).toEqual([200]);
  expect((await emit(stack, "big-2", { summary: "y".repeat(1500) })).deliveries.map((d) => d.status)).toEqual([503]);
  expect(pendingIds(stack)).toEqual(["big-1"]);
});

test("kill -9 after the 2xx loses nothing: the event reaches the model after the restart", async () => {
  const stack = await startWebhookStack(cleanups, { events: [TICKETS] });
  stack.env.model.script([{ stall: true }]);
  await subscribed(stack);
  expect((await emit(stack, "acked-1")).deliveries.map((d) => d.status)).toEqual([200]);
  await waitRuns(stack.env.model, inBatch("acked-1"));
  await stack.kill9();
  expect(pendingIds(stack)).toEqual(["acked-1"]);
  await stack.restart();
  await waitRuns(stack.env.model, inBatch("acked-1"), 2);
  await waitFor(() => pendingIds(stack).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
});

test("the callback survives a crash: the same URL after a restart on the same port, and a redelivery lands", async () => {
  const stack = await startWebhookStack(cleanups, { events: [TICKETS] });
  const before = await subscribed(stack);
  expect(before.url.startsWith(`${stack.callbackUrl}/_vigil/mcp-events/`)).toBe(true);
  await stack.kill9();
  // Emitted while vigil is down: the fixture's retries fail (no answer); a redelivery after the restart lands it.
  await emit(stack, "down-1");
  await stack.restart();
  await waitFor(async () => (await hooks(stack))[0]?.refreshes ?? 0, { until: (n) => n > before.refreshes, timeoutMs: E2E_WAIT_MS, label: "the resubscribe" });
  expect((await hooks(stack)).map((h) => h.url)).toEqual([before.url]);
  // The fixture counts the resubscribe when it answers it; vigil routes events only once that
  // answer is stored (a 503 until then), so the server's retry lands on the first try after it.
  const landed = await waitFor(
    async () => (await stack.fixture.control<{ deliveries: { status: number }[] }>("redeliver", { event_id: "down-1" })).deliveries.map((d) => d.status),
    { until: (s) => s[0] !== 503, timeoutMs: E2E_WAIT_MS, label: "a redelivery after the resubscribe" },
  );
  expect(landed).toEqual([200]);
  await waitRuns(stack.env.model, inBatch("down-1"));
});

test("a retry that beats the resubscribe after a restart gets 503, not 410, then 200", async () => {
  // Discovery (events/list) is slow, so the resubscribe after the restart comes late.
  const stack = await startWebhookStack(cleanups, { events: [TICKETS], fixtureEnv: { MCP_FIXTURE_LIST_DELAY_MS: 2000 } });
  const hook = await subscribed(stack);
  await stack.kill9();
  await stack.restart();
  const secret = hook.secrets.at(-1)!;
  const early = await stack.postSigned(hook.url, occurrence("early-1"), { secret, headers: { "X-MCP-Subscription-Id": hook.id } });
  expect(early.status).toBe(503);
  await waitFor(async () => (await hooks(stack))[0]?.refreshes ?? 0, { until: (n) => n > hook.refreshes, timeoutMs: E2E_WAIT_MS, label: "the resubscribe" });
  const current = (await hooks(stack))[0]!;
  // The fixture counts the resubscribe when it answers it; vigil routes the retry once that answer is stored.
  const late = await waitFor(
    async () => (await stack.postSigned(current.url, occurrence("early-1"), { secret: current.secrets.at(-1)!, headers: { "X-MCP-Subscription-Id": current.id } })).status,
    { until: (status) => status !== 503, timeoutMs: E2E_WAIT_MS, label: "the retry after the resubscribe" },
  );
  expect(late).toBe(200);
  await waitRuns(stack.env.model, inBatch("early-1"));
});

test("a forgotten subscription's token gets 410: an unsubscribed runtime one, and a configured one removed from the config", async () => {
  const stack = await startWebhookStack(cleanups, { events: [TICKETS] });
  const configured = await subscribed(stack);
  // A runtime subscription in another session, then unsubscribed.
  const spec = { server: "fx", name: "ticket.updated", arguments: { project: "beta" }, delivery: "webhook", action: "follow_up" };
  const sub = await command(stack.daemon, "ops", { type: "mcp_events_subscribe", id: "s1", ...spec });
  expect(sub.body.success).toBe(true);
  const runtime = await waitFor(async () => (await hooks(stack)).find((h) => h.project === "beta"), { timeoutMs: E2E_WAIT_MS, label: "the runtime hook" });
  const un = await command(stack.daemon, "ops", { type: "mcp_events_unsubscribe", id: "u1", server: "fx", name: "ticket.updated", arguments: { project: "beta" } });
  expect(un.body.success).toBe(true);
  const gone = await stack.postSigned(runtime.url, occurrence("late-1"), { secret: runtime.secrets.at(-1)!, headers: { "X-MCP-Subscription-Id": runtime.id } });
  expect(gone.status).toBe(410);

  // The configured one: removed from the config across a restart, its token is not coming back.
  await stack.kill9();
  stack.env.writeConfig([{ ...httpServer(stack.fixture, "fx"), headers: { Authorization: "Bearer alice" } }]);
  await stack.restart();
  const removed = await waitFor(
    async () => (await stack.postSigned(configured.url, occurrence("late-2"), { secret: configured.secrets.at(-1)!, headers: { "X-MCP-Subscription-Id": configured.id } })).status,
    { until: (status) => status !== 503, timeoutMs: E2E_WAIT_MS, label: "the restore window closed" },
  );
  expect(removed).toBe(410);
});
