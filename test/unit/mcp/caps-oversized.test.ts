import { describe, expect, test } from "bun:test";
import { judgeHead, standInFromHead, standInFromMessage } from "../../../src/mcp/caps/oversized.ts";

const enc = new TextEncoder();
/** The first `n` bytes of a message, as a transport keeps them. */
const head = (text: string, n = 4096) => enc.encode(text).subarray(0, n);
const big = "x".repeat(10_000);
const SUB = "io.modelcontextprotocol/subscriptionId";

describe("standInFromHead", () => {
  test("method first: a stand-in with the scalars that were complete in the head", () => {
    const msg = `{"jsonrpc":"2.0","method":"notifications/events/event","params":{"eventId":"evt_9","name":"ticket.updated","timestamp":"2026-01-01T00:00:00Z","cursor":"c-42","_meta":{"${SUB}":7},"data":{"blob":"${big}"}}}`;
    expect(standInFromHead(head(msg))).toEqual({
      jsonrpc: "2.0",
      method: "notifications/events/event",
      params: { $oversized: true, eventId: "evt_9", name: "ticket.updated", cursor: "c-42", _meta: { [SUB]: 7 } },
    });
  });

  test("params first (payload before method): an ambiguous stand-in", () => {
    const msg = `{"params":{"_meta":{"${SUB}":"s-1"},"eventId":"e\\"1","cursor":null,"data":{"blob":"${big}"}},"method":"notifications/events/event","jsonrpc":"2.0"}`;
    expect(standInFromHead(head(msg))).toEqual({
      jsonrpc: "2.0",
      method: "notifications/events/event",
      params: { $oversized: true, $ambiguous: true, eventId: 'e"1', cursor: null, _meta: { [SUB]: "s-1" } },
    });
  });

  test("values cut off by the end of the head are left out, never guessed", () => {
    const msg = `{"method":"notifications/events/event","params":{"eventId":"evt_1","name":"n","data":"${big}","cursor":"late"}}`;
    const standIn = standInFromHead(head(msg));
    expect(standIn?.params).toEqual({ $oversized: true, eventId: "evt_1", name: "n" });
    // A head ending inside a string value.
    const cut = standInFromHead(head(`{"method":"notifications/events/event","params":{"eventId":"evt_12345`));
    expect(cut?.params).toEqual({ $oversized: true });
    // A number cut at the end may be a prefix of a longer one.
    const num = standInFromHead(head(`{"method":"notifications/events/event","params":{"_meta":{"${SUB}":12`));
    expect(num?.params).toEqual({ $oversized: true });
    // A head ending inside the method string: the method was never seen.
    const method = standInFromHead(head(`{"jsonrpc":"2.0","method":"notifications/ev`));
    expect(method?.params).toEqual({ $oversized: true, $ambiguous: true });
  });

  test("nested lookalike keys do not count: only params' own scalars and _meta's subscription id", () => {
    const msg = `{"params":{"data":{"method":"tools/call","eventId":"inner","result":1,"id":3},"eventId":"outer","_meta":{"x":{"${SUB}":99},"${SUB}":1}},"method":"notifications/events/event","pad":"${big}"}`;
    // The method follows params but still falls inside the head: not ambiguous.
    expect(standInFromHead(head(msg))?.params).toEqual({ $oversized: true, eventId: "outer", _meta: { [SUB]: 1 } });
  });

  test("a response head is not ours", () => {
    expect(standInFromHead(head(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"${big}"}]}}`))).toBeNull();
    expect(standInFromHead(head(`{"result":{"events":["${big}"]},"jsonrpc":"2.0","id":4}`))).toBeNull();
    expect(standInFromHead(head(`{"error":{"code":-1,"message":"${big}"}}`))).toBeNull();
    expect(judgeHead(head(`{"result":{"x":"${big}"}}`)).kind).toBe("response");
  });

  test("a request head is not ours, whether or not the method was reached", () => {
    expect(standInFromHead(head(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"x":"${big}"}}`))).toBeNull();
    expect(standInFromHead(head(`{"jsonrpc":"2.0","id":1,"params":{"eventId":"e","x":"${big}"}}`))).toBeNull();
    expect(judgeHead(head(`{"id":"r","method":"elicitation/create","params":{"x":"${big}"}}`)).kind).toBe("request");
  });

  test("other notifications are not ours", () => {
    expect(standInFromHead(head(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${big}"}}`))).toBeNull();
    expect(standInFromHead(head(`{"method":"notifications/events/heartbeat","params":{"cursor":"c","pad":"${big}"}}`))).toBeNull();
  });

  test("garbage never throws and is never an event", () => {
    const inputs: Uint8Array[] = [
      new Uint8Array(0),
      head(big),
      head(`[{"method":"notifications/events/event"}]`),
      head(`"notifications/events/event"`),
      head(`{"method":"notifications/events/event"}`).map((b) => b ^ 0x55),
      Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256),
      head(`{"jsonrpc":"2.0"}`), // complete, and no method: not a notification
      head(`{"method":7,"params":{}}`),
    ];
    for (const input of inputs) expect(standInFromHead(input)).toBeNull();
    // Broken JSON after the start stops the scan where it breaks; what came before still counts.
    expect(standInFromHead(head(`{"params":{"eventId":"ok"},"method" 7 garbage`))?.params).toEqual({
      $oversized: true,
      $ambiguous: true,
      eventId: "ok",
    });
    // Deep nesting costs no recursion.
    expect(() => standInFromHead(head(`{"params":{"data":${"[".repeat(4000)}`))).not.toThrow();
  });

  test("a head cut inside a multi-byte character", () => {
    const msg = `{"method":"notifications/events/event","params":{"name":"n","data":"${"é".repeat(3000)}"}}`;
    expect(standInFromHead(head(msg))?.params).toEqual({ $oversized: true, name: "n" });
  });

  test("only the first 4 KiB are read", () => {
    const msg = `{"params":{"data":"${"z".repeat(5000)}"},"method":"tools/call","id":1}`;
    expect(standInFromHead(enc.encode(msg))?.params).toEqual({ $oversized: true, $ambiguous: true });
  });
});

describe("standInFromMessage", () => {
  test("an event notification becomes a stand-in with its scalars only", () => {
    const message = {
      jsonrpc: "2.0",
      method: "notifications/events/event",
      params: { eventId: "e1", name: "n", timestamp: "t", cursor: null, data: { blob: big }, _meta: { [SUB]: 3, other: 1 } },
    };
    expect(standInFromMessage(message)).toEqual({
      jsonrpc: "2.0",
      method: "notifications/events/event",
      params: { $oversized: true, eventId: "e1", name: "n", cursor: null, _meta: { [SUB]: 3 } },
    });
    expect(standInFromMessage({ jsonrpc: "2.0", method: "notifications/events/event" })).toEqual({
      jsonrpc: "2.0",
      method: "notifications/events/event",
      params: { $oversized: true },
    });
  });

  test("responses, requests, other notifications and garbage are not", () => {
    expect(standInFromMessage({ jsonrpc: "2.0", id: 1, result: { big } })).toBeNull();
    expect(standInFromMessage({ jsonrpc: "2.0", id: 1, error: { code: 1, message: big } })).toBeNull();
    expect(standInFromMessage({ jsonrpc: "2.0", id: 1, method: "sampling/createMessage", params: {} })).toBeNull();
    expect(standInFromMessage({ jsonrpc: "2.0", method: "notifications/message", params: { data: big } })).toBeNull();
    for (const garbage of [null, undefined, "x", 1, [], { params: {} }]) expect(standInFromMessage(garbage)).toBeNull();
  });
});
