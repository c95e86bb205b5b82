// The receiver's checks in the daemon, end to end (serve.md §6 item 4; design notes §4.2–§4.3, §8
// "receiver" suite): dist/vigil listening with --mcp-events-callback-url, the events fixture
// subscribed by webhook and signing with `standardwebhooks`, deliberate faults from its control
// API. Every refused delivery leaves nothing behind, and a good one still lands after it. Every
// wait is bounded; no timing is asserted.
import { expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { EVENTS_SESSION, isEventFrame, pendingOnDisk } from "../helpers/events-serve.ts";
import { type Frame, SseReader, command } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Subscribed, TICKETS, emitOnce, subscribedStack } from "../helpers/webhook-subscribed.ts";
import type { WebhookStack } from "../helpers/webhook-serve.ts";

const cleanups = e2eSuite();





const framesOf = (sse: SseReader, eventId: string): Frame[] => sse.frames.filter(isEventFrame(eventId));

/** A good delivery after the refused ones still lands; none of the refused ones left a frame or a pending entry. */
async function goodStillLands(s: Subscribed, refused: string[]): Promise<void> {
  const good = await emitOnce(s.stack);
  expect(good.status).toBe(200);
  await s.sse.until(isEventFrame(good.eventId));
  const pending = pendingOnDisk(s.stack.env.stateDir, EVENTS_SESSION).map((p) => p.event.eventId);
  for (const id of refused) {
    expect(framesOf(s.sse, id)).toEqual([]);
    expect(pending).not.toContain(id);
  }
  // The server-side subscription is unharmed: nothing was answered 410.
  expect((await s.stack.fixture.state()).hooks.map((h) => h.id)).toEqual([s.hook.id]);
}

async function webhookHealth(stack: WebhookStack): Promise<{ accepted: number; refused: Record<string, number> }> {
  const res = await fetch(`${stack.base}/v1/health`, { signal: AbortSignal.timeout(10_000) });
  return ((await res.json()) as { webhook: { accepted: number; refused: Record<string, number> } }).webhook;
}

/** One raw HTTP/1.1 request head and no body; resolves with the answer's status once its head arrived. */
function headOnly(port: number, path: string, contentLength: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let got = "";
    const timer = setTimeout(() => reject(new Error(`no answer to the head alone: ${JSON.stringify(got)}`)), 10_000);
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(socket) {
          socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`);
        },
        data(socket, data) {
          got += data.toString("latin1");
          if (!got.includes("\r\n\r\n")) return;
          clearTimeout(timer);
          resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0));
          socket.end();
        },
        close() {
          clearTimeout(timer);
          reject(new Error(`closed without an answer: ${JSON.stringify(got)}`));
        },
        error(_socket, e) {
          reject(e);
        },
      },
    });
  });
}

test("a future-dated, stale or absurd timestamp is refused (400) without harm: a later good delivery still lands", async () => {
  const s = await subscribedStack(cleanups);
  const refused: string[] = [];
  for (const tamper of ["future", "stale", "absurd_timestamp"]) {
    const attempt = await emitOnce(s.stack, { tamper });
    expect(attempt.status).toBe(400);
    refused.push(attempt.eventId);
  }
  await goodStillLands(s, refused);
  expect((await webhookHealth(s.stack)).refused.timestamp).toBe(3);
});

test("signature entries past the first 8 are ignored", async () => {
  const s = await subscribedStack(cleanups);
  const past = await emitOnce(s.stack, { tamper: "many_signatures" });
  expect(past.status).toBe(401);
  // A valid entry at position 8 is still examined.
  const secret = (await s.stack.fixture.state()).hooks[0]!.secrets.at(-1)!;
  const eventId = "within-the-cap";
  const bogus = Array.from({ length: 7 }, (_, i) => `v1,${Buffer.alloc(32, i + 1).toString("base64")}`);
  const within = await s.stack.postSigned(
    s.hook.url,
    { eventId, name: TICKETS, timestamp: new Date().toISOString(), data: { n: 1 } },
    { secret, extraSignatures: bogus, prependSignatures: true, headers: { "X-MCP-Subscription-Id": s.hook.id } },
  );
  expect(within.status).toBe(200);
  await s.sse.until(isEventFrame(eventId));
  await goodStillLands(s, [past.eventId]);
});

test("once the subscription id is known, a delivery without it is refused (401)", async () => {
  const s = await subscribedStack(cleanups);
  const missing = await emitOnce(s.stack, { tamper: "no_subscription_id" });
  expect(missing.status).toBe(401);
  await goodStillLands(s, [missing.eventId]);
  expect((await webhookHealth(s.stack)).refused.subscription_id).toBe(1);
});

test("a body that never finishes gets 408 and leaves nothing behind", async () => {
  const s = await subscribedStack(cleanups, { knobs: { VIGIL_EVENTS_BODY_TIMEOUT_MS: "500" } });
  const stalled = await emitOnce(s.stack, { stall_body: true });
  expect(stalled.status).toBe(408);
  await goodStillLands(s, [stalled.eventId]);
  expect((await webhookHealth(s.stack)).refused.body_timeout).toBe(1);
});

test("unknown and oversized deliveries are answered before any body byte is sent", async () => {
  const s = await subscribedStack(cleanups);
  const livePath = new URL(s.hook.url).pathname;
  const unknownPath = livePath.replace(/[0-9a-f]{32}$/, "f".repeat(32));
  expect(await headOnly(s.stack.port, unknownPath, 4_000_000)).toBe(410);
  expect(await headOnly(s.stack.port, livePath, 2_000_000)).toBe(413);
  await goodStillLands(s, []);
  const counted = await webhookHealth(s.stack);
  expect(counted.refused.unknown_token).toBe(1);
  expect(counted.refused.too_large).toBe(1);
});

test("with a callback path, deliveries land under it and the receiver document at the origin lists it", async () => {
  const s = await subscribedStack(cleanups, { callbackPath: "/agent" });
  expect(new URL(s.hook.url).pathname).toMatch(/^\/agent\/_vigil\/mcp-events\/[0-9a-f]{32}$/);
  const doc = await fetch(`${s.stack.base}/.well-known/mcp-webhook-receiver.json`, { signal: AbortSignal.timeout(10_000) });
  expect(doc.status).toBe(200);
  expect(doc.headers.get("cache-control")).toBe("max-age=300");
  expect(await doc.json()).toEqual({ receivers: ["/agent/_vigil/mcp-events/"] });
  await goodStillLands(s, []);
});

/** vigil's count of confirmed refreshes of the ticket subscription (mcp_events_list). */
async function vigilRefreshes(stack: WebhookStack, id: string): Promise<number> {
  const list = await command(stack.daemon, EVENTS_SESSION, { type: "mcp_events_list", id });
  const sub = (list.body.data as { subscriptions: { name: string; refreshes?: number }[] }).subscriptions.find((x) => x.name === TICKETS);
  return sub?.refreshes ?? -1;
}

test("rotation accepts exactly the current and the previous secret", async () => {
  // A short grant: vigil refreshes (and rotates its secret) every couple of seconds.
  const s = await subscribedStack(cleanups, { fixtureEnv: { MCP_FIXTURE_MAX_TTL_MS: 3000 } });
  let calls = 0;
  for (let round = 0; round < 5; round++) {
    // At least two rotations, and vigil has stored the fixture's latest answer (no secret pending).
    const before = await waitFor(
      async () => {
        const hook = (await s.stack.fixture.state()).hooks[0]!;
        return { hook, ours: await vigilRefreshes(s.stack, `list-${++calls}`) };
      },
      { until: ({ hook, ours }) => hook.secrets.length >= 3 && ours === hook.refreshes, timeoutMs: 20_000, label: "two rotations, confirmed" },
    );
    const answers: number[] = [];
    for (const generation of [0, 1, 2]) answers.push((await emitOnce(s.stack, { sign_with_generation: generation })).status);
    // A rotation in the middle changes which secret is which: judge a round without one only.
    if ((await s.stack.fixture.state()).hooks[0]!.refreshes !== before.hook.refreshes) continue;
    expect(answers).toEqual([200, 200, 401]);
    return;
  }
  throw new Error("every round overlapped a refresh");
});
