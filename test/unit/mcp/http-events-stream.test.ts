/**
 * The answer to an `events/stream` POST over streamable HTTP, read by vigil itself
 * (src/mcp/events-stream-reader.ts through createHttpTransport), against a real Bun.serve on port 0
 * and a real SDK Client: the stream's notifications reach the claimer in order without the SDK's
 * schema, and the SDK's transport sees none of the stream's SSE ids; anything else is still held
 * to the schema (reported, not delivered, when it fails); the answer resolves the request and ends
 * the stream; a full push stream stops the body from being read (the server's writes back up); a
 * cancelled stream's connection closes; the cap keeps its stand-ins and errors. No timing is
 * asserted: every wait is a bounded wait on a condition.
 * Then, in process: the cap's shortcut (a message is measured unless its text proves it within the
 * cap) never lets one through that the measure would stop, and the shape the claimer is offered.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type JSONRPCMessage, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { isStreamNotificationShape } from "../../../src/mcp/events-notification-shape.ts";
import { surelyWithinCap } from "../../../src/mcp/events-stream-reader.ts";
import { createHttpTransport } from "../../../src/mcp/http-connection.ts";
import type { ObservedTransport } from "../../../src/mcp/observed-transport.ts";
import { waitFor } from "../../helpers/wait.ts";

const enc = new TextEncoder();
const SUB = "io.modelcontextprotocol/subscriptionId";
const event = (id: string, extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  method: "notifications/events/event",
  params: { eventId: id, name: "ticket.updated", cursor: id, data: { n: id }, _meta: { [SUB]: 1 } },
  ...extra,
});
const sse = (message: unknown, id?: string) => `${id === undefined ? "" : `id: ${id}\n`}data: ${typeof message === "string" ? message : JSON.stringify(message)}\n\n`;
const answer = (id: unknown, result: Record<string, unknown> = {}) => ({ jsonrpc: "2.0", id, result });

/** The SSE body of one `events/stream` answer, written by the test; `cancelled` once the client let go. */
class StreamBody {
  cancelled = false;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream = new ReadableStream<Uint8Array>({
    start: (c) => void (this.controller = c),
    cancel: () => void (this.cancelled = true),
  });
  write(text: string): void {
    if (!this.cancelled) this.controller.enqueue(enc.encode(text));
  }
}

type StreamHandler = (id: number | string, signal: AbortSignal) => Response;

const servers: { stop: (force: boolean) => void }[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const s of servers.splice(0)) s.stop(true);
});

/** A minimal streamable-HTTP MCP server: initialize as JSON, notifications 202, `events/stream` by `onStream`. */
function mcpServer(onStream: StreamHandler) {
  const cancelledIds: unknown[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 60,
    async fetch(req) {
      if (req.method !== "POST") return new Response(null, { status: 405 });
      const message = (await req.json()) as { id?: number | string; method?: string; params?: Record<string, unknown> };
      if (message.method === "notifications/cancelled") cancelledIds.push(message.params?.requestId);
      if (message.id === undefined) return new Response(null, { status: 202 });
      if (message.method === "initialize") {
        const result = { protocolVersion: message.params?.protocolVersion, capabilities: {}, serverInfo: { name: "fx", version: "1" } };
        return Response.json(answer(message.id, result));
      }
      if (message.method === "events/stream") return onStream(message.id, req.signal);
      return Response.json({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "no such method" } });
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}/mcp`, cancelledIds };
}

const sseResponse = (body: ReadableStream<Uint8Array>) => new Response(body, { headers: { "content-type": "text/event-stream" } });

/** A connected Client over createHttpTransport, with a claimer that takes the stream notifications as the events client does. */
async function connect(url: string, maxMessageBytes?: number) {
  const transport = createHttpTransport({ name: "fx", url, ...(maxMessageBytes !== undefined ? { maxMessageBytes } : {}) });
  const claimed: JSONRPCMessage[] = [];
  const heard: JSONRPCMessage[] = [];
  const errors: string[] = [];
  let onClaim: (count: number) => void = () => {};
  transport.setClaimer((m) => {
    if (!("method" in m) || "id" in m || !m.method.startsWith("notifications/events/") || m.method === "notifications/events/list_changed") return false;
    claimed.push(m);
    onClaim(claimed.length);
    return true;
  });
  transport.onIncoming((m) => void heard.push(m));
  const client = new Client({ name: "t", version: "1" }, { capabilities: {} });
  clients.push(client);
  await client.connect(transport);
  // Set after connect: the Client installs its own.
  const clientOnError = transport.onerror;
  transport.onerror = (e) => {
    errors.push(e.message);
    clientOnError?.(e);
  };
  const stream = (signal?: AbortSignal, onresumptiontoken?: (token: string) => void) =>
    client.request({ method: "events/stream", params: { name: "ticket.updated" } }, ResultSchema, {
      timeout: 60_000,
      ...(signal ? { signal } : {}),
      ...(onresumptiontoken ? { onresumptiontoken } : {}),
    });
  return { transport, client, claimed, heard, errors, stream, whenClaimed: (f: (count: number) => void) => void (onClaim = f) };
}

const ids = (messages: JSONRPCMessage[]) => messages.map((m) => ("params" in m ? (m.params as { eventId?: string }).eventId ?? m.method : null));

describe("events/stream over HTTP, read by vigil", () => {
  test("its notifications reach the claimer in order, one the SDK's schema would refuse included; the answer resolves the request", async () => {
    const body = new StreamBody();
    const { url } = mcpServer((id) => {
      body.write(sse(event("e1"), "1"));
      // A top-level key the SDK's strict schema refuses: the events client decides on fields itself.
      body.write(sse(event("e2", { "x-trace": "abc" }), "2") + sse({ jsonrpc: "2.0", method: "notifications/events/heartbeat", params: { _meta: { [SUB]: 1 } } }));
      body.write(sse(event("e3"), "3") + sse(answer(id, { done: true })));
      return sseResponse(body.stream);
    });
    const c = await connect(url);
    const tokens: string[] = [];
    expect(await c.stream(undefined, (t) => void tokens.push(t))).toMatchObject({ done: true });
    expect(ids(c.claimed)).toEqual(["e1", "e2", "notifications/events/heartbeat", "e3"]);
    expect(c.errors).toEqual([]);
    // The SDK's transport saw none of the stream's SSE ids: it has nothing to resume the stream from.
    expect(tokens).toEqual([]);
  });

  test("a message that is not a stream notification is held to the SDK's schema: a refused one is reported, never delivered, and the stream reads on", async () => {
    const { url } = mcpServer((id) => {
      const body = new StreamBody();
      body.write(sse({ jsonrpc: "2.0", id: "r1", method: 5 })); // a request whose method is no string
      body.write(sse("{not json"));
      body.write(sse({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" }, extra: 1 }));
      body.write(sse({ jsonrpc: "2.0", method: "notifications/events/list_changed", extra: 1 })); // not the claimer's: checked
      body.write(sse(event("e1")) + sse(answer(id)));
      return sseResponse(body.stream);
    });
    const c = await connect(url);
    const heardBefore = c.heard.length;
    await c.stream();
    expect(ids(c.claimed)).toEqual(["e1"]);
    // The listeners heard the notification and the answer, nothing that failed the schema.
    expect(c.heard.slice(heardBefore).map((m) => ("method" in m ? m.method : "answer"))).toEqual(["notifications/events/event", "answer"]);
    expect(c.errors).toHaveLength(4);
  });

  test("the answer ends the stream: what the server writes after it is not routed, and the connection is let go", async () => {
    const body = new StreamBody();
    const { url } = mcpServer((id) => {
      body.write(sse(event("e1")) + sse(answer(id)) + sse(event("after")));
      return sseResponse(body.stream);
    });
    const c = await connect(url);
    await c.stream();
    await waitFor(() => body.cancelled, { timeoutMs: 10_000, label: "the server to see the stream let go" });
    expect(ids(c.claimed)).toEqual(["e1"]);
  });

  test("a full push stream stops the body from being read: nothing more is handed on, the server's writes back up, and on release every event follows in order", async () => {
    // 96 MiB in 32 KiB events: more than the socket buffers on both sides can take (Linux lets a
    // loopback receive buffer grow to tcp_rmem's maximum, 32 MiB here, on top of the sender's).
    const PAD = "p".repeat(32 * 1024);
    const TOTAL = 3072;
    let produced = 0;
    let written = 0;
    const { url } = mcpServer((id) =>
      sseResponse(
        new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              if (written >= TOTAL) {
                controller.enqueue(enc.encode(sse(answer(id))));
                return controller.close();
              }
              written++;
              const bytes = enc.encode(sse(event(`e${written}`, { params: { eventId: `e${written}`, name: "n", pad: PAD } })));
              produced += bytes.length;
              controller.enqueue(bytes);
            },
          },
          { highWaterMark: 0 },
        ),
      ),
    );
    const c = await connect(url);
    const holder = {};
    c.whenClaimed((n) => {
      if (n === 3) c.transport.readGate.hold(holder);
    });
    const done = c.stream();
    void done.catch(() => {}); // awaited below; a failed assertion must not leave it unhandled
    // The server's writes stop growing: the body is not read while the gate is held.
    let last = -1;
    await waitFor(
      () => {
        const stalled = produced === last && c.claimed.length >= 3;
        last = produced;
        return stalled;
      },
      { timeoutMs: 20_000, intervalMs: 250, label: "the server's writes to back up", show: () => `${produced} bytes written, ${c.claimed.length} claimed` },
    );
    expect(c.claimed).toHaveLength(3);
    expect(written).toBeLessThan(TOTAL);
    c.transport.readGate.release(holder);
    await done;
    expect(ids(c.claimed)).toEqual(Array.from({ length: TOTAL }, (_, i) => `e${i + 1}`));
  });

  for (const paused of [false, true]) {
    test(`cancelling the request closes the stream's connection${paused ? ", also while the stream waits on a held gate" : ""}`, async () => {
      let serverSawAbort = false;
      const body = new StreamBody();
      const { url, cancelledIds } = mcpServer((_id, signal) => {
        signal.addEventListener("abort", () => void (serverSawAbort = true));
        body.write(sse(event("e1")) + sse(event("e2")));
        return sseResponse(body.stream);
      });
      const c = await connect(url);
      const holder = {};
      if (paused) c.whenClaimed(() => c.transport.readGate.hold(holder));
      const cancel = new AbortController();
      const request = c.stream(cancel.signal).then(
        () => "resolved",
        () => "rejected",
      );
      await waitFor(() => c.claimed.length >= 1, { timeoutMs: 10_000, label: "the first event" });
      cancel.abort(new Error("unsubscribed"));
      expect(await request).toBe("rejected");
      await waitFor(() => body.cancelled || serverSawAbort, { timeoutMs: 10_000, label: "the server to see the connection close" });
      await waitFor(() => cancelledIds.length > 0, { timeoutMs: 10_000, label: "notifications/cancelled" });
      // The reading ended (its end reported as the SDK reports a lost stream), gate held or not.
      await waitFor(() => c.errors.some((m) => m.includes("SSE stream disconnected")), { timeoutMs: 10_000, label: "the stream's end", show: () => c.errors });
      if (paused) expect(ids(c.claimed)).toEqual(["e1"]);
      else expect(ids(c.claimed)[0]).toBe("e1");
      c.transport.readGate.release(holder);
    });
  }

  test("the cap holds on this path: over-cap events become stand-ins, one that only decodes over the cap too, and an over-cap answer fails the request", async () => {
    const CAP = 4096;
    const { url } = mcpServer((id) => {
      const body = new StreamBody();
      body.write(sse(event("big", { params: { eventId: "big", name: "n", cursor: "c1", _meta: { [SUB]: 1 }, blob: "b".repeat(50_000) } })));
      // ~2.6 KB on the wire, ~11 KB once decoded and written back (`1e20` is 21 digits): over the cap.
      const numbers = `{"jsonrpc":"2.0","method":"notifications/events/event","params":{"eventId":"nums","name":"n","_meta":{"${SUB}":1},"data":[${Array(500).fill("1e20").join(",")}]}}`;
      body.write(sse(numbers));
      body.write(sse(event("small")));
      body.write(sse(answer(id, { pad: "z".repeat(20_000) })));
      return sseResponse(body.stream);
    });
    const c = await connect(url, CAP);
    await expect(c.stream()).rejects.toThrow(`response larger than ${CAP} bytes`);
    expect(c.claimed.map((m) => (m as { params: Record<string, unknown> }).params)).toEqual([
      { $oversized: true, eventId: "big", name: "n", cursor: "c1", _meta: { [SUB]: 1 } },
      { $oversized: true, eventId: "nums", name: "n", _meta: { [SUB]: 1 } },
      expect.objectContaining({ eventId: "small" }),
    ]);
    expect((c.transport as ObservedTransport).oversizedCount).toBe(1); // the one measured after decoding
  });
});

describe("the cap's shortcut and the stream notification shape", () => {
  const measured = (data: string) => Buffer.byteLength(JSON.stringify(JSON.parse(data)), "utf8");

  /** JSON texts that grow, shrink or keep their size through JSON.parse + JSON.stringify. */
  function texts(seed: number): string[] {
    let x = seed;
    const rnd = (n: number) => ((x = (x * 1103515245 + 12345) % 2 ** 31), x % n);
    const atoms = ["1e20", "9E20", "1e+20", "-1e20", "1e21", "1e-7", "0.1e1", "-0", "1e400", "12e19", "123456789012345678901234567890", "\"\\u00e9\"", "\"é\"", "\"\\ud83d\\ude00\"", "\"😀\"", "\"\\u0001\\\"\\/\"", "\"\u2028\"", "true", "null", "\"\\ud800\""];
    const out: string[] = [];
    for (let t = 0; t < 300; t++) {
      const n = 1 + rnd(60);
      const parts = Array.from({ length: n }, () => atoms[rnd(atoms.length)]!);
      const spaced = parts.join(rnd(2) === 0 ? "," : " ,\n  ");
      out.push(rnd(2) === 0 ? `[${spaced}]` : `{"k":[${spaced}],"__proto__":{"a":${parts[0]}}}`);
    }
    return out;
  }

  test("a message the shortcut lets through is never over the cap once decoded and measured", () => {
    let shortcuts = 0;
    for (const data of texts(7)) {
      const size = measured(data);
      const bytes = Buffer.byteLength(data, "utf8");
      for (const max of [size - 1, size, bytes, 3 * bytes, 5 * bytes, 6 * bytes, 6 * bytes - 1, 18 * data.length]) {
        if (max < 1 || !surelyWithinCap(data, max)) continue;
        shortcuts++;
        expect(size).toBeLessThanOrEqual(max);
      }
    }
    expect(shortcuts).toBeGreaterThan(300);
    // The worst growth: each `1e20` comes back as 21 digits.
    const worst = `[${Array(100).fill("1e20").join(",")}]`;
    expect(measured(worst) / Buffer.byteLength(worst)).toBeGreaterThan(4);
    expect(surelyWithinCap(worst, measured(worst) - 1)).toBe(false);
  });

  test("the claimer is offered JSON-RPC notifications/events/* with object params, nothing else", () => {
    const base = { jsonrpc: "2.0", method: "notifications/events/event", params: { eventId: "e" } };
    const accepted: unknown[] = [base, { ...base, extra: 1 }, { jsonrpc: "2.0", method: "notifications/events/heartbeat" }, { ...base, params: { _meta: "x" } }];
    const refused: unknown[] = [
      { ...base, id: 1 },
      { ...base, jsonrpc: "1.0" },
      { ...base, method: "notifications/message" },
      { ...base, method: 7 },
      { ...base, params: [] },
      { ...base, params: null },
      [base],
      null,
      "notifications/events/event",
    ];
    for (const v of accepted) expect(isStreamNotificationShape(v)).toBe(true);
    for (const v of refused) expect(isStreamNotificationShape(v)).toBe(false);
  });
});
