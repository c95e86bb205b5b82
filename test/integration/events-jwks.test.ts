/**
 * The v1a key fetch against a real HTTP server (Bun.serve on port 0; events design notes §4.6):
 * what counts as keys, as "not published" and as a failure; one deadline over headers and body,
 * after which the server sees its connection closed; and the fail-closed policy of
 * `ensureServerKeys` (3 attempts only while no key is known, keys only grow).
 */
import { afterEach, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { JWKS_PATH, JwksUnavailable, ensureServerKeys, fetchJwks } from "../../src/events/webhook/jwks.ts";
import { ServerKeyStore } from "../../src/events/webhook/server-keys.ts";
import { WEBHOOK_LIMITS } from "../../src/events/webhook/types.ts";
import { waitFor } from "../helpers/wait.ts";

type Answer = (request: Request) => Response;

interface JwksServer {
  origin: string;
  paths: string[];
  answer: Answer;
  cancelledBodies: number;
  server: ReturnType<typeof Bun.serve>;
}

const servers: JwksServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.server.stop(true);
});

function startJwksServer(answer: Answer): JwksServer {
  const state = { paths: [] as string[], answer, cancelledBodies: 0 } as JwksServer;
  state.server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 30,
    maxRequestBodySize: 1024,
    fetch(request) {
      state.paths.push(new URL(request.url).pathname);
      return state.answer(request);
    },
  });
  state.origin = `http://127.0.0.1:${state.server.port}`;
  servers.push(state);
  return state;
}

function ed25519X(): string {
  const jwk = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
  if (typeof jwk.x !== "string") throw new Error("no x in the generated JWK");
  return jwk.x;
}

const json = (body: unknown, status = 200) => Response.json(body, { status });

/** A body that sends its first bytes, then nothing more; counts the server-side cancel. */
function stallingBody(s: JwksServer): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"keys":['));
    },
    cancel() {
      s.cancelledBodies += 1;
    },
  });
  return new Response(body, { headers: { "content-type": "application/json" } });
}

const noSleep = async () => {};

test("the Ed25519 keys of a published set are found at the well-known path; other keys are ignored", async () => {
  const [a, b] = [ed25519X(), ed25519X()];
  const s = startJwksServer(() =>
    json({
      keys: [
        { kty: "OKP", crv: "Ed25519", x: a, kid: "k1", use: "sig", alg: "EdDSA" },
        { kty: "OKP", crv: "X25519", x: ed25519X() },
        { kty: "RSA", n: "AQAB", e: "AQAB" },
        { kty: "OKP", crv: "Ed25519", x: 42 },
        "not a key",
        { kty: "OKP", crv: "Ed25519", x: b },
      ],
    }),
  );
  expect(await fetchJwks(s.origin, { timeoutMs: 5000 })).toEqual({ kind: "keys", xs: [a, b] });
  expect(s.paths).toEqual([JWKS_PATH]);
});

test("an empty key list is a (keyless) answer, not a failure", async () => {
  const s = startJwksServer(() => json({ keys: [] }));
  expect(await fetchJwks(s.origin, { timeoutMs: 5000 })).toEqual({ kind: "keys", xs: [] });
});

for (const status of [404, 410]) {
  test(`HTTP ${status} means the server does not publish keys`, async () => {
    const s = startJwksServer(() => new Response("no", { status }));
    expect(await fetchJwks(s.origin, { timeoutMs: 5000 })).toEqual({ kind: "not_published" });
  });
}

const failures: { what: string; answer: (s: JwksServer) => Answer; reason: RegExp }[] = [
  { what: "HTTP 500", answer: () => () => new Response("down", { status: 500 }), reason: /HTTP 500/ },
  { what: "HTTP 403", answer: () => () => new Response("no", { status: 403 }), reason: /HTTP 403/ },
  {
    what: "a redirect (even to a published set)",
    answer: (s) => (r) => (new URL(r.url).pathname === JWKS_PATH ? Response.redirect(`${s.origin}/elsewhere`, 302) : json({ keys: [] })),
    reason: /redirect/,
  },
  { what: "invalid JSON", answer: () => () => new Response('{"keys": [', { headers: { "content-type": "application/json" } }), reason: /not JSON/ },
  { what: "JSON that is not a key set", answer: () => () => json({ keys: "k1" }), reason: /not a JWK set/ },
  {
    what: "a body over 64 KiB",
    answer: () => () => json({ keys: [], padding: "x".repeat(WEBHOOK_LIMITS.jwksBytes) }),
    reason: /larger than 64 KiB/,
  },
  {
    what: "a body over 64 KiB sent without a length",
    answer: () => () => new Response(chunked("x".repeat(WEBHOOK_LIMITS.jwksBytes + 10))),
    reason: /larger than 64 KiB/,
  },
];

function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 4096));
      at += 4096;
    },
  });
}

for (const f of failures) {
  test(`${f.what} is a failure`, async () => {
    const s = startJwksServer(() => new Response());
    s.answer = f.answer(s);
    const result = await fetchJwks(s.origin, { timeoutMs: 5000 });
    expect(result.kind).toBe("failed");
    if (result.kind === "failed") expect(result.reason).toMatch(f.reason);
    expect(s.paths).toEqual([JWKS_PATH]);
  });
}

test("an unreachable server is a failure", async () => {
  const s = startJwksServer(() => json({ keys: [] }));
  const origin = s.origin;
  s.server.stop(true);
  const result = await fetchJwks(origin, { timeoutMs: 5000 });
  expect(result.kind).toBe("failed");
});

test("a body that stalls after the headers is timed out, and the server sees the connection closed", async () => {
  const s = startJwksServer(() => new Response());
  s.answer = () => stallingBody(s);
  const result = await fetchJwks(s.origin, { timeoutMs: 300 });
  expect(result).toEqual({ kind: "failed", reason: "timed out" });
  await waitFor(() => s.cancelledBodies === 1 && s.server.pendingRequests === 0, {
    timeoutMs: 5000,
    label: "the server to see the stalled response dropped",
    show: () => ({ cancelled: s.cancelledBodies, pending: s.server.pendingRequests }),
  });
});

test("a caller's abort ends a stalled fetch as cancelled", async () => {
  const s = startJwksServer(() => new Response());
  s.answer = () => stallingBody(s);
  const caller = new AbortController();
  const pending = fetchJwks(s.origin, { timeoutMs: 60_000, signal: caller.signal });
  await waitFor(() => s.paths.length === 1, { timeoutMs: 5000, label: "the request to reach the server" });
  caller.abort();
  expect(await pending).toEqual({ kind: "failed", reason: "cancelled" });
  await waitFor(() => s.server.pendingRequests === 0, { timeoutMs: 5000, label: "the server to see the request dropped" });
});

test("with no key known, a failing fetch is tried 3 times (500 ms, then 1 s apart) and then refuses", async () => {
  const s = startJwksServer(() => new Response("down", { status: 503 }));
  const sleeps: number[] = [];
  const keys = new ServerKeyStore();
  const refused = ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: async (ms) => void sleeps.push(ms) });
  await expect(refused).rejects.toBeInstanceOf(JwksUnavailable);
  await expect(refused).rejects.toThrow(/refusing to subscribe without knowing whether to enforce/);
  expect(s.paths.length).toBe(3);
  expect(sleeps).toEqual([500, 1000]);
  expect(keys.keys(s.origin)).toEqual([]);
});

test("with no key known, a stalled body on every attempt refuses within the deadlines", async () => {
  const s = startJwksServer(() => new Response());
  s.answer = () => stallingBody(s);
  await expect(ensureServerKeys(s.origin, new ServerKeyStore(), { timeoutMs: 300, sleep: noSleep })).rejects.toThrow(/timed out; 3 attempts/);
  await waitFor(() => s.cancelledBodies === 3 && s.server.pendingRequests === 0, { timeoutMs: 5000, label: "every stalled response dropped" });
});

test("a failure then keys: the retry finds them", async () => {
  const x = ed25519X();
  let calls = 0;
  const s = startJwksServer(() => (++calls === 1 ? new Response("down", { status: 500 }) : json({ keys: [{ kty: "OKP", crv: "Ed25519", x }] })));
  const keys = new ServerKeyStore();
  await ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: noSleep });
  expect(s.paths.length).toBe(2);
  expect(keys.exported()).toEqual({ [s.origin]: [x] });
});

test("with no key known, a clean 404 is accepted at once: the server does not sign", async () => {
  const s = startJwksServer(() => new Response("no", { status: 404 }));
  const keys = new ServerKeyStore();
  await ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: noSleep });
  expect(s.paths.length).toBe(1);
  expect(keys.keys(s.origin)).toEqual([]);
});

test("once a key is known, a failing or withdrawn set costs one attempt, no refusal, and never removes the key", async () => {
  const [old, rotated] = [ed25519X(), ed25519X()];
  const s = startJwksServer(() => json({ keys: [{ kty: "OKP", crv: "Ed25519", x: old }] }));
  const keys = new ServerKeyStore();
  await ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: noSleep });
  expect(keys.exported()).toEqual({ [s.origin]: [old] });

  for (const answer of [() => new Response("down", { status: 500 }), () => new Response("gone", { status: 404 }), () => json({ keys: [] })]) {
    s.answer = answer;
    const before = s.paths.length;
    await ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: noSleep });
    expect(s.paths.length).toBe(before + 1);
    expect(keys.exported()).toEqual({ [s.origin]: [old] });
  }

  // A rotation publishes the new key beside the old one: both are known from then on.
  s.answer = () => json({ keys: [{ kty: "OKP", crv: "Ed25519", x: rotated }] });
  await ensureServerKeys(s.origin, keys, { timeoutMs: 5000, sleep: noSleep });
  expect(keys.exported()).toEqual({ [s.origin]: [old, rotated] });
});

test("an abort between attempts ends them with the abort, not a subscribe on unknown terms", async () => {
  const s = startJwksServer(() => new Response("down", { status: 500 }));
  const caller = new AbortController();
  const stopped = ensureServerKeys(s.origin, new ServerKeyStore(), {
    timeoutMs: 5000,
    signal: caller.signal,
    sleep: async () => caller.abort(new Error("stopping")),
  });
  await expect(stopped).rejects.toThrow("stopping");
  expect(s.paths.length).toBe(1);
});
