/**
 * The webhook side of the events fixture against a receiver of our own (Bun.serve on port 0) that
 * verifies with the `standardwebhooks` package, so the fixture is checked independently of vigil's
 * receiver. Waits are bounded conditions; timing is never asserted.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createPublicKey, verify as edVerify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { type EventsFixture, type EventsFixtureEnv, type EmitAnswer, startEventsFixture } from "../helpers/events-fixture.ts";
import { Cleanups } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { freePort } from "../helpers/webhook-serve.ts";

const WAIT_MS = 10_000;
const SECRET_1 = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET_2 = "whsec_ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
const SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

interface Received {
  headers: Record<string, string>;
  body: string;
}

/** A receiver that records every POST and answers the challenge; `answer` decides the status of events. */
function receiver(o: { answer?: (r: Received, n: number) => number; echo?: (challenge: string) => string; receivers?: string[] } = {}) {
  const got: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 30,
    maxRequestBodySize: 1024 * 1024,
    async fetch(req) {
      if (req.method === "GET") {
        const doc = new URL(req.url).pathname === "/.well-known/mcp-webhook-receiver.json" && o.receivers;
        return doc ? Response.json({ receivers: o.receivers }) : new Response(null, { status: 404 });
      }
      const r = { headers: Object.fromEntries(req.headers), body: await req.text() };
      got.push(r);
      const parsed = JSON.parse(r.body) as { type?: string; challenge?: string };
      if (parsed.type === "verification") return Response.json({ challenge: (o.echo ?? ((c) => c))(parsed.challenge!) });
      return new Response(null, { status: o.answer?.(r, got.length) ?? 204 });
    },
  });
  cleanups.add(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}/hooks/a`, got, events: () => got.filter((r) => !r.body.includes('"type"')) };
}

async function fixture(env: EventsFixtureEnv = {}): Promise<EventsFixture> {
  return startEventsFixture({ env: { MCP_FIXTURE_ALLOW_HTTP_CALLBACK: true, MCP_FIXTURE_WEBHOOK_RETRY_MS: "20,20", ...env }, cleanups });
}

let ids = 0;
async function rpc(fx: EventsFixture, method: string, params: Record<string, unknown>, principal: string | null = "alice") {
  const res = await fetch(fx.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(principal === null ? {} : { authorization: `Bearer ${principal}` }),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++ids, method, params }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  return (await res.json()) as { result?: Record<string, any>; error?: { code: number; message: string; data?: any } };
}

const subscribe = (fx: EventsFixture, url: string, secret = SECRET_1, extra: Record<string, unknown> = {}, principal: string | null = "alice") =>
  rpc(fx, "events/subscribe", { name: "ticket.updated", arguments: {}, delivery: { mode: "webhook", url, secret }, cursor: null, ...extra }, principal);

/** Throws unless some v1 entry verifies with `secret` (standardwebhooks, tolerance included). */
const verifyWith = (secret: string, r: Received) => new Webhook(secret).verify(r.body, r.headers);

describe("events/subscribe", () => {
  test("needs a bearer principal, a webhook type, an https-or-allowed URL and a valid whsec_ secret", async () => {
    const fx = await fixture({ MCP_FIXTURE_ERRORS: "sep" });
    const rx = receiver();
    expect((await subscribe(fx, rx.url, SECRET_1, {}, null)).error).toMatchObject({ code: -32024, data: { reason: "no principal" } });
    expect((await rpc(fx, "events/subscribe", { name: "build.finished", delivery: { mode: "webhook", url: rx.url, secret: SECRET_1 } })).error).toMatchObject({
      code: -32026,
      data: { feature: "deliveryMode", value: "webhook" },
    });
    expect((await subscribe(fx, rx.url, "whsec_AAAA")).error?.code).toBe(-32602);
    expect((await subscribe(fx, "ftp://127.0.0.1/x")).error?.code).toBe(-32602);
    expect(rx.got).toHaveLength(0);
    expect((await fx.state()).hooks).toHaveLength(0);
  });

  test("https is required unless http callbacks are switched on", async () => {
    const fx = await startEventsFixture({ cleanups });
    expect((await subscribe(fx, receiver().url)).error?.code).toBe(-32602);
  });

  test("the signed challenge arrives inside the call, before the answer, with the derived subscription id", async () => {
    const fx = await fixture();
    const rx = receiver();
    const answer = await subscribe(fx, rx.url, SECRET_1, { ttlMs: 60_000 });
    const id = String(answer.result!.id);
    // The receiver had the challenge before the subscribe answer came back.
    expect(rx.got).toHaveLength(1);
    const challenge = rx.got[0]!;
    expect(verifyWith(SECRET_1, challenge)).toMatchObject({ type: "verification" });
    expect(challenge.headers["webhook-id"]).toMatch(/^msg_verification_/);
    expect(id).toMatch(/^sub_[0-9a-f]{16}$/);
    expect(answer.result).toMatchObject({ cursor: "0", truncated: false });
    expect(answer.result!.deliveryStatus).toBeUndefined();
    expect(challenge.headers["x-mcp-subscription-id"]).toBe(id);
    const state = await fx.state();
    expect(state.verifications).toEqual([{ url: rx.url, via: "challenge", ok: true }]);
    expect(state.hooks).toMatchObject([{ id, principal: "alice", url: rx.url, refreshes: 0, ttl_granted_ms: 60_000, expired: false }]);
  });

  test("a wrong echo fails with challenge_failed and a dead port with connection_refused; nothing is kept", async () => {
    const fx = await fixture();
    const wrong = receiver({ echo: () => "not it" });
    expect((await subscribe(fx, wrong.url)).error).toMatchObject({ code: -32015, data: { reason: "challenge_failed" } });
    const dead = `http://127.0.0.1:${await freePort()}/hooks/x`;
    expect((await subscribe(fx, dead)).error).toMatchObject({ code: -32015, data: { reason: "connection_refused" } });
    expect((await fx.state()).hooks).toHaveLength(0);
  });

  test("with VERIFY_VIA_WELL_KNOWN a covering receiver document replaces the challenge; a prefix that does not cover falls back to it", async () => {
    const fx = await fixture({ MCP_FIXTURE_VERIFY_VIA_WELL_KNOWN: true });
    const rx = receiver({ receivers: ["/hooks/"] });
    expect((await subscribe(fx, rx.url)).result?.id).toEqual(expect.any(String));
    expect(rx.got).toHaveLength(0);
    const other = rx.url.replace("/hooks/a", "/hooksx/a");
    expect((await subscribe(fx, other)).result?.id).toEqual(expect.any(String));
    expect(rx.got).toHaveLength(1);
    expect((await fx.state()).verifications).toEqual([
      { url: rx.url, via: "well-known", ok: true },
      { url: other, via: "well-known", ok: false },
      { url: other, via: "challenge", ok: true },
    ]);
  });

  test("TTLs are capped and no-expiry is granted only when allowed", async () => {
    const capped = await fixture({ MCP_FIXTURE_MAX_TTL_MS: 2500 });
    const rx = receiver();
    expect((await capped.state()).hooks).toHaveLength(0);
    await subscribe(capped, rx.url, SECRET_1, { ttlMs: 60_000 });
    expect((await capped.state()).hooks[0]!.ttl_granted_ms).toBe(2500);
    expect((await subscribe(capped, `${rx.url}/b`, SECRET_1, { ttlMs: null })).result!.refreshBefore).toEqual(expect.any(String));
    const open = await fixture({ MCP_FIXTURE_ALLOW_NO_EXPIRY: true });
    expect((await subscribe(open, rx.url, SECRET_1, { ttlMs: null })).result!.refreshBefore).toBeNull();
  });
});

describe("deliveries", () => {
  test("after a refresh every delivery is dual-signed; sign_with_generation pins one secret", async () => {
    const fx = await fixture();
    const rx = receiver();
    const first = await subscribe(fx, rx.url, SECRET_1);
    const again = await subscribe(fx, rx.url, SECRET_2);
    expect(again.result!.id).toBe(first.result!.id);
    expect(again.result!.deliveryStatus).toMatchObject({ active: true });
    expect(rx.got).toHaveLength(1); // verified once per (principal, url)
    expect((await fx.state()).hooks).toMatchObject([{ refreshes: 1, secrets: [SECRET_1, SECRET_2] }]);

    const emitted = await fx.control<EmitAnswer>("emit", { event_id: "e-1" });
    expect(emitted.deliveries).toEqual([{ url: rx.url, status: 204 }]);
    const delivery = rx.events()[0]!;
    expect(delivery.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(verifyWith(SECRET_2, delivery)).toMatchObject({ eventId: "e-1", name: "ticket.updated", cursor: "1" });
    expect(verifyWith(SECRET_1, delivery)).toMatchObject({ eventId: "e-1" });
    expect(delivery.headers["webhook-id"]).toBe("e-1");
    expect(delivery.headers["x-mcp-subscription-id"]).toBe(first.result!.id);

    await fx.control("emit", { event_id: "e-2", sign_with_generation: 1 });
    const old = rx.events()[1]!;
    expect(verifyWith(SECRET_1, old)).toMatchObject({ eventId: "e-2" });
    expect(() => verifyWith(SECRET_2, old)).toThrow();
  });

  test("non-2xx is retried on the schedule with a fresh signature, 410 deletes the hook, redeliver resends the same bytes", async () => {
    const fx = await fixture();
    const rx = receiver({ answer: (r, n) => (r.body.includes("e-gone") ? 410 : n <= 3 ? 503 : 204) });
    await subscribe(fx, rx.url);
    expect((await fx.control<EmitAnswer>("emit", { event_id: "e-1" })).deliveries).toEqual([{ url: rx.url, status: 503 }]);
    await waitFor(async () => (await fx.state()).deliveries, { until: (d) => d.length === 3, timeoutMs: WAIT_MS, label: "three attempts" });
    expect((await fx.state()).deliveries.map((d) => [d.attempt, d.status, d.replay])).toEqual([[1, 503, false], [2, 503, false], [3, 204, false]]);
    const attempts = rx.events();
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    for (const a of attempts) verifyWith(SECRET_1, a);

    const again = await fx.control<EmitAnswer>("redeliver", { event_id: "e-1" });
    expect(again.deliveries).toEqual([{ url: rx.url, status: 204 }]);
    expect(rx.events().at(-1)!.body).toBe(attempts[0]!.body);
    expect((await fx.state()).deliveries.at(-1)).toMatchObject({ replay: true, status: 204 });

    expect((await fx.control<EmitAnswer>("emit", { event_id: "e-gone" })).deliveries).toEqual([{ url: rx.url, status: 410 }]);
    expect((await fx.state()).hooks).toHaveLength(0);
    expect((await fx.control<EmitAnswer>("emit", { event_id: "e-after" })).deliveries).toEqual([]);
  });

  test("tampered deliveries fail standardwebhooks verification in the way asked for", async () => {
    const fx = await fixture();
    const rx = receiver();
    await subscribe(fx, rx.url);
    for (const tamper of ["signature", "stale", "future", "absurd_timestamp"]) {
      await fx.control("emit", { tamper, no_retry: true });
      expect(() => verifyWith(SECRET_1, rx.events().at(-1)!)).toThrow();
    }
    expect(rx.events().at(-1)!.headers["webhook-timestamp"]).toBe("-9223372036854775808");
    await fx.control("emit", { tamper: "many_signatures" });
    const many = rx.events().at(-1)!;
    expect(many.headers["webhook-signature"]!.split(" ").length).toBeGreaterThanOrEqual(10);
    verifyWith(SECRET_1, many); // the valid entry sits past the 8th
    await fx.control("emit", { tamper: "no_subscription_id" });
    expect(rx.events().at(-1)!.headers["x-mcp-subscription-id"]).toBeUndefined();
  });

  test("a fresh subscribe with a cursor gets the backlog after it; terminate posts a signed envelope and drops the hook", async () => {
    const fx = await fixture();
    for (let i = 1; i <= 3; i++) await fx.control("emit", { event_id: `b-${i}` });
    const rx = receiver();
    await subscribe(fx, rx.url, SECRET_1, { cursor: "1" });
    await waitFor(() => rx.events().length, { until: (n) => n === 2, timeoutMs: WAIT_MS, label: "the backlog after cursor 1" });
    expect(rx.events().map((r) => (verifyWith(SECRET_1, r) as { eventId: string }).eventId)).toEqual(["b-2", "b-3"]);

    const ended = await fx.control<{ webhook_statuses: { status: number }[] }>("terminate", {});
    expect(ended.webhook_statuses).toEqual([{ url: rx.url, status: 204 } as never]);
    expect(verifyWith(SECRET_1, rx.got.at(-1)!)).toEqual({ type: "terminated", error: { code: -32012, message: "Forbidden", data: { reason: "Access revoked" } } });
    expect((await fx.state()).hooks).toHaveLength(0);
  });

  test("stall_body sends part of the promised body and holds the connection until the receiver answers", async () => {
    const fx = await fixture();
    let bytes = 0;
    let promised = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      development: false,
      idleTimeout: 30,
      async fetch(req) {
        if (req.headers.get("webhook-id")!.startsWith("msg_verification_")) {
          return Response.json({ challenge: ((await req.json()) as { challenge: string }).challenge });
        }
        const reader = req.body!.getReader();
        const first = await reader.read();
        promised = Number(req.headers.get("content-length"));
        bytes += first.value?.byteLength ?? 0;
        void reader.read().then((n) => (bytes += n.value?.byteLength ?? 0)).catch(() => {});
        await released;
        return new Response(null, { status: 408 });
      },
    });
    cleanups.add(() => server.stop(true));
    await subscribe(fx, `http://127.0.0.1:${server.port}/hooks/s`);
    const emitted = fx.control<EmitAnswer>("emit", { event_id: "e-stall", stall_body: true });
    await waitFor(() => bytes > 0, { timeoutMs: WAIT_MS, label: "the first body bytes" });
    expect(bytes).toBeLessThan(promised);
    release();
    expect((await emitted).deliveries).toEqual([{ url: `http://127.0.0.1:${server.port}/hooks/s`, status: 408 }]);
    expect(bytes).toBeLessThan(promised);
    expect((await fx.state()).deliveries.filter((d) => d.event_id === "e-stall")).toHaveLength(1);
  });
});

describe("JWKS and v1a", () => {
  const jwks = (fx: EventsFixture, signal = AbortSignal.timeout(WAIT_MS)) => fetch(new URL("/.well-known/mcp-webhook-jwks.json", fx.mcpUrl), { signal });

  test("without a seed the JWKS is 404 and deliveries carry no v1a", async () => {
    const fx = await fixture();
    expect((await jwks(fx)).status).toBe(404);
    const rx = receiver();
    await subscribe(fx, rx.url);
    await fx.control("emit", {});
    expect(rx.events()[0]!.headers["webhook-signature"]).not.toContain("v1a,");
  });

  test("with a seed the key is published and every delivery carries a v1a that verifies under it", async () => {
    const fx = await fixture({ MCP_FIXTURE_ED25519_SEED: SEED });
    const doc = (await (await jwks(fx)).json()) as { keys: { kty: string; crv: string; x: string; kid: string }[] };
    expect(doc.keys).toMatchObject([{ kty: "OKP", crv: "Ed25519", kid: "k1", alg: "EdDSA", use: "sig" }]);
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: doc.keys[0]!.x }, format: "jwk" });
    const v1a = (r: Received) => r.headers["webhook-signature"]!.split(" ").filter((e) => e.startsWith("v1a,")).map((e) => Buffer.from(e.slice(4), "base64"));
    const signed = (r: Received) => Buffer.from(`${r.headers["webhook-id"]}.${r.headers["webhook-timestamp"]}.${r.body}`);
    const rx = receiver();
    await subscribe(fx, rx.url);
    expect(edVerify(null, signed(rx.got[0]!), key, v1a(rx.got[0]!)[0]!)).toBe(true); // the challenge too
    await fx.control("emit", {});
    expect(edVerify(null, signed(rx.events()[0]!), key, v1a(rx.events()[0]!)[0]!)).toBe(true);
    await fx.control("emit", { tamper: "v1a" });
    expect(edVerify(null, signed(rx.events()[1]!), key, v1a(rx.events()[1]!)[0]!)).toBe(false);
    await fx.control("emit", { tamper: "no_v1a" });
    expect(v1a(rx.events()[2]!)).toHaveLength(0);
  });

  test("the control forces a status, withholds the document, or stalls after the headers", async () => {
    const fx = await fixture({ MCP_FIXTURE_ED25519_SEED: SEED });
    await fx.control("jwks", { status: 503 });
    expect((await jwks(fx)).status).toBe(503);
    await fx.control("jwks", { publish: false });
    expect((await jwks(fx)).status).toBe(404);
    await fx.control("jwks", { stall: true });
    const ac = new AbortController();
    const res = await jwks(fx, ac.signal);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('{"keys":[');
    const rest = reader.read();
    rest.catch(() => {});
    await waitFor(async () => (await fx.state()).jwks_stalled, { until: (n) => n === 1, timeoutMs: WAIT_MS, label: "one stalled JWKS answer" });
    ac.abort();
    await expect(rest).rejects.toThrow();
    await fx.control("jwks", {});
    expect((await jwks(fx)).status).toBe(200);
    expect((await fx.state()).jwks_requests).toBe(4);
  });
});

describe("events/unsubscribe and the cursorless type", () => {
  test("unsubscribe needs delivery.mode, removes the hook, answers NotFound for an unknown key, and is recorded", async () => {
    const fx = await fixture();
    const rx = receiver();
    await subscribe(fx, rx.url);
    expect((await rpc(fx, "events/unsubscribe", { name: "ticket.updated", arguments: {}, delivery: { url: rx.url } })).error?.code).toBe(-32602);
    const params = { name: "ticket.updated", arguments: {}, delivery: { mode: "webhook", url: rx.url } };
    expect((await rpc(fx, "events/unsubscribe", params)).result).toEqual({});
    expect((await rpc(fx, "events/unsubscribe", params)).error).toMatchObject({ code: -32011, data: { kind: "subscription" } });
    const state = await fx.state();
    expect(state.hooks).toHaveLength(0);
    expect(state.unsubscribes).toHaveLength(3);
    expect(state.unsubscribes[1]).toEqual(params);
    const idempotent = await fixture({ MCP_FIXTURE_UNSUBSCRIBE_IDEMPOTENT: true });
    expect((await rpc(idempotent, "events/unsubscribe", params)).result).toEqual({});
  });

  test("alert.raised is listed only when switched on, and its cursors are null", async () => {
    const plain = await fixture();
    expect(((await rpc(plain, "events/list", {})).result!.events as { name: string }[]).map((e) => e.name)).not.toContain("alert.raised");
    const fx = await fixture({ MCP_FIXTURE_CURSORLESS: true });
    const rx = receiver();
    const answer = await rpc(fx, "events/subscribe", { name: "alert.raised", arguments: {}, delivery: { mode: "webhook", url: rx.url, secret: SECRET_1 }, cursor: null });
    expect(answer.result).toMatchObject({ cursor: null });
    await fx.control("emit", { name: "alert.raised", data: { alert_id: "a-1" } });
    expect(verifyWith(SECRET_1, rx.events()[0]!)).toMatchObject({ name: "alert.raised", cursor: null });
  });
});
