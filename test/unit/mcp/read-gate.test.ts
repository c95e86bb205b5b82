// Backpressure on a stdio server's stdout (src/mcp/line-reader.ts with src/mcp/read-gate.ts): while
// the gate is held no further frame is handed over and the pipe is not read on; stop() ends a
// paused reader; and the events notification shape check (events-notification-shape.ts) accepts
// exactly what the SDK's JSONRPCMessageSchema accepts among the shapes it takes.
import { describe, expect, test } from "bun:test";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { asEventsNotification } from "../../../src/mcp/events-notification-shape.ts";
import { readLines } from "../../../src/mcp/line-reader.ts";
import { ReadGate } from "../../../src/mcp/read-gate.ts";
import { type Frame, LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function pipe() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      start: (c) => void (controller = c),
      pull: () => void pulls++,
    },
    { highWaterMark: 0 },
  );
  return { stream, write: (text: string) => controller.enqueue(enc.encode(text)), end: () => controller.close(), pulls: () => pulls };
}

describe("read gate on stdout", () => {
  test("a held gate stops the frames after the one that filled it, and reading resumes on release", async () => {
    const gate = new ReadGate();
    const holder = {};
    const p = pipe();
    const lines: string[] = [];
    const reader = readLines(p.stream, new LineSplitter(1024), {
      frame: (f: Frame) => {
        if (f.kind === "line") lines.push(dec.decode(f.bytes).trim());
        if (lines.length === 2) gate.hold(holder);
      },
      failed: () => {},
      ended: () => {},
    }, gate);
    p.write("a\nb\nc\nd\n");
    await settle();
    expect(lines).toEqual(["a", "b"]);
    const pullsWhileHeld = p.pulls();
    await settle();
    expect(p.pulls()).toBe(pullsWhileHeld);
    gate.release(holder);
    await settle();
    expect(lines).toEqual(["a", "b", "c", "d"]);
    p.end();
    await reader.done;
  });

  test("stop() ends a reader paused on the gate", async () => {
    const gate = new ReadGate();
    gate.hold({});
    const p = pipe();
    let ended = false;
    const reader = readLines(p.stream, new LineSplitter(1024), { frame: () => {}, failed: () => {}, ended: () => void (ended = true) }, gate);
    p.write("x\ny\n");
    await settle();
    reader.stop();
    await reader.done;
    expect(ended).toBe(true);
  });
});

describe("events notification shape check", () => {
  const base = { jsonrpc: "2.0", method: "notifications/events/event", params: { eventId: "e1", name: "n", data: { a: 1 }, cursor: "7", _meta: { "io.modelcontextprotocol/subscriptionId": 3 } } };
  const variants: unknown[] = [
    base,
    { ...base, params: undefined },
    { jsonrpc: "2.0", method: "notifications/events/heartbeat" },
    { ...base, id: 1 },
    { ...base, jsonrpc: "1.0" },
    { ...base, extra: true },
    { ...base, method: 7 },
    { ...base, params: [] },
    { ...base, params: null },
    { ...base, params: "x" },
    { ...base, params: { ...base.params, _meta: null } },
    { ...base, params: { ...base.params, _meta: [] } },
    { ...base, params: { ...base.params, _meta: { progressToken: 1.5 } } },
    { ...base, params: { ...base.params, _meta: { progressToken: "t" } } },
    { ...base, params: { ...base.params, _meta: { "io.modelcontextprotocol/related-task": { taskId: 1 } } } },
    JSON.parse('{"jsonrpc":"2.0","method":"notifications/events/event","params":{"__proto__":{"x":1},"eventId":"e"}}'),
    JSON.parse('{"jsonrpc":"2.0","method":"notifications/events/event","__proto__":{}}'),
    { jsonrpc: "2.0", method: "notifications/tools/list_changed" },
    { jsonrpc: "2.0" },
    [base],
    null,
    "notifications/events/event",
  ];

  test("it never accepts what the schema refuses, and what it accepts carries the schema's content", () => {
    let accepted = 0;
    for (const v of variants) {
      const fast = asEventsNotification(v);
      const schema = JSONRPCMessageSchema.safeParse(v);
      if (fast === null) continue;
      accepted++;
      expect(schema.success).toBe(true);
      // Same content (the schema's copy only orders `_meta` first).
      expect(fast).toEqual(schema.data as never);
    }
    // The base event and a bare heartbeat; `params: undefined` (never from JSON) is left to the schema.
    expect(accepted).toBe(2);
  });
});
