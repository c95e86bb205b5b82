/**
 * The webhook receiver (src/serve/daemon/webhook-receiver.ts) on a real Bun.serve listener set up
 * like the daemon's, with the real route table and key store and a fake subscription route,
 * deliveries signed by the independent `standardwebhooks` library: every check in its order
 * (design notes §4.2–§4.3), the body deadline over raw TCP, rotation, v1a, the pending stage, the
 * receiver document and the counters.
 */
import { afterEach, expect, test } from "bun:test";
import { createPublicKey, generateKeyPairSync, sign as edSign } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { WebhookRouteTable } from "../../src/events/webhook/routes.ts";
import { ServerKeyStore } from "../../src/events/webhook/server-keys.ts";
import type { RouteStage, WebhookAnswer, WebhookBody, WebhookRoute } from "../../src/events/webhook/types.ts";
import { LISTENER_BODY_CAP } from "../../src/serve/daemon/http.ts";
import { createWebhookReceiver } from "../../src/serve/daemon/webhook-receiver.ts";
import { Cleanups } from "../helpers/serve.ts";

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const TOKEN = "0123456789abcdef0123456789abcdef";
const OTHER = "fedcba9876543210fedcba9876543210";
const ORIGIN = "http://mcp.example.test:8123";
const secret = () => `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;

class FakeRoute implements WebhookRoute {
  readonly token: string;
  subscriptionId: string | null = null;
  origin: string | null = null;
  stage: RouteStage = "active";
  current = secret();
  previous: string | null = null;
  answer: WebhookAnswer = { status: 200 };
  readonly delivered: WebhookBody[] = [];
  constructor(token = TOKEN) {
    this.token = token;
  }
  secrets(): readonly string[] {
    return this.previous === null ? [this.current] : [this.current, this.previous];
  }
  async deliver(body: WebhookBody): Promise<WebhookAnswer> {
    this.delivered.push(body);
    if (body.kind === "verification") return { status: 200, body: { challenge: body.challenge } };
    return this.answer;
  }
}

function startReceiver(o: { callbackUrl?: string; bodyTimeoutMs?: number; idleTimeout?: number } = {}) {
  const routes = new WebhookRouteTable();
  const keys = new ServerKeyStore();
  const logged: string[] = [];
  const receiver = createWebhookReceiver({
    routes,
    keys,
    callbackUrl: new URL(o.callbackUrl ?? "http://127.0.0.1/"),
    bodyTimeoutMs: o.bodyTimeoutMs ?? 10_000,
    log: (line) => logged.push(line),
  });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    maxRequestBodySize: LISTENER_BODY_CAP,
    idleTimeout: o.idleTimeout ?? 30,
    fetch: (req, srv) => receiver.handle(req, new URL(req.url), srv) ?? Response.json({ error: { code: "not_found" } }, { status: 404 }),
  });
  cleanups.add(() => server.stop(true));
  const prefix = `${new URL(o.callbackUrl ?? "http://127.0.0.1/").pathname.replace(/\/$/, "")}/_vigil/mcp-events/`;
  const base = `http://127.0.0.1:${server.port}`;
  const route = new FakeRoute();
  routes.register(route);
  return { routes, keys, route, base, prefix, port: server.port!, logged, url: (token = TOKEN) => `${base}${prefix}${token}` };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface Signed {
  id?: string;
  timestamp?: string;
  secrets?: readonly string[];
  /** Extra entries before the real signatures. */
  padding?: number;
  v1a?: { privateKey: Parameters<typeof edSign>[2] } | null;
  subscriptionId?: string | null;
  omit?: "webhook-id" | "webhook-timestamp" | "webhook-signature";
}

function signedHeaders(body: string, s: Signed & { secrets: readonly string[] }): Record<string, string> {
  const id = s.id ?? `evt_${crypto.randomUUID()}`;
  const timestamp = s.timestamp ?? String(nowSeconds());
  const entries: string[] = [];
  for (let i = 0; i < (s.padding ?? 0); i++) entries.push(`v1,${Buffer.alloc(32, i).toString("base64")}`);
  for (const sec of s.secrets) {
    const seconds = Number(timestamp);
    entries.push(/^-?\d+$/.test(timestamp) && Math.abs(seconds) < 8e12 ? new Webhook(sec).sign(id, new Date(seconds * 1000), body) : "v1,AAAA");
  }
  if (s.v1a) entries.push(`v1a,${edSign(null, Buffer.from(`${id}.${timestamp}.${body}`), s.v1a.privateKey).toString("base64")}`);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": entries.join(" "),
  };
  if (s.subscriptionId != null) headers["x-mcp-subscription-id"] = s.subscriptionId;
  if (s.omit !== undefined) delete headers[s.omit];
  return headers;
}

const EVENT = JSON.stringify({ eventId: "e1", name: "ticket.updated", timestamp: "2026-01-01T00:00:00Z", data: { n: 1 }, cursor: "c1" });

async function post(url: string, route: FakeRoute, s: Signed = {}, body = EVENT) {
  const headers = signedHeaders(body, { ...s, secrets: s.secrets ?? route.secrets(), subscriptionId: s.subscriptionId === undefined ? route.subscriptionId : s.subscriptionId });
  const res = await fetch(url, { method: "POST", headers, body });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/**
 * One raw HTTP/1.1 exchange: sends `head + body`, then resolves with the answer's status and head —
 * as soon as the head arrived (`until: "head"`, the socket is then ended), or once the server closed
 * the connection (`until: "closed"`).
 */
function rawSend(port: number, head: string, body: string, until: "head" | "closed"): Promise<{ status: number; head: string }> {
  const parse = (got: string) => ({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0), head: got.split("\r\n\r\n")[0]! });
  return new Promise((resolve, reject) => {
    let got = "";
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(socket) {
          socket.write(head + body);
        },
        data(socket, data) {
          got += data.toString("latin1");
          if (until !== "head" || !got.includes("\r\n\r\n")) return;
          resolve(parse(got));
          socket.end();
        },
        close() {
          // After an answer by head this is a no-op (a settled promise stays settled).
          if (until === "closed") resolve(parse(got));
          else reject(new Error(`closed without an answer: ${JSON.stringify(got)}`));
        },
        error(_socket, e) {
          reject(e);
        },
      },
    });
  });
}

const rawExchange = (port: number, head: string, body = "") => rawSend(port, head, body, "head");
const rawUntilClosed = (port: number, head: string, body: string) => rawSend(port, head, body, "closed");

const rawHead = (path: string, lines: string[]) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`;

test("a method other than POST is 405 with Allow: POST, before the token is judged", async () => {
  const r = startReceiver();
  for (const token of [TOKEN, OTHER, "nope"]) {
    const res = await fetch(r.url(token), { method: "GET" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  }
  expect(r.routes.counters.method).toBe(3);
});

test("an unknown or malformed token is 410 with nothing but a stable code", async () => {
  const r = startReceiver();
  for (const token of [OTHER, TOKEN.toUpperCase(), "abc", `${TOKEN}/x`]) {
    const res = await post(r.url(token), r.route);
    expect(res.status).toBe(410);
    expect(res.body).toEqual({ error: { code: "gone" } });
  }
  expect(r.route.delivered).toEqual([]);
  expect(r.routes.counters.unknown_token).toBe(4);
});

test("a reserved token is 503 with Retry-After until its route registers", async () => {
  const r = startReceiver();
  r.routes.reserve(OTHER);
  const held = await post(r.url(OTHER), r.route);
  expect(held.status).toBe(503);
  expect(held.headers.get("retry-after")).toBe("5");
  expect(held.body).toEqual({ error: { code: "retry" } });
  const back = new FakeRoute(OTHER);
  r.routes.register(back);
  expect((await post(r.url(OTHER), back)).status).toBe(200);
  expect(back.delivered).toHaveLength(1);
});

test("while restoring every unknown token is 503; once restored it is 410 again", async () => {
  const r = startReceiver();
  r.routes.beginRestoring();
  expect((await post(r.url(OTHER), r.route)).status).toBe(503);
  r.routes.endRestoring();
  expect((await post(r.url(OTHER), r.route)).status).toBe(410);
  expect(r.routes.counters.held).toBe(1);
});

test("a chunked body (no Content-Length) is 411", async () => {
  const r = startReceiver();
  const answer = await rawExchange(r.port, rawHead(`${r.prefix}${TOKEN}`, ["Content-Type: application/json", "Transfer-Encoding: chunked"]), "2\r\n{}\r\n0\r\n\r\n");
  expect(answer.status).toBe(411);
  expect(r.route.delivered).toEqual([]);
});

test("oversized and unknown deliveries are answered before any body byte is sent", async () => {
  const r = startReceiver();
  const unknown = await rawExchange(r.port, rawHead(`${r.prefix}${OTHER}`, ["Content-Type: application/json", "Content-Length: 4000000"]));
  expect(unknown.status).toBe(410);
  const oversized = await rawExchange(r.port, rawHead(`${r.prefix}${TOKEN}`, ["Content-Type: application/json", "Content-Length: 2000000"]));
  expect(oversized.status).toBe(413);
  expect(r.route.delivered).toEqual([]);
  expect(r.routes.counters.too_large).toBe(1);
});

test("a body that stalls gets 408 at the body deadline, and nothing of it reaches the route", async () => {
  const r = startReceiver({ bodyTimeoutMs: 300 });
  const headers = signedHeaders(EVENT, { secrets: r.route.secrets() });
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  const answer = await rawExchange(r.port, rawHead(`${r.prefix}${TOKEN}`, [...lines, `Content-Length: ${EVENT.length}`]), EVENT.slice(0, 10));
  expect(answer.status).toBe(408);
  expect(r.route.delivered).toEqual([]);
  expect(r.routes.counters.body_timeout).toBe(1);
});

test("a stalled body's 408 ends its connection: the answer says so and the server closes it", async () => {
  const r = startReceiver({ bodyTimeoutMs: 300, idleTimeout: 120 });
  const headers = signedHeaders(EVENT, { secrets: r.route.secrets() });
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  const ended = await rawUntilClosed(r.port, rawHead(`${r.prefix}${TOKEN}`, [...lines, `Content-Length: ${EVENT.length}`]), EVENT.slice(0, 10));
  expect(ended.status).toBe(408);
  expect(ended.head).toMatch(/^connection: close$/im);
  expect(r.route.delivered).toEqual([]);
});

// Bun closes a connection idle past its idleTimeout (checked on a 4 s tick); the daemon's is 30 s
// and VIGIL_EVENTS_BODY_TIMEOUT_MS may be 10 minutes, so the receiver extends it per request.
test("a body deadline longer than the listener's idle timeout is still answered 408, not cut off", async () => {
  const r = startReceiver({ bodyTimeoutMs: 6000, idleTimeout: 1 });
  const answer = await rawExchange(r.port, rawHead(`${r.prefix}${TOKEN}`, [`Content-Length: ${EVENT.length}`]), EVENT.slice(0, 10));
  expect(answer.status).toBe(408);
});

test("a missing webhook header is 400", async () => {
  const r = startReceiver();
  for (const omit of ["webhook-id", "webhook-timestamp", "webhook-signature"] as const) {
    const res = await post(r.url(), r.route, { omit });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: "bad_request" } });
  }
  expect(r.routes.counters.headers).toBe(3);
  expect(r.route.delivered).toEqual([]);
});

test("a stale, future, absurd or non-integer timestamp is 400, and a good delivery still lands after them", async () => {
  const r = startReceiver();
  for (const timestamp of [String(nowSeconds() - 400), String(nowSeconds() + 400), "-9223372036854775808", "99999999999999999999999", "12.5"]) {
    expect((await post(r.url(), r.route, { timestamp })).status).toBe(400);
  }
  expect(r.routes.counters.timestamp).toBe(5);
  expect((await post(r.url(), r.route)).status).toBe(200);
  expect(r.route.delivered).toHaveLength(1);
});

test("a wrong secret is 401; only the first 8 signature entries are examined", async () => {
  const r = startReceiver();
  const wrong = await post(r.url(), r.route, { secrets: [secret()] });
  expect(wrong.status).toBe(401);
  expect(wrong.body).toEqual({ error: { code: "unauthorized" } });
  expect((await post(r.url(), r.route, { padding: 7 })).status).toBe(200);
  expect((await post(r.url(), r.route, { padding: 8 })).status).toBe(401);
  expect(r.routes.counters.signature).toBe(2);
});

test("rotation: the current and the previous secret verify, the one before them does not", async () => {
  const r = startReceiver();
  const twoBack = r.route.current;
  r.route.previous = twoBack;
  r.route.current = secret();
  const previous = r.route.current;
  r.route.previous = previous;
  r.route.current = secret();
  expect((await post(r.url(), r.route, { secrets: [r.route.current] })).status).toBe(200);
  expect((await post(r.url(), r.route, { secrets: [previous] })).status).toBe(200);
  expect((await post(r.url(), r.route, { secrets: [twoBack] })).status).toBe(401);
});

test("the subscription id is not required before it is known; once known it must match", async () => {
  const r = startReceiver();
  expect((await post(r.url(), r.route, { subscriptionId: null })).status).toBe(200);
  r.route.subscriptionId = "sub_1";
  expect((await post(r.url(), r.route, { subscriptionId: null })).status).toBe(401);
  expect((await post(r.url(), r.route, { subscriptionId: "sub_2" })).status).toBe(401);
  expect((await post(r.url(), r.route, { subscriptionId: "sub_1" })).status).toBe(200);
  expect(r.routes.counters.subscription_id).toBe(2);
  expect(r.route.delivered).toHaveLength(2);
});

test("v1a is required once keys are known for the route's origin", async () => {
  const r = startReceiver();
  const { privateKey } = generateKeyPairSync("ed25519");
  const x = (createPublicKey(privateKey).export({ format: "jwk" }) as { x: string }).x;
  r.keys.add(ORIGIN, [x]);
  // A stdio route (no origin) is not held to any origin's keys.
  expect((await post(r.url(), r.route)).status).toBe(200);
  r.route.origin = ORIGIN;
  expect((await post(r.url(), r.route)).status).toBe(401);
  const other = generateKeyPairSync("ed25519").privateKey;
  expect((await post(r.url(), r.route, { v1a: { privateKey: other } })).status).toBe(401);
  expect((await post(r.url(), r.route, { v1a: { privateKey } })).status).toBe(200);
  expect(r.routes.counters.identity).toBe(2);
});

test("a body that is not a JSON object is 400", async () => {
  const r = startReceiver();
  for (const body of ["not json", "[1,2]", '"x"']) expect((await post(r.url(), r.route, {}, body)).status).toBe(400);
  expect(r.routes.counters.not_json).toBe(3);
  expect(r.route.delivered).toEqual([]);
});

test("a pending route answers its verification, but an event gets 503", async () => {
  const r = startReceiver();
  r.route.stage = "pending";
  const challenge = await post(r.url(), r.route, { id: "msg_verification_1" }, JSON.stringify({ type: "verification", challenge: "nonce-1" }));
  expect(challenge.status).toBe(200);
  expect(challenge.body).toEqual({ challenge: "nonce-1" });
  const early = await post(r.url(), r.route);
  expect(early.status).toBe(503);
  expect(early.headers.get("retry-after")).toBe("5");
  expect(r.route.delivered.map((b) => b.kind)).toEqual(["verification"]);
  expect(r.routes.counters.not_routable).toBe(1);
  expect(r.routes.counters.verifications).toBe(1);
});

test("the route's answer is passed through; a 503 from it is counted as not stored", async () => {
  const r = startReceiver();
  r.route.answer = { status: 202, body: { ok: true } };
  const ok = await post(r.url(), r.route);
  expect(ok.status).toBe(202);
  expect(ok.body).toEqual({ ok: true });
  r.route.answer = { status: 503 };
  const full = await post(r.url(), r.route);
  expect(full.status).toBe(503);
  expect(full.body).toEqual({});
  expect(r.routes.counters.accepted).toBe(1);
  expect(r.routes.counters.not_stored).toBe(1);
  expect(r.route.delivered.map((b) => b.kind)).toEqual(["event", "event"]);
});

test("a callback path prefixes the receiver; the document at the origin lists it", async () => {
  const r = startReceiver({ callbackUrl: "https://edge.example.com/agent/" });
  expect(r.prefix).toBe("/agent/_vigil/mcp-events/");
  expect((await post(r.url(), r.route)).status).toBe(200);
  expect((await post(`${r.base}/_vigil/mcp-events/${TOKEN}`, r.route)).status).toBe(404);
  const doc = await fetch(`${r.base}/.well-known/mcp-webhook-receiver.json`);
  expect(doc.status).toBe(200);
  expect(doc.headers.get("content-type")).toBe("application/json");
  expect(doc.headers.get("cache-control")).toBe("max-age=300");
  expect(await doc.json()).toEqual({ receivers: ["/agent/_vigil/mcp-events/"] });
  const head = await fetch(`${r.base}/.well-known/mcp-webhook-receiver.json`, { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(await head.text()).toBe("");
  expect((await fetch(`${r.base}/.well-known/mcp-webhook-receiver.json`, { method: "POST" })).status).toBe(405);
});

test("a bare-origin callback lists the root receiver path", async () => {
  const r = startReceiver({ callbackUrl: "https://edge.example.com" });
  const doc = await fetch(`${r.base}/.well-known/mcp-webhook-receiver.json`);
  expect(await doc.json()).toEqual({ receivers: ["/_vigil/mcp-events/"] });
});

test("refusals are logged at most once a minute per kind, with counts and no secrets", async () => {
  const r = startReceiver();
  const wrong = secret();
  for (let i = 0; i < 3; i++) expect((await post(r.url(), r.route, { secrets: [wrong] })).status).toBe(401);
  expect(r.logged).toEqual(["serve: webhook receiver refused 1 delivery (signature)"]);
  expect(r.logged.join("\n")).not.toContain("whsec_");
  expect(r.routes.counters.signature).toBe(3);
});
