/**
 * Micro-bench of pushed events over streamable HTTP (issue 16): the CPU one `events/stream`
 * notification costs on its way from the socket to the claimer, old against new in this process.
 *
 *   bun bench/events/hotpath-http-push.ts [--iterations N]   (events per round; default 5,000)
 *
 * A loopback Bun.serve in this process answers each `events/stream` POST with N `ticket.updated`
 * notifications (~300 bytes each, as bench/events/run.ts's fixture sends them, 64 KiB per write),
 * then the request's answer. The client side, three ways, alternating in rounds (bench/ab.ts):
 * - floor: `fetch`, the body read and dropped — the server's and the socket's share, which every
 *   variant pays alike;
 * - before: the pipeline as it was — the SDK's StreamableHTTPClientTransport over cappedFetch
 *   (cappedSseStream stage), `gatedStreams` (one SSE event per pull, the read gate; its code is
 *   kept below), the SDK's TextDecoderStream → EventSourceParserStream → JSON.parse → zod, then
 *   ObservedTransport (a JSON.stringify per message for the cap) and the claimer;
 * - now: createHttpTransport as serve builds it, with vigil's own reader (mcp/events-stream-reader.ts).
 * Printed: process CPU µs per pushed event (process.cpuUsage: server and client, so the differences
 * are the client's), the median of the rounds, and each variant less the floor.
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { cancellableStreams, cappedFetch, createHttpTransport, watchedFetch } from "../../src/mcp/http-connection.ts";
import { ObservedTransport } from "../../src/mcp/observed-transport.ts";
import { ReadGate } from "../../src/mcp/read-gate.ts";
import { ROUNDS, alternate, iterations } from "../ab.ts";
import { fmt, table } from "../report.ts";

const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
const CHUNK = 64 * 1024;
const enc = new TextEncoder();

// ---- the server: N notifications, then the answer ------------------------------------------

function eventsBody(n: number): Uint8Array {
  let text = "";
  for (let i = 1; i <= n; i++) {
    const params = {
      eventId: `evt-${i}`,
      name: "ticket.updated",
      timestamp: new Date().toISOString(),
      data: { ticket_id: `T-${i}`, summary: `ticket ${i} updated` },
      cursor: String(i),
      _meta: { "io.modelcontextprotocol/subscriptionId": 3 },
    };
    text += `id: ${i}\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/events/event", params })}\n\n`;
  }
  return enc.encode(text);
}

function startServer(bodies: Map<number, Uint8Array>) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 60,
    async fetch(req) {
      const message = (await req.json()) as { id?: number; params?: { n?: number } };
      if (message.id === undefined) return new Response(null, { status: 202 });
      const events = bodies.get(message.params?.n ?? 0)!;
      const answer = enc.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: {} })}\n\n`);
      let at = 0;
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (at >= events.length) {
              controller.enqueue(answer);
              return controller.close();
            }
            controller.enqueue(events.subarray(at, at + CHUNK));
            at += CHUNK;
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
}

// ---- before: the read gate as a stream stage (http-connection.ts before the reader) ---------

function gatedStreamsBefore(base: FetchLike, gate: ReadGate): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.ok || response.body === null || init?.method !== "POST") return response;
    if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) return response;
    if ((JSON.parse(String(init.body)) as { method?: string }).method !== "events/stream") return response;
    return new Response(gatedBodyBefore(response.body, gate), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function gatedBodyBefore(body: ReadableStream<Uint8Array>, gate: ReadGate): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let pieces: Uint8Array[] = [];
  let next = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (next >= pieces.length) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          pieces = eventPiecesBefore(value);
          next = 0;
        }
        const paused = gate.wait();
        if (paused !== null) await paused;
        controller.enqueue(pieces[next++]!);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

function eventPiecesBefore(chunk: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let from = 0;
  for (let i = chunk.indexOf(10); i !== -1 && i + 1 < chunk.length; i = chunk.indexOf(10, i + 1)) {
    const end = chunk[i + 1] === 10 ? i + 2 : chunk[i + 1] === 13 && chunk[i + 2] === 10 ? i + 3 : -1;
    if (end === -1) continue;
    out.push(chunk.subarray(from, end));
    from = end;
    i = end - 1;
  }
  if (from < chunk.length) out.push(chunk.subarray(from));
  return out;
}

function transportBefore(url: string): ObservedTransport {
  const gate = new ReadGate();
  const network = cancellableStreams(watchedFetch((u, init) => fetch(u, init), undefined));
  const inner = new StreamableHTTPClientTransport(new URL(url), { fetch: gatedStreamsBefore(cappedFetch(network, MAX_MESSAGE_BYTES), gate) });
  return new ObservedTransport(inner, { name: "bench", maxMessageBytes: MAX_MESSAGE_BYTES, readGate: gate });
}

const transportNow = (url: string) => createHttpTransport({ name: "bench", url, maxMessageBytes: MAX_MESSAGE_BYTES });

// ---- one stream through a transport ----------------------------------------------------------

interface Setup {
  transport: ObservedTransport;
  routed: number;
  answered: ((id: unknown) => void) | null;
  nextId: number;
  errors: string[];
}

async function open(make: (url: string) => ObservedTransport, url: string): Promise<Setup> {
  const transport = make(url);
  const setup: Setup = { transport, routed: 0, answered: null, nextId: 1, errors: [] };
  // The events client's claimer (events/wire/server-events.ts), routing to a counter.
  transport.setClaimer((m) => {
    if (!("method" in m) || "id" in m || !m.method.startsWith("notifications/events/") || m.method === "notifications/events/list_changed") return false;
    setup.routed++;
    return true;
  });
  transport.onmessage = (m: JSONRPCMessage) => {
    if ("id" in m && !("method" in m)) setup.answered?.(m.id);
  };
  transport.onerror = (e) => setup.errors.push(e.message);
  await transport.start();
  return setup;
}

/** One `events/stream` of `n` events through `s`, to its answer. */
async function stream(s: Setup, n: number): Promise<void> {
  const id = s.nextId++;
  const before = s.routed;
  const answered = new Promise<void>((resolve) => (s.answered = (got) => got === id && resolve()));
  await s.transport.send({ jsonrpc: "2.0", id, method: "events/stream", params: { n } });
  await answered;
  if (s.routed - before !== n || s.errors.length > 0) throw new Error(`routed ${s.routed - before} of ${n} events; errors: ${s.errors.join("; ")}`);
}

async function floor(url: string, n: number): Promise<void> {
  const res = await fetch(url, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "events/stream", params: { n } }) });
  const reader = res.body!.getReader();
  while (!(await reader.read()).done) {
    // dropped
  }
}

async function main(): Promise<void> {
  const n = iterations({ usage: "bun bench/events/hotpath-http-push.ts [--iterations N]", fallback: 5000, min: 100, max: 200_000 });
  const bodies = new Map<number, Uint8Array>();
  const server = startServer(bodies);
  const url = `http://127.0.0.1:${server.port}/mcp`;
  const warmup = Math.min(n, 2000);
  bodies.set(n, eventsBody(n));
  bodies.set(warmup, eventsBody(warmup));
  const before = await open(transportBefore, url);
  const now = await open(transportNow, url);
  type Variant = (count: number) => Promise<void>;
  const variants: Variant[] = [(count) => floor(url, count), (count) => stream(before, count), (count) => stream(now, count)];
  const cpuPerEvent = async (count: number, v: Variant) => {
    const c0 = process.cpuUsage();
    await v(count);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / count;
  };
  const [f, b, a] = (await alternate(variants, { calls: n, warmup, time: cpuPerEvent })) as [number, number, number];
  await before.transport.close();
  await now.transport.close();
  server.stop(true);
  const rows = [
    ["floor: fetch, body read and dropped", fmt(f, 1), "—"],
    ["before: SDK stream stages + zod + gatedStreams + cap re-serialization", fmt(b, 1), fmt(b - f, 1)],
    ["now: vigil's own reader (events-stream-reader.ts)", fmt(a, 1), fmt(a - f, 1)],
  ];
  process.stdout.write(
    `\npushed events over streamable HTTP — process CPU µs per event (${fmt(n)} events of ~${fmt(bodies.get(n)!.length / n)} bytes per stream), median of ${ROUNDS} rounds (variants alternate)\n\n` +
      `${table(["variant", "CPU µs / event", "less the floor"], rows, ["l", "r", "r"]).join("\n")}\n\n` +
      `client side: before ${fmt(b - f, 1)} µs, now ${fmt(a - f, 1)} µs per event (${fmt((b - f) / (a - f), 2)} ×)\n`,
  );
}

await main();
