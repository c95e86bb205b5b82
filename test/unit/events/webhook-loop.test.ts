// The webhook loop (src/events/webhook/webhook-loop.ts) and one subscription's route (route.ts),
// against a fake host and a fake wire on the fake scheduler: the route exists before the subscribe
// request (the challenge arrives inside it), events are routable only once the grant is durable,
// refreshes come at ¾ of the remaining time and rotate the secret (exactly one previous
// generation; a pending secret is re-sent unchanged), a null cursor is never replayed, a graceful
// stop unsubscribes with the mode and the url, and a JWKS that cannot be read refuses without
// leaving a route behind (design notes §4.4, §4.6; wire notes §9–§11, §14, §17, §18).
import { expect, test } from "bun:test";
import { OCCURRENCE_LIMITS } from "../../../src/events/rules/occurrence.ts";
import type { HostedSubscription, SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { fakeHostedSubscription } from "../../helpers/hosted-subscription.ts";
import { Subscription } from "../../../src/events/subscription/subscription.ts";
import { EventsTerminated } from "../../../src/events/subscription/push-loop.ts";
import { WebhookRouteTable } from "../../../src/events/webhook/routes.ts";
import { ServerKeyStore } from "../../../src/events/webhook/server-keys.ts";
import type { WebhookRecord, WebhookRoute } from "../../../src/events/webhook/types.ts";
import { RefreshCallbackError, WebhookLink, runWebhook } from "../../../src/events/webhook/webhook-loop.ts";
import { EventsRpcError } from "../../../src/events/rules/errors.ts";
import { EventsRefused } from "../../../src/events/wire/server-events.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";

/** Lets settled promises run their continuations (no time passes on the fake clock). */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

const EPOCH = Date.parse("2026-03-01T12:00:00Z");
const BASE = "http://127.0.0.1:9/hooks";
const iso = (ms: number) => new Date(ms).toISOString();

type Params = Record<string, unknown> & { delivery: { mode: string; url: string; secret: string }; cursor: string | null };
type Answer = (params: Params, route: WebhookRoute) => Promise<Record<string, unknown>> | Record<string, unknown>;

function setup(o: { origin?: string | null; record?: WebhookRecord | null; fetch?: typeof fetch } = {}) {
  const clock = new FakeScheduler();
  const routes = new WebhookRouteTable();
  const keys = new ServerKeyStore();
  const subscribes: Params[] = [];
  const unsubscribes: { params: Record<string, unknown>; timeoutMs: number }[] = [];
  const ingested: unknown[] = [];
  const persisted: (WebhookRecord | null)[] = [];
  const statuses: { kind: string }[] = [];
  let commits = 0;
  let commitGate: Promise<void> | null = null;
  let answer: Answer = () => ({ id: "sub_1", refreshBefore: null, cursor: null });
  const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
  const wire = {
    origin: o.origin ?? null,
    canStream: true,
    list: async () => [{ name: "e", delivery: ["webhook"] }],
    invalidate() {},
    async subscribe(params: Params) {
      subscribes.push(structuredClone(params));
      const found = routes.lookup(tokenOf(params.delivery.url));
      if (found.kind !== "route") throw new Error("the route was not registered before events/subscribe");
      return answer(params, found.route);
    },
    async unsubscribe(params: Record<string, unknown>, _signal: AbortSignal | undefined, timeoutMs: number) {
      unsubscribes.push({ params, timeoutMs });
      return {};
    },
  };
  const host = {
    tuning: { webhookTtlMs: 3_600_000, jwksTimeoutMs: 1000, healthyMs: 60_000, refusedRetryMs: 60_000, retryCapMs: 60_000 },
    webhook: { available: true, routes, keys, callbackUrl: (token: string) => `${BASE}/_vigil/mcp-events/${token}` },
    wire: () => wire,
    async ingest(_sub: HostedSubscription, occurrence: unknown) {
      ingested.push(occurrence);
      return { status: 200 };
    },
    persistWebhook: (_sub: HostedSubscription, record: WebhookRecord | null) => void persisted.push(record === null ? null : { ...record }),
    async commit() {
      commits++;
      if (commitGate !== null) await commitGate;
    },
    persist() {},
    gap: () => true,
    accept: () => "new",
    status: (_sub: HostedSubscription, detail: { kind: string }) => void statuses.push(detail),
    forget() {},
    retired() {},
    fault: (e: unknown) => {
      throw e;
    },
  } as unknown as SubscriptionHost;
  const sub = fakeHostedSubscription({ server: "s", name: "e", arguments: { severity: "P1" }, action: "follow_up" });
  const sleepNow = async () => {};
  const link = new WebhookLink(o.record, { scheduler: clock, now: () => EPOCH + clock.now(), ...(o.fetch ? { fetch: o.fetch, sleep: sleepNow } : {}) });
  return {
    clock,
    routes,
    host,
    sub,
    link,
    subscribes,
    unsubscribes,
    ingested,
    persisted,
    statuses,
    commits: () => commits,
    gateCommits(gate: Promise<void> | null) {
      commitGate = gate;
    },
    answer(fn: Answer) {
      answer = fn;
    },
    tokenOf,
  };
}

test("the route is registered (pending) before events/subscribe and answers the challenge that arrives inside the call", async () => {
  const t = setup();
  const during: unknown[] = [];
  t.answer(async (params, route) => {
    // The fresh pair was made durable before anything was sent: a crash mid-subscribe keeps the URL.
    expect(t.persisted[0]).toMatchObject({ token: t.tokenOf(params.delivery.url), secret: params.delivery.secret, subscription_id: null });
    expect(t.commits()).toBeGreaterThanOrEqual(1);
    expect(route.stage).toBe("pending");
    expect(route.secrets()).toEqual([params.delivery.secret]);
    during.push(await route.deliver({ kind: "verification", challenge: "nonce-1" }));
    return { id: "sub_1", refreshBefore: null, cursor: null };
  });
  const controller = new AbortController();
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  expect(during).toEqual([{ status: 200, body: { challenge: "nonce-1" } }]);
  const sent = t.subscribes[0]!;
  expect(sent).toMatchObject({ name: "e", arguments: { severity: "P1" }, delivery: { mode: "webhook" }, cursor: null, ttlMs: 3_600_000 });
  expect(sent.delivery.url).toMatch(/^http:\/\/127\.0\.0\.1:9\/hooks\/_vigil\/mcp-events\/[0-9a-f]{32}$/);
  expect(sent.delivery.secret).toMatch(/^whsec_/);
  controller.abort();
  await loop;
});

test("an event posted before the grant is committed gets 503; once it is durable the route is active and events are ingested", async () => {
  const t = setup();
  let release!: () => void;
  const controller = new AbortController();
  let route!: WebhookRoute;
  t.answer((_params, r) => {
    route = r;
    // The pair's commit is done; the grant's commit will wait at the gate.
    t.gateCommits(new Promise<void>((resolve) => (release = resolve)));
    return { id: "sub_42", refreshBefore: null, cursor: "c1" };
  });
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  expect(route.stage).toBe("pending");
  expect(await route.deliver({ kind: "event", occurrence: { eventId: "a", name: "e" } })).toMatchObject({ status: 503 });
  expect(await route.deliver({ kind: "gap", cursor: "g" })).toMatchObject({ status: 503 });
  expect(t.ingested).toEqual([]);
  expect(route.subscriptionId).toBeNull();

  release();
  t.gateCommits(null);
  await settle();
  expect(route.stage).toBe("active");
  expect(route.subscriptionId).toBe("sub_42");
  expect(t.persisted.at(-1)).toMatchObject({ subscription_id: "sub_42", refresh_before: null });
  expect(t.sub.cursor).toBe("c1");
  expect(t.sub.up).toBe(true);
  expect(await route.deliver({ kind: "event", occurrence: { eventId: "b", name: "e" } })).toEqual({ status: 200 });
  expect(t.ingested).toEqual([{ eventId: "b", name: "e" }]);
  controller.abort();
  await loop;
});

test("refresh at ¾ of the remaining time rotates the secret: exactly the current and one previous verify, a pending one is re-sent unchanged", async () => {
  const t = setup();
  const grantFor = () => ({ id: "sub_1", refreshBefore: iso(EPOCH + t.clock.now() + 40_000), cursor: null });
  let fail = false;
  t.answer(() => {
    if (fail) throw new EventsRpcError(-32603, "the server is restarting");
    return grantFor();
  });
  const controller = new AbortController();
  let loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  expect(t.subscribes).toHaveLength(1);
  const s0 = t.subscribes[0]!.delivery.secret;
  const route = t.link.route as WebhookRoute;

  t.clock.advance(29_999);
  await settle();
  expect(t.subscribes).toHaveLength(1);
  t.clock.advance(1);
  await settle();
  expect(t.subscribes).toHaveLength(2);
  const s1 = t.subscribes[1]!.delivery.secret;
  expect(s1).not.toBe(s0);
  expect(t.subscribes[1]!.delivery.url).toBe(t.subscribes[0]!.delivery.url);
  expect([...route.secrets()].sort()).toEqual([s0, s1].sort());
  expect(route.stage).toBe("active");
  expect(t.persisted.at(-1)).toMatchObject({ secret: s1, previous: s0 });

  // The next refresh fails: its new secret stays pending (it already verifies) and is re-sent as is.
  fail = true;
  t.clock.advance(30_000);
  await expect(loop).rejects.toThrow("the server is restarting");
  const s2 = t.subscribes[2]!.delivery.secret;
  expect(new Set([s0, s1, s2]).size).toBe(3);
  expect(route.stage).toBe("active");
  // Pending: the confirmed one and the new one; two generations back (s0) no longer verifies.
  expect([...route.secrets()].sort()).toEqual([s1, s2].sort());
  expect(route.secrets()).not.toContain(s0);

  fail = false;
  loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  expect(t.subscribes[3]!.delivery.secret).toBe(s2);
  // Confirmed: the current and exactly one generation back; the third one back no longer verifies.
  expect([...route.secrets()].sort()).toEqual([s1, s2].sort());
  expect(route.secrets()).not.toContain(s0);
  expect(t.persisted.at(-1)).toMatchObject({ secret: s2, previous: s1 });
  expect(t.link.state.refreshes).toBe(2);
  controller.abort();
  await loop;
});

test("a cursorless type resubscribes with cursor null, never with something made up", async () => {
  const t = setup();
  t.answer(() => ({ id: "sub_7", refreshBefore: iso(EPOCH + t.clock.now() + 4_000), cursor: null, truncated: false }));
  const controller = new AbortController();
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  for (let i = 0; i < 4; i++) {
    await settle();
    t.clock.advance(4_000);
  }
  await settle();
  expect(t.subscribes.length).toBeGreaterThanOrEqual(4);
  for (const params of t.subscribes) expect(params.cursor).toBeNull();
  expect(t.sub.cursor).toBeNull();
  controller.abort();
  await loop;
});

test("a persisted token and secret are reused after a restart (the URL the server retries keeps verifying)", async () => {
  const record = { token: "ab".repeat(16), secret: "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", previous: null, subscription_id: "sub_1", refresh_before: null };
  const t = setup({ record });
  t.routes.reserve(record.token);
  const controller = new AbortController();
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  expect(t.subscribes[0]!.delivery).toEqual({ mode: "webhook", url: `${BASE}/_vigil/mcp-events/${record.token}`, secret: record.secret });
  controller.abort();
  await loop;
});

test("a graceful stop unsubscribes with the mode and the exact url, and the route is gone (410)", async () => {
  const t = setup();
  const subscription = new Subscription(t.host, {
    key: "k",
    spec: { server: "s", name: "e", arguments: { severity: "P1" }, action: "follow_up" },
    origin: "configured",
    cursor: null,
    recent: [],
  });
  subscription.start();
  await settle();
  expect(subscription.up).toBe(true);
  expect(subscription.status()).toMatchObject({ delivery: "webhook", subscription_id: "sub_1", refreshes: 0 });
  const url = t.subscribes[0]!.delivery.url;
  await subscription.stop();
  expect(t.unsubscribes).toEqual([
    { params: { name: "e", arguments: { severity: "P1" }, delivery: { mode: "webhook", url } }, timeoutMs: 3000 },
  ]);
  expect(t.routes.lookup(t.tokenOf(url))).toEqual({ kind: "gone" });
});

test("a signed terminated envelope is acked 200, the route goes at once, and the loop ends like a push termination", async () => {
  const t = setup();
  const controller = new AbortController();
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  const route = t.link.route as WebhookRoute;
  const answer = await route.deliver({ kind: "terminated", error: { code: -32012, message: "Forbidden", data: { reason: "revoked" } } });
  expect(answer.status).toBe(200);
  expect(t.routes.lookup(route.token)).toEqual({ kind: "gone" });
  const ended = await loop.then(() => null, (e: unknown) => e);
  expect(ended).toBeInstanceOf(EventsTerminated);
  expect(ended).toMatchObject({ code: -32012, message: "Forbidden" });
});

test("a JWKS that cannot be read while no key is known refuses the subscription and leaves no route behind", async () => {
  let fetches = 0;
  const failing = (async () => {
    fetches++;
    return new Response("down", { status: 500 });
  }) as unknown as typeof fetch;
  const t = setup({ origin: "https://events.example:8443", fetch: failing });
  const failure = await runWebhook(t.host, t.sub, new AbortController().signal, t.link).then(() => null, (e: unknown) => e);
  expect(failure).toBeInstanceOf(EventsRefused);
  expect(String((failure as Error).message)).toMatch(/identity/);
  expect(fetches).toBe(3);
  expect(t.subscribes).toEqual([]);
  const token = t.link.state.token as string;
  expect(t.routes.lookup(token)).toEqual({ kind: "gone" });
  expect(t.link.route).toBeNull();
});

test("a CallbackEndpointError on a refresh is retried in place (the route stays active); on the first subscribe it is the error itself", async () => {
  const t = setup();
  let refreshFails = false;
  t.answer(() => {
    if (refreshFails) throw new EventsRpcError(-32015, "CallbackEndpointError", { reason: "timeout" });
    return { id: "sub_1", refreshBefore: iso(EPOCH + t.clock.now() + 4_000), cursor: null };
  });
  const loop = runWebhook(t.host, t.sub, new AbortController().signal, t.link);
  await settle();
  refreshFails = true;
  t.clock.advance(3_000);
  const failure = await loop.then(() => null, (e: unknown) => e);
  expect(failure).toBeInstanceOf(RefreshCallbackError);
  expect(t.link.route?.stage).toBe("active");

  const fresh = setup();
  fresh.answer(() => {
    throw new EventsRpcError(-32015, "CallbackEndpointError", { reason: "connection_refused" });
  });
  const first = await runWebhook(fresh.host, fresh.sub, new AbortController().signal, fresh.link).then(() => null, (e: unknown) => e);
  expect(first).toBeInstanceOf(EventsRpcError);
  expect(first).not.toBeInstanceOf(RefreshCallbackError);
});

test("a gap envelope's cursor too long to store is not carried in the notice (as in push and poll); a storable one is, and becomes the cursor", async () => {
  const t = setup();
  const notices: { cursor: string | null }[] = [];
  (t.host as unknown as { gap: (sub: HostedSubscription, n: { cursor: string | null }) => boolean }).gap = (_sub, n) => {
    notices.push(n);
    return true;
  };
  const controller = new AbortController();
  const loop = runWebhook(t.host, t.sub, controller.signal, t.link);
  await settle();
  const route = t.link.route as WebhookRoute;
  expect(route.stage).toBe("active");
  const huge = "c".repeat(OCCURRENCE_LIMITS.cursorChars + 1);
  expect(await route.deliver({ kind: "gap", cursor: huge })).toEqual({ status: 200, body: {} });
  expect(notices.at(-1)?.cursor).toBeNull();
  expect(t.sub.cursor).toBeNull();
  expect(await route.deliver({ kind: "gap", cursor: "g2" })).toEqual({ status: 200, body: {} });
  expect(notices.at(-1)?.cursor).toBe("g2");
  expect(t.sub.cursor).toBe("g2");
  controller.abort();
  await loop;
});

test("a refresh's new secret is stored (pending) before the refresh is sent, and a restart re-sends it unchanged", async () => {
  const t = setup();
  let refreshSeen: { persistedBefore: WebhookRecord | null } | null = null;
  t.answer((params) => {
    if (t.subscribes.length === 2) refreshSeen = { persistedBefore: t.persisted.at(-1) ?? null };
    if (t.subscribes.length === 2) throw new EventsRpcError(-32603, "crash stand-in: no answer");
    void params;
    return { id: "sub_1", refreshBefore: iso(EPOCH + t.clock.now() + 40_000), cursor: null };
  });
  const loop = runWebhook(t.host, t.sub, new AbortController().signal, t.link);
  await settle();
  const s0 = t.subscribes[0]!.delivery.secret;
  t.clock.advance(30_000);
  await loop.catch(() => {});
  const s1 = t.subscribes[1]!.delivery.secret;
  // Durable before it was sent: the record in the snapshot carries it as pending.
  expect(refreshSeen!.persistedBefore).toMatchObject({ secret: s0, pending: s1 });
  // A restarted process reads that record: the new secret verifies at once and is what it re-sends.
  const restarted = setup({ record: refreshSeen!.persistedBefore });
  restarted.answer(() => ({ id: "sub_1", refreshBefore: null, cursor: null }));
  const controller = new AbortController();
  const again = runWebhook(restarted.host, restarted.sub, controller.signal, restarted.link);
  await settle();
  expect(restarted.subscribes[0]!.delivery.secret).toBe(s1);
  expect(restarted.persisted.at(-1)).toMatchObject({ secret: s1, previous: s0 });
  expect(restarted.persisted.at(-1)).not.toHaveProperty("pending");
  controller.abort();
  await again;
});

test("once granted, a JWKS outage at a refresh is a transient error (retried, the route stays active), not a refusal", async () => {
  let jwksDown = false;
  const jwks = (async () => (jwksDown ? new Response("down", { status: 503 }) : new Response("", { status: 404 }))) as unknown as typeof fetch;
  const t = setup({ origin: "https://events.example:8443", fetch: jwks });
  t.answer(() => ({ id: "sub_1", refreshBefore: iso(EPOCH + t.clock.now() + 4_000), cursor: null }));
  const loop = runWebhook(t.host, t.sub, new AbortController().signal, t.link);
  await settle();
  expect(t.link.route?.stage).toBe("active");
  jwksDown = true;
  t.clock.advance(3_000);
  const failure = await loop.then(() => null, (e: unknown) => e);
  expect(failure).toBeInstanceOf(EventsRpcError);
  expect(failure).not.toBeInstanceOf(EventsRefused);
  expect(t.link.route?.stage).toBe("active");
  expect(t.routes.lookup(t.link.state.token as string).kind).toBe("route");
});
