/**
 * The pending queue's private copy of an entry (store/json-copy.ts, issue 16): for plain data it is
 * exactly what the JSON round trip (the add line read back) gives; for anything else it says so, and
 * the store takes the round trip. What is stored is then what a reload of the log yields.
 */
import { describe, expect, test } from "bun:test";
import { NOT_PLAIN, plainJsonCopy } from "../../../src/events/store/json-copy.ts";
import { EventsStore } from "../../../src/events/store/events-store.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const roundTrip = (v: unknown) => JSON.parse(JSON.stringify(v));

describe("plainJsonCopy", () => {
  const plain: [string, unknown][] = [
    ["an occurrence", { eventId: "evt-1", name: "ticket.updated", timestamp: "2026-12-01T00:00:00.000Z", data: { ticket_id: "T-1", n: 1.5, ok: true, none: null, list: [1, "a", [], {}] }, cursor: "1" }],
    ["integer-like keys (JSON puts them first)", { b: 1, 2: "two", a: 2, 1: "one" }],
    ["-0, large and small numbers", { z: -0, big: 1e21, small: 5e-324, neg: -12.25, list: [-0] }],
    ["undefined members and elements", { a: undefined, b: [undefined, 1], c: { d: undefined } }],
    ["a hole in an array", [1, , 3]],
    ["strings with lone surrogates, escapes and unicode", { s: "\udfff\n\"é😀", "k\u0000": "\u2028" }],
    ["a null-prototype object", Object.assign(Object.create(null), { a: 1 })],
    ["a gap notice", { gap: true, cursor: null, reason: "truncated", eventId: null }],
  ];
  for (const [what, value] of plain) {
    test(`${what}: equal to the JSON round trip, keys in the same order`, () => {
      const c = plainJsonCopy(value);
      expect(c).not.toBe(NOT_PLAIN);
      expect(JSON.stringify(c)).toBe(JSON.stringify(value));
      expect(c).toStrictEqual(roundTrip(value));
      if (typeof value === "object" && value !== null && !Array.isArray(value)) expect(Object.keys(c as object)).toEqual(Object.keys(roundTrip(value)));
    });
  }

  test("-0 becomes 0, as a reload has it", () => {
    expect(Object.is((plainJsonCopy({ z: -0 }) as { z: number }).z, 0)).toBe(true);
  });

  test("the copy shares nothing with its source", () => {
    const src = { data: { list: [{ a: 1 }] } };
    const c = plainJsonCopy(src) as typeof src;
    src.data.list[0]!.a = 2;
    src.data.list.push({ a: 3 });
    expect(c).toEqual({ data: { list: [{ a: 1 }] } });
  });

  const notPlain: [string, unknown][] = [
    ["a Date (toJSON)", { at: new Date(0) }],
    ["a class instance", { x: new (class { a = 1 })() }],
    ["a Map", { m: new Map([[1, 2]]) }],
    ["NaN", { n: Number.NaN }],
    ["Infinity in an array", [Number.POSITIVE_INFINITY]],
    ["a function member", { f: () => 1 }],
    ["a function element", [() => 1]],
    ["an own __proto__ key", JSON.parse('{"__proto__":{"x":1}}')],
    ["an own toJSON member", { toJSON: "not a function" }],
    ["a String object", { s: new String("x") }],
    ["nesting deeper than the copy goes", JSON.parse(`${"[".repeat(200)}${"]".repeat(200)}`)],
  ];
  for (const [what, value] of notPlain) {
    test(`${what}: not plain, left to the JSON round trip`, () => {
      expect(plainJsonCopy(value)).toBe(NOT_PLAIN);
    });
  }
});

describe("the pending queue's entries", () => {
  test("stored entries equal what a reload of the log yields, plain or not", async () => {
    const tmp = tmpDir("vigil-unit-json-copy");
    try {
      const store = await EventsStore.open(tmp.path, { maxPending: 100, maxPendingBytes: 1 << 20 });
      const events: Record<string, unknown>[] = [
        { eventId: "e1", name: "n", data: { z: -0, u: undefined, list: [undefined, 2], 3: "c", b: "b" } },
        { eventId: "e2", name: "n", data: { at: new Date(0), nan: Number.NaN } },
        JSON.parse('{"eventId":"e3","name":"n","data":{"__proto__":{"x":1}}}'),
      ];
      const base = { action: "follow_up" as const, server: "s", name: "n", arguments: { project: "p", n: -0 } };
      const stored = events.map((event) => store.tryAdd({ ...base, event: event as never }));
      await store.commit();
      await store.close();
      const reloaded = await EventsStore.open(tmp.path, { maxPending: 100, maxPendingBytes: 1 << 20 });
      expect(JSON.stringify(reloaded.pending())).toBe(JSON.stringify(stored));
      expect(reloaded.pending()).toStrictEqual(stored as never);
      expect(Object.is(stored[0]!.arguments.n, 0)).toBe(true);
      // The caller's objects are not the stored ones.
      (events[0]!.data as Record<string, unknown>).b = "changed";
      expect((stored[0]!.event as { data: { b: string } }).data.b).toBe("b");
      await reloaded.close();
    } finally {
      tmp.cleanup();
    }
  });
});
