// The server-identity signature `v1a` of webhook deliveries (serve.md §6 item 4; events design notes
// §4.6, §8 "v1a" suite; wire notes §12.3), end to end: dist/vigil with --mcp-events-callback-url
// and the HTTP events fixture, which publishes an Ed25519 JWKS on its own origin and adds `v1a,`
// entries when given a seed. What a user relies on: once vigil knows a server's key, a delivery
// without a valid `v1a` never reaches the model, even after the server stops publishing and across
// a crash; a JWKS vigil cannot read refuses the first subscribe (rather than enforcing nothing) and
// leaves nothing behind; a clean 404 means the server does not sign. Every wait is bounded; no
// timing is asserted.
import { expect, test } from "bun:test";
import { randomBytes, sign as edSign } from "node:crypto";
import { identityKey } from "../fixtures/servers/events-fixture/webhook-sign.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import type { FixtureHook, FixtureState } from "../helpers/events-fixture.ts";
import { EVENTS_SESSION, inBatch, isEventFrame, isStatus, pendingOnDisk, runsFor, snapshotOnDisk, waitRuns } from "../helpers/events-serve.ts";
import { type Frame, SseReader, framesUrl } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Subscribed, TICKETS, WEBHOOK_TICKETS, emitOnce, subscribedStack } from "../helpers/webhook-subscribed.ts";
import { type WebhookStack, type WebhookStackOptions, startWebhookStack } from "../helpers/webhook-serve.ts";

const cleanups = e2eSuite();

/** The fixture's Ed25519 seed: it publishes the key and signs `v1a,` with it. */
const SEED = "5e".repeat(32);
const IDENTITY = identityKey(SEED);
const SIGNING = { MCP_FIXTURE_ED25519_SEED: SEED };




/** A good delivery lands (frame and model run); the refused ones left no frame, no pending entry, no run. */
async function onlyGoodOnesLand(s: Subscribed, refused: string[]): Promise<void> {
  const good = await emitOnce(s.stack);
  expect(good.status).toBe(200);
  await s.sse.until(isEventFrame(good.eventId), E2E_WAIT_MS);
  await waitRuns(s.stack.env.model, inBatch(good.eventId));
  const pending = pendingOnDisk(s.stack.env.stateDir, EVENTS_SESSION).map((p) => p.event.eventId);
  for (const id of refused) {
    expect(s.sse.frames.filter(isEventFrame(id))).toEqual([]);
    expect(pending).not.toContain(id);
    expect(runsFor(s.stack.env.model, inBatch(id))).toBe(0);
  }
}

const fixtureOrigin = (stack: WebhookStack): string => new URL(stack.fixture.mcpUrl).origin;

function serverKeysOnDisk(stack: WebhookStack): Record<string, string[]> | undefined {
  return (snapshotOnDisk(stack.env.stateDir, EVENTS_SESSION) as { server_keys?: Record<string, string[]> } | null)?.server_keys;
}

/** Waits (bounded) until the fixture counted `n` more refreshes of its one hook than `from`, and the hook is live. */
function refreshedPast(stack: WebhookStack, from: number, label: string): Promise<FixtureHook> {
  return waitFor(async () => (await stack.fixture.state()).hooks[0], {
    until: (h) => h !== undefined && h.refreshes > from && !h.expired,
    timeoutMs: 20_000,
    label,
  }) as Promise<FixtureHook>;
}

/** A verification envelope signed v1 with `secret`, plus a `v1a` by the fixture's own key when `identity`. */
function postChallenge(s: Subscribed, identity: boolean): Promise<Response> {
  const id = `msg_verification_${randomBytes(8).toString("hex")}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({ type: "verification", challenge: "nonce-from-the-test" });
  const v1a = `v1a,${edSign(null, Buffer.from(`${id}.${timestamp}.${body}`), IDENTITY.privateKey).toString("base64")}`;
  return s.stack.postSigned(s.hook.url, body, {
    secret: s.hook.secrets.at(-1)!,
    id,
    timestamp,
    extraSignatures: identity ? [v1a] : [],
    headers: { "X-MCP-Subscription-Id": s.hook.id },
  });
}

test("with a published key, only deliveries with a valid v1a reach the model (the challenge is v1a-checked too)", async () => {
  const s = await subscribedStack(cleanups, { fixtureEnv: SIGNING });
  // The key was fetched before the subscribe, and the v1a-signed challenge passed.
  expect((await s.stack.fixture.state()).verifications).toContainEqual({ url: s.hook.url, via: "challenge", ok: true });
  await waitFor(() => serverKeysOnDisk(s.stack), { timeoutMs: E2E_WAIT_MS, label: "server_keys in the snapshot" });
  expect(serverKeysOnDisk(s.stack)).toEqual({ [fixtureOrigin(s.stack)]: [IDENTITY.x] });
  // A verification envelope is held to the key like any delivery: echoed with a v1a, refused without.
  const unsigned = await postChallenge(s, false);
  expect(unsigned.status).toBe(401);
  const signed = await postChallenge(s, true);
  expect(signed.status).toBe(200);
  expect(await signed.json()).toEqual({ challenge: "nonce-from-the-test" });

  expect((await emitOnce(s.stack)).status).toBe(200);
  const forged = await emitOnce(s.stack, { tamper: "v1a" });
  expect(forged.status).toBe(401);
  const missing = await emitOnce(s.stack, { tamper: "no_v1a" });
  expect(missing.status).toBe(401);
  await onlyGoodOnesLand(s, [forged.eventId, missing.eventId]);
});

test("a server that stops publishing is still held to its key: 404, then 503, across refreshes and a kill -9", async () => {
  const s = await subscribedStack(cleanups, { fixtureEnv: { ...SIGNING, MCP_FIXTURE_MAX_TTL_MS: 2500 } });
  const { stack } = s;
  let hook = s.hook;
  for (const mode of [{ publish: false }, { status: 503 }]) {
    await stack.fixture.control("jwks", mode);
    const asked = (await stack.fixture.state()).jwks_requests;
    // Two whole refreshes after the change (a third count may be one already under way), each after a JWKS fetch that found nothing.
    hook = await refreshedPast(stack, hook.refreshes + 2, `refreshes with JWKS ${JSON.stringify(mode)}`);
    expect((await stack.fixture.state()).jwks_requests).toBeGreaterThanOrEqual(asked + 2);
    const missing = await emitOnce(stack, { tamper: "no_v1a" });
    expect(missing.status).toBe(401);
    await onlyGoodOnesLand(s, [missing.eventId]);
  }
  expect(serverKeysOnDisk(stack)).toEqual({ [fixtureOrigin(stack)]: [IDENTITY.x] });

  // A crash, and the restart finds the JWKS withheld: the key comes back from the snapshot.
  await stack.kill9();
  await stack.fixture.control("jwks", { publish: false });
  // Counted before the restart: the new daemon may fetch the JWKS before restart() returns.
  const asked = (await stack.fixture.state()).jwks_requests;
  await stack.restart();
  hook = await refreshedPast(stack, hook.refreshes, "the resubscribe after the restart");
  expect((await stack.fixture.state()).jwks_requests).toBeGreaterThan(asked);
  const after = await SseReader.open(cleanups, framesUrl(stack.base, EVENTS_SESSION, 0));
  const missing = await emitOnce(stack, { tamper: "no_v1a" });
  expect(missing.status).toBe(401);
  await onlyGoodOnesLand({ stack, sse: after, hook }, [missing.eventId]);
  expect(serverKeysOnDisk(stack)).toEqual({ [fixtureOrigin(stack)]: [IDENTITY.x] });
});

/** The subscription's `refused` status, and the fixture once its JWKS answered `attempts` times. */
async function refusedFirstSubscribe(o: Partial<WebhookStackOptions>, jwks: Record<string, unknown>): Promise<{ stack: WebhookStack; refusal: Frame; state: FixtureState }> {
  const stack = await startWebhookStack(cleanups, { events: WEBHOOK_TICKETS, fixtureEnv: SIGNING, ...o, beforeStart: (fx) => fx.control("jwks", jwks).then(() => {}) });
  const sse = await SseReader.open(cleanups, framesUrl(stack.base, EVENTS_SESSION, 0));
  const refusal = (await sse.until(isStatus("refused"), E2E_WAIT_MS)).at(-1)!;
  const state = await stack.fixture.state();
  expect(sse.frames.filter(isStatus("subscribed"))).toEqual([]);
  return { stack, refusal, state };
}

function expectNothingSubscribed(state: FixtureState): void {
  expect(state.hooks).toEqual([]);
  expect(state.verifications).toEqual([]);
  expect(state.requests.map((r) => r.method)).not.toContain("events/subscribe");
}

test("a JWKS that keeps failing refuses the first subscribe after 3 attempts, and nothing is subscribed", async () => {
  const { refusal, state } = await refusedFirstSubscribe({}, { status: 500 });
  expect(String(refusal.error)).toContain("webhook-signing keys");
  expect(state.jwks_requests).toBe(3);
  expectNothingSubscribed(state);
});

test("a JWKS body that stalls is timed out: the subscribe is refused, no route is left, the fixture's connection is closed", async () => {
  const { stack, refusal, state } = await refusedFirstSubscribe({ knobs: { VIGIL_EVENTS_JWKS_TIMEOUT_MS: "300" } }, { stall: true });
  expect(String(refusal.error)).toContain("webhook-signing keys");
  expect(state.jwks_stalled).toBe(3);
  expectNothingSubscribed(state);
  // vigil gave up on each stalled body: the fixture saw every stalled connection closed.
  await waitFor(async () => (await stack.fixture.state()).jwks_stalls_closed, { until: (n) => n === 3, timeoutMs: E2E_WAIT_MS, label: "three stalled JWKS answers closed" });
  // The token minted for the refused subscription (in the snapshot) routes nothing: 410 once the restore window is over.
  const snapshot = snapshotOnDisk(stack.env.stateDir, EVENTS_SESSION) as { subscriptions: Record<string, { webhook?: { token: string } }> } | null;
  const tokens = Object.values(snapshot?.subscriptions ?? {}).flatMap((r) => (r.webhook ? [r.webhook.token] : []));
  expect(tokens).toHaveLength(1);
  const url = `${stack.callbackUrl}/_vigil/mcp-events/${tokens[0]}`;
  const body = { eventId: "to-nowhere", name: TICKETS, timestamp: new Date().toISOString(), data: {} };
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const status = await waitFor(async () => (await stack.postSigned(url, body, { secret })).status, {
    until: (code) => code !== 503,
    timeoutMs: E2E_WAIT_MS,
    label: "the restore window closed",
  });
  expect(status).toBe(410);
});

test("a clean 404 means the server does not sign: v1a entries are ignored and plain v1 deliveries land", async () => {
  const s = await subscribedStack(cleanups);
  expect((await s.stack.fixture.state()).jwks_requests).toBeGreaterThanOrEqual(1);
  const plain = await emitOnce(s.stack);
  expect(plain.status).toBe(200);
  await s.sse.until(isEventFrame(plain.eventId), E2E_WAIT_MS);
  const stray = await emitOnce(s.stack, { tamper: "v1a" });
  expect(stray.status).toBe(200);
  await s.sse.until(isEventFrame(stray.eventId), E2E_WAIT_MS);
  await waitRuns(s.stack.env.model, inBatch(stray.eventId));
  expect(serverKeysOnDisk(s.stack)).toBeUndefined();
});
