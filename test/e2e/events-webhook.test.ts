// MCP Events over webhook in `vigil serve` (serve.md §6 item 4; design notes §4.4; wire notes §9–§11,
// §13–§14, §17), end to end: the compiled binary in daemon mode with --mcp-events-callback-url, the
// HTTP events fixture (which POSTs deliveries signed with the `standardwebhooks` library) and the
// mock model. What a user relies on: events reach the model over webhook (the challenge answered,
// a redelivery acked and not surfaced twice), the subscription is refreshed before a short
// `refreshBefore` with a new secret each time, a graceful shutdown unsubscribes, a `terminated`
// envelope ends it (its URL then answers 410), and a callback nothing answers fails the subscribe.
// Every wait is bounded; no timing is asserted.
import { expect, test } from "bun:test";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import type { EventsFixture, FixtureHook, FixtureState } from "../helpers/events-fixture.ts";
import { EVENTS_SESSION, eventsEnvironment, httpServer, inBatch, isEventFrame, isStatus, runsFor, startEventsDaemon, waitRuns } from "../helpers/events-serve.ts";
import { type Frame, SseReader, command, framesUrl } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { freePort, startWebhookStack } from "../helpers/webhook-serve.ts";

const cleanups = e2eSuite();

const TICKETS = "ticket.updated";

/** Waits (bounded) for a fixture state that satisfies `done`. */
function fixtureState(fx: EventsFixture, done: (s: FixtureState) => boolean, what: string, ms = E2E_WAIT_MS): Promise<FixtureState> {
  return waitFor(() => fx.state(), {
    until: done,
    timeoutMs: ms,
    label: `fixture: ${what}`,
    show: (s) => ({ hooks: s.hooks, verifications: s.verifications, deliveries: s.deliveries.slice(-5), unsubscribes: s.unsubscribes }),
  });
}

const liveHook = async (fx: EventsFixture): Promise<FixtureHook> => (await fixtureState(fx, (s) => s.hooks.length === 1, "one webhook subscription")).hooks[0]!;

test("events reach the model over webhook: the challenge is answered, one run carries the event, a redelivery is acked and not surfaced again", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS }] });
  const fx = stack.fixture;
  const frames = await SseReader.open(cleanups, framesUrl(stack.daemon.base, EVENTS_SESSION, 0));
  const subscribed = (await frames.until(isStatus("subscribed"))).at(-1)!;
  expect(subscribed.subscription).toMatchObject({ name: TICKETS, delivery: "webhook", state: "active" });
  const hook = await liveHook(fx);
  expect(hook.url.startsWith(`${stack.callbackUrl}/_vigil/mcp-events/`)).toBe(true);
  expect((await fx.state()).verifications).toContainEqual({ url: hook.url, via: "challenge", ok: true });

  const first = await fx.control<{ deliveries: { url: string; status: number }[] }>("emit", { name: TICKETS, event_id: "wh-1" });
  expect(first.deliveries).toEqual([{ url: hook.url, status: 200 }]);
  const event = (await frames.until(isEventFrame("wh-1"))).at(-1)!;
  expect(event).toMatchObject({ server: "fx", name: TICKETS, delivery: "webhook" });
  await waitRuns(stack.env.model, inBatch("wh-1"));

  // The same event again (a server retry): acked 200 so the server stops, and not shown again.
  const again = await fx.control<{ deliveries: { url: string; status: number }[] }>("redeliver", { event_id: "wh-1" });
  expect(again.deliveries).toEqual([{ url: hook.url, status: 200 }]);
  // A later event is a marker: once its run happened, a second surfacing of wh-1 would have too.
  await fx.control("emit", { name: TICKETS, event_id: "wh-2" });
  await waitRuns(stack.env.model, inBatch("wh-2"));
  expect(frames.frames.filter(isEventFrame("wh-1"))).toHaveLength(1);
  expect(runsFor(stack.env.model, inBatch("wh-1"))).toBe(1);
  // /v1/health counts them apart: two events stored, one duplicate, one verification.
  const health = (await (await fetch(`${stack.daemon.base}/v1/health`)).json()) as { webhook: Record<string, unknown> };
  expect(health.webhook).toMatchObject({ accepted: 2, duplicates: 1, verifications: 1 });
});

test("a 2.5 s refreshBefore is refreshed in time, repeatedly, with the same key and a new secret each time", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS }], fixtureEnv: { MCP_FIXTURE_MAX_TTL_MS: 2500 } });
  const fx = stack.fixture;
  const first = await liveHook(fx);
  expect(first.ttl_granted_ms).toBe(2500);
  let expiredSeen = false;
  // Four refreshes span about 8 s of 2.5 s grants: each must come before the last one ran out.
  const state = await fixtureState(
    fx,
    (s) => {
      if (s.hooks.some((h) => h.expired) || s.hooks.length !== 1) expiredSeen = true;
      return (s.hooks[0]?.refreshes ?? 0) >= 4;
    },
    "four refreshes",
    20_000,
  );
  expect(expiredSeen).toBe(false);
  const hook = state.hooks[0]!;
  expect(hook.id).toBe(first.id);
  expect(hook.url).toBe(first.url);
  expect(hook.expired).toBe(false);
  expect(hook.secrets.length).toBeGreaterThanOrEqual(5);
  expect(new Set(hook.secrets).size).toBe(hook.secrets.length);
  // The rotated secrets verify: an event after them is acknowledged.
  const emitted = await fx.control<{ deliveries: { url: string; status: number }[] }>("emit", { name: TICKETS, event_id: "after-refresh" });
  expect(emitted.deliveries).toEqual([{ url: hook.url, status: 200 }]);
});

test("a graceful shutdown (SIGTERM) unsubscribes with the exact url, arguments and mode", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS, arguments: { project: "alpha" } }] });
  const fx = stack.fixture;
  const hook = await liveHook(fx);
  expect(await stack.stop()).toBe(0);
  const state = await fx.state();
  expect(state.unsubscribes).toContainEqual({ name: TICKETS, arguments: { project: "alpha" }, delivery: { mode: "webhook", url: hook.url } });
  expect(state.hooks).toEqual([]);
});

test("a signed terminated envelope is acked and ends the subscription; a later post to its URL gets 410", async () => {
  const stack = await startWebhookStack(cleanups, { events: [{ name: TICKETS }] });
  const fx = stack.fixture;
  const frames = await SseReader.open(cleanups, framesUrl(stack.daemon.base, EVENTS_SESSION, 0));
  await frames.until(isStatus("subscribed"));
  const hook = await liveHook(fx);
  const ended = await fx.control<{ webhook_statuses: { url: string; status: number }[] }>("terminate", { reason: "access revoked" });
  expect(ended.webhook_statuses).toEqual([{ url: hook.url, status: 200 }]);
  const terminated = (await frames.until(isStatus("terminated"))).at(-1)! as Frame & { error: { code: number } };
  expect([-32012, -32024]).toContain(terminated.error.code);
  const late = await stack.postSigned(hook.url, { eventId: "late-1", name: TICKETS, data: {} }, { secret: hook.secrets.at(-1)! });
  expect(late.status).toBe(410);
});

test("a callback nothing answers fails the subscribe with CallbackEndpointError", async () => {
  const deadPort = await freePort();
  const env = await eventsEnvironment(cleanups, {
    fixtureEnv: { MCP_FIXTURE_ALLOW_HTTP_CALLBACK: true },
    servers: (fx) => [{ ...httpServer(fx!, "fx", []), headers: { Authorization: "Bearer alice" } }],
  });
  const daemon = await startEventsDaemon(cleanups, env, ["--mcp-events-callback-url", `http://127.0.0.1:${deadPort}`]);
  const answer = await command(daemon, "s1", { type: "mcp_events_subscribe", id: "sub-1", server: "fx", name: TICKETS, delivery: "webhook" });
  expect(answer.body.success).toBe(false);
  expect(JSON.stringify(answer.body)).toContain("CallbackEndpointError");
  expect((await env.fixture!.state()).hooks).toEqual([]);
});
