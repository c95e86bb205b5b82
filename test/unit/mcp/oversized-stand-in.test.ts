/**
 * The transports' over-cap paths deliver a stand-in for an events notification instead of dropping
 * it: stdio lines (decodeServerFrame, and a real StdioMcpTransport), parsed messages on the
 * ObservedTransport (streamable HTTP), and SSE bodies through cappedFetch.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { cappedFetch } from "../../../src/mcp/http-connection.ts";
import { ObservedTransport } from "../../../src/mcp/observed-transport.ts";
import { OutstandingRequests, decodeServerFrame } from "../../../src/mcp/stdio-framing.ts";
import { StdioMcpTransport } from "../../../src/mcp/stdio-transport.ts";
import { LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";
import { waitUntil } from "../../helpers/fixture.ts";

const enc = new TextEncoder();
const CAP = 1024;
const SUB = "io.modelcontextprotocol/subscriptionId";
const bigEvent = (extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  method: "notifications/events/event",
  params: { eventId: "evt_big", name: "ticket.updated", cursor: "c5", _meta: { [SUB]: 4 }, data: { blob: "b".repeat(50_000) }, ...extra },
});
const STAND_IN = {
  jsonrpc: "2.0",
  method: "notifications/events/event",
  params: { $oversized: true, eventId: "evt_big", name: "ticket.updated", cursor: "c5", _meta: { [SUB]: 4 } },
};

function decodeLine(line: string, outstanding = new OutstandingRequests()) {
  const splitter = new LineSplitter(CAP);
  const [frame] = [...splitter.push(enc.encode(`${line}\n`)), ...splitter.end()];
  return decodeServerFrame(frame!, CAP, outstanding);
}

describe("stdio framing", () => {
  test("an over-cap events notification line becomes a stand-in", () => {
    const decoded = decodeLine(JSON.stringify(bigEvent()));
    expect(decoded).toMatchObject({ kind: "replaced", message: STAND_IN });
    // Payload first: still delivered, marked as possibly not an event.
    const payloadFirst = `{"params":{"data":"${"p".repeat(5000)}"},"method":"notifications/events/event","jsonrpc":"2.0"}`;
    expect(decodeLine(payloadFirst)).toMatchObject({ kind: "replaced", message: { params: { $oversized: true, $ambiguous: true } } });
  });

  test("other over-cap lines are still dropped, and a response in flight still fails its call", () => {
    const other = JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { data: "m".repeat(5000) } });
    expect(decodeLine(other)).toMatchObject({ kind: "skipped", reason: "oversized" });
    const outstanding = new OutstandingRequests();
    outstanding.add(3);
    const response = JSON.stringify({ jsonrpc: "2.0", id: 3, result: { x: "r".repeat(5000) } });
    expect(decodeLine(response, outstanding)).toMatchObject({ kind: "replaced", message: { id: 3, error: { code: -32000 } } });
  });
});

describe("StdioMcpTransport", () => {
  const started: StdioMcpTransport[] = [];
  afterEach(async () => {
    for (const t of started.splice(0)) {
      if (t.pid !== null) {
        try {
          process.kill(-t.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await t.close();
    }
  });

  test("an over-cap events notification reaches onmessage as a stand-in; the next message follows", async () => {
    const after = { jsonrpc: "2.0", method: "notifications/events/heartbeat", params: { cursor: "c6", _meta: { [SUB]: 4 } } };
    const script = `process.stdout.write(${JSON.stringify(`${JSON.stringify(bigEvent())}\n${JSON.stringify(after)}\n`)}); setInterval(() => {}, 1000);`;
    const transport = new StdioMcpTransport({ name: "big", command: process.execPath, args: ["-e", script], maxMessageBytes: 4096, graceMs: 100 });
    started.push(transport);
    const received: JSONRPCMessage[] = [];
    const errors: string[] = [];
    transport.onmessage = (m) => void received.push(m);
    transport.onerror = (e) => void errors.push(e.message);
    await transport.start();
    expect(await waitUntil(() => received.length >= 2, 10_000)).toBe(true);
    expect(received).toEqual([STAND_IN as JSONRPCMessage, after as JSONRPCMessage]);
    expect(transport.status().counts.oversized_replaced).toBe(1);
    expect(errors.some((m) => m.includes("stand-in"))).toBe(true);
  });
});

/** An inner transport the test drives by hand. */
class FakeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  sent: JSONRPCMessage[] = [];
  async start(): Promise<void> {}
  async close(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    this.sent.push(message);
  }
}

describe("ObservedTransport", () => {
  test("an over-cap parsed events notification is delivered as a stand-in; other over-cap messages still drop", () => {
    const inner = new FakeTransport();
    const observed = new ObservedTransport(inner, { name: "http", maxMessageBytes: CAP });
    const received: JSONRPCMessage[] = [];
    observed.onmessage = (m) => void received.push(m);
    observed.onerror = () => {};
    inner.onmessage?.(bigEvent() as JSONRPCMessage);
    inner.onmessage?.({ jsonrpc: "2.0", method: "notifications/message", params: { data: "m".repeat(5000) } });
    expect(received).toEqual([STAND_IN as JSONRPCMessage]);
    expect(observed.oversizedCount).toBe(2);
  });
});

describe("cappedFetch on an SSE body", () => {
  const servers: { stop: (force: boolean) => void }[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.stop(true);
  });

  function sseServer(body: string) {
    const server = Bun.serve({
      port: 0,
      fetch: () => new Response(body, { headers: { "content-type": "text/event-stream", "content-length": String(Buffer.byteLength(body)) } }),
    });
    servers.push(server);
    return `http://127.0.0.1:${server.port}/mcp`;
  }

  test("an over-cap event is replaced by its stand-in and the next event still arrives", async () => {
    const next = { jsonrpc: "2.0", method: "notifications/events/heartbeat", params: { cursor: "c6" } };
    const url = sseServer(`data: ${JSON.stringify(bigEvent())}\n\ndata: ${JSON.stringify(next)}\n\n`);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "events/stream", params: { name: "ticket.updated" } });
    const response = await cappedFetch((u, init) => fetch(u, init), CAP)(url, { method: "POST", body });
    expect(response.headers.get("content-length")).toBeNull();
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(await response.text()).toBe(`data: ${JSON.stringify(STAND_IN)}\n\ndata: ${JSON.stringify(next)}\n\n`);
  });

  test("an over-cap answer on the stream fails the POST's one request instead of leaving it waiting", async () => {
    const url = sseServer(`data: ${JSON.stringify({ jsonrpc: "2.0", id: 8, result: { pad: "z".repeat(20_000) } })}\n\n`);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "x" } });
    const response = await cappedFetch((u, init) => fetch(u, init), CAP)(url, { method: "POST", body });
    const text = await response.text();
    expect(JSON.parse(text.replace(/^data: /, ""))).toEqual({
      jsonrpc: "2.0",
      id: 8,
      error: { code: -32000, message: `response larger than ${CAP} bytes` },
    });
  });
});
