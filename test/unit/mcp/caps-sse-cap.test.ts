import { describe, expect, test } from "bun:test";
import { SseCapFilter, cappedSseStream } from "../../../src/mcp/caps/sse-cap.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Runs `input` through a filter in pieces cut at `cuts` (byte offsets); returns the output text. */
function run(input: string | Uint8Array, cap: number, cuts: (n: number) => number[], options = {}): string {
  const bytes = typeof input === "string" ? enc.encode(input) : input;
  const filter = new SseCapFilter(cap, options);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const to of [...cuts(bytes.length), bytes.length]) {
    out.push(...filter.push(bytes.subarray(from, to)));
    from = to;
  }
  out.push(...filter.end());
  return dec.decode(Buffer.concat(out));
}

const whole = () => [];
const everyByte = (n: number) => Array.from({ length: n }, (_, i) => i);
/** A deterministic scatter of cut points. */
const scattered = (seed: number) => (n: number) => {
  const cuts: number[] = [];
  let x = seed;
  for (let at = 0; at < n; ) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    at += 1 + (x % 97);
    if (at < n) cuts.push(at);
  }
  return cuts;
};
const SPLITS = [whole, everyByte, scattered(1), scattered(7), scattered(42)];

const event = (message: unknown, eol = "\n") => `data: ${JSON.stringify(message)}${eol}${eol}`;
const notification = (params: Record<string, unknown>) => ({ jsonrpc: "2.0", method: "notifications/events/event", params });

/** The messages an SSE reader would dispatch from `text` (data lines joined), for checking output. */
function dataOf(text: string): unknown[] {
  return text
    .split(/\r\n\r\n|\n\n|\r\r/)
    .map((block) =>
      block
        .split(/\r\n|\n|\r/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n"),
    )
    .filter((d) => d !== "")
    .map((d) => JSON.parse(d));
}

describe("cappedSseStream: events within the cap", () => {
  const sample =
    ": a comment\n" +
    event(notification({ eventId: "a" })) +
    `id: 17\r\nevent: message\r\ndata: {"jsonrpc":"2.0",\r\ndata: "method":"x"}\r\n\r\n` +
    `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: {} })}\r\r` +
    "\n\n\n" +
    "retry: 1000\ndata\n\n" +
    `data:${JSON.stringify(notification({ eventId: "é😀" }))}\n\n` +
    "data: unterminated at the end";

  for (const split of SPLITS) {
    test(`pass through byte for byte (${split.name || "scattered"} split)`, () => {
      expect(run(sample, 1024, split)).toBe(sample);
    });
  }

  test("a CR at the end of one chunk and its LF at the start of the next are one line end", () => {
    const text = event(notification({ eventId: "a" }), "\r\n") + event(notification({ eventId: "b" }), "\r\n");
    const crAt = text.indexOf("\r");
    expect(run(text, 1024, () => [crAt + 1])).toBe(text);
    // If the pair were counted as two line ends, the first event would end early; it must not.
    const tight = run(text, text.indexOf("\r\n\r\n") + 4, () => [crAt + 1, crAt + 3]);
    expect(tight).toBe(text);
  });

  test("a CR|LF pair split across chunks inside an event does not end the event (its halves are not separate events)", () => {
    // Two data lines, each under the cap, together over it.
    const half = "h".repeat(1000);
    const text = `data: {"jsonrpc":"2.0","method":"notifications/events/event","pad":"${half}",\r\ndata: "params":{"eventId":"two","y":"${half}"}}\r\n\r\n`;
    expect(text.indexOf("\r")).toBeLessThan(2048);
    expect(text.length - text.indexOf("\r")).toBeLessThan(2048);
    const crAt = text.indexOf("\r");
    const out = run(text, 2048, () => [crAt + 1]);
    expect(out).not.toContain(half);
    expect(dataOf(out)).toEqual([{ jsonrpc: "2.0", method: "notifications/events/event", params: { $oversized: true, eventId: "two" } }]);
  });

  test("many small events in one chunk all come through (scanning does not restart per event)", () => {
    const parts: string[] = [];
    for (let i = 0; i < 50_000; i++) parts.push(event(notification({ eventId: `e${i}` }), i % 2 === 0 ? "\n" : "\r\n"));
    const text = parts.join("");
    const out = run(text, 256, whole);
    expect(out).toBe(text);
    expect(dataOf(out)).toHaveLength(50_000);
  });
});

describe("cappedSseStream: an over-cap event", () => {
  const CAP = 2048;
  const bigEvent = (eol = "\n", extra = "") =>
    `${extra}data: ${JSON.stringify(
      notification({ eventId: "evt_big", cursor: "c7", _meta: { "io.modelcontextprotocol/subscriptionId": 3 }, data: { blob: "b".repeat(20_000) } }),
    )}${eol}${eol}`;
  const after = event(notification({ eventId: "next", data: {} }));
  const before = event(notification({ eventId: "prev", data: {} }));

  for (const eol of ["\n", "\r\n", "\r"]) {
    for (const split of SPLITS) {
      test(`becomes one stand-in and the next event still arrives (${JSON.stringify(eol)}, ${split.name || "scattered"} split)`, () => {
        const out = run(before + bigEvent(eol) + after, CAP, split);
        expect(out.startsWith(before)).toBe(true);
        expect(out.endsWith(after)).toBe(true);
        expect(dataOf(out)).toEqual([
          notification({ eventId: "prev", data: {} }),
          {
            jsonrpc: "2.0",
            method: "notifications/events/event",
            params: { $oversized: true, eventId: "evt_big", cursor: "c7", _meta: { "io.modelcontextprotocol/subscriptionId": 3 } },
          },
          notification({ eventId: "next", data: {} }),
        ]);
      });
    }
  }

  test("the event's id line is kept with its stand-in; an event of another type is dropped without one", () => {
    const withId = run(bigEvent("\n", "id: 99\n") + after, CAP, scattered(3));
    expect(withId).toStartWith('id: 99\ndata: {"jsonrpc":"2.0","method":"notifications/events/event","params":{"$oversized":true');
    const typed = run(bigEvent("\n", "event: ping\n") + after, CAP, scattered(3));
    expect(typed).toBe(after);
  });

  test("a multi-line data payload is joined the way a reader joins it", () => {
    const payload = JSON.stringify(notification({ eventId: "split", data: "q".repeat(10_000) }), null, 1);
    const text = `${payload.split("\n").map((l) => `data: ${l}`).join("\n")}\n\n${after}`;
    const [standIn] = dataOf(run(text, CAP, everyByte));
    expect(standIn).toMatchObject({ params: { $oversized: true, eventId: "split" } });
  });

  test("an over-cap response is dropped, or replaced by the error given for it", () => {
    const response = `data: ${JSON.stringify({ jsonrpc: "2.0", result: { x: "r".repeat(10_000) }, id: 5 })}\n\n`;
    expect(run(response + after, CAP, scattered(5))).toBe(after);
    const replaceResponse = { jsonrpc: "2.0", id: 5, error: { code: -32000, message: "response larger than 2048 bytes" } };
    expect(dataOf(run(response + after + response, CAP, scattered(5), { replaceResponse }))).toEqual([
      replaceResponse,
      notification({ eventId: "next", data: {} }),
      // Only once: a stream answers one request.
    ]);
    // A request from the server is neither.
    const request = `data: ${JSON.stringify({ jsonrpc: "2.0", id: 9, method: "sampling/createMessage", params: { x: "r".repeat(10_000) } })}\n\n`;
    expect(run(request + after, CAP, whole, { replaceResponse })).toBe(after);
  });

  test("an unfinished over-cap event at the end of the body leaves nothing behind", () => {
    expect(run(before + bigEvent().slice(0, 5000), CAP, scattered(9))).toBe(before);
  });

  test("the filter never holds more than the cap, even for a 50 MB event", () => {
    const cap = 1024 * 1024;
    const filter = new SseCapFilter(cap);
    const chunk = new Uint8Array(64 * 1024).fill(0x61); // "a"
    const prefix = enc.encode('data: {"jsonrpc":"2.0","method":"notifications/events/event","params":{"eventId":"huge","data":"');
    const out: Uint8Array[] = [...filter.push(prefix)];
    let max = filter.bufferedBytes;
    for (let sent = 0; sent < 50 * 1024 * 1024; sent += chunk.length) {
      out.push(...filter.push(chunk));
      max = Math.max(max, filter.bufferedBytes);
    }
    expect(filter.bufferedBytes).toBe(0); // once known to be over the cap, nothing of it is kept
    out.push(...filter.push(enc.encode('"}}\n\n')), ...filter.push(enc.encode(after)), ...filter.end());
    expect(max).toBeLessThanOrEqual(cap);
    expect(max).toBeGreaterThan(cap - chunk.length); // it did buffer up to the cap before giving up
    const text = dec.decode(Buffer.concat(out));
    expect(text.length).toBeLessThan(1000);
    expect(dataOf(text)).toEqual([
      { jsonrpc: "2.0", method: "notifications/events/event", params: { $oversized: true, eventId: "huge" } },
      notification({ eventId: "next", data: {} }),
    ]);
  });

  test("as a stream stage, with bufferedBytes exposed", async () => {
    const stage = cappedSseStream(CAP);
    const source = new Blob([before, bigEvent().slice(0, 3000)]).stream();
    const reader = source.pipeThrough(stage).getReader();
    const first = await reader.read();
    expect(dec.decode(first.value)).toBe(before);
    expect(stage.bufferedBytes).toBeLessThanOrEqual(CAP);
    const piped = await new Response(new Blob([before, bigEvent(), after]).stream().pipeThrough(cappedSseStream(CAP))).text();
    expect(dataOf(piped)).toHaveLength(3);
    expect(piped.endsWith(after)).toBe(true);
  });
});

describe("cappedSseStream: randomized mixes", () => {
  test("small and over-cap events in any order, any line ends, any splits", () => {
    let x = 12345;
    const rand = (n: number) => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x % n;
    };
    for (let round = 0; round < 150; round++) {
      const pieces: string[] = [];
      const expected: unknown[] = [];
      let anyBig = false;
      for (let i = 0, count = 1 + rand(6); i < count; i++) {
        const eol = ["\n", "\r\n", "\r"][rand(3)]!;
        if (rand(3) === 0) {
          anyBig = true;
          pieces.push(event(notification({ eventId: `big${i}`, data: "d".repeat(3000 + rand(5000)) }), eol));
          expected.push({ jsonrpc: "2.0", method: "notifications/events/event", params: { $oversized: true, eventId: `big${i}` } });
        } else {
          const message = notification({ eventId: `small${i}`, data: "s".repeat(rand(1500)) });
          pieces.push(`${rand(2) === 0 ? ": keepalive\n" : ""}${event(message, eol)}`);
          expected.push(message);
        }
      }
      const text = pieces.join("");
      const seed = rand(1000);
      const out = run(text, 2048, rand(4) === 0 ? everyByte : scattered(seed));
      expect(dataOf(out)).toEqual(expected);
      if (!anyBig) expect(out).toBe(text);
    }
  });
});
