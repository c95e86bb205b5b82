import { describe, expect, test } from "bun:test";
import { adoptCursor, nextPollDelayMs, parsePollResult } from "../../../src/events/rules/poll-rules.ts";

describe("parsePollResult", () => {
  test("a full result", () => {
    const event = { eventId: "e1", name: "n", timestamp: "2026-01-01T00:00:00Z", data: {} };
    expect(parsePollResult({ events: [event], cursor: "c9", hasMore: true, truncated: true, nextPollMs: 5000 })).toEqual({
      entries: [{ ok: true, occurrence: event }],
      cursor: "c9",
      refusedCursorChars: null,
      hasMore: true,
      truncated: true,
      nextPollMs: 5000,
    });
  });

  test("only `events` is required; the rest default", () => {
    expect(parsePollResult({ events: [] })).toEqual({ entries: [], cursor: null, refusedCursorChars: null, hasMore: false, truncated: false, nextPollMs: null });
    expect(parsePollResult({ events: [], cursor: 42, hasMore: "yes", truncated: 1, nextPollMs: -5 })).toMatchObject({
      cursor: null,
      hasMore: false,
      truncated: false,
      nextPollMs: null,
    });
    for (const nextPollMs of [Number.NaN, Number.POSITIVE_INFINITY, "1000", null]) {
      expect(parsePollResult({ events: [], nextPollMs })).toMatchObject({ nextPollMs: null });
    }
    expect(parsePollResult({ events: [], nextPollMs: 0 })).toMatchObject({ nextPollMs: 0 });
    expect(parsePollResult({ events: [], resultType: "complete", extra: true })).toMatchObject({ entries: [] });
  });

  test("a missing or non-array `events`, or a non-object result, is an error", () => {
    for (const bad of [{}, { events: null }, { events: {} }, { events: "[]" }, null, [], "x", 3]) {
      expect(parsePollResult(bad)).toHaveProperty("error");
    }
  });

  test("each event is checked in its place: non-objects and invalid occurrences become entries to report", () => {
    const a = { eventId: "a", name: "n" };
    const b = { eventId: "b", name: "n" };
    const page = parsePollResult({ events: [1, a, null, "s", [], { eventId: "x".repeat(1025), name: "n" }, b] });
    if ("error" in page) throw new Error(page.error);
    expect(page.entries.map((e) => e.ok)).toEqual([false, true, false, false, false, false, true]);
    expect(page.entries[1]).toEqual({ ok: true, occurrence: a });
    expect(page.entries[5]).toMatchObject({ ok: false, eventId: `${"x".repeat(256)}…` });
  });

  test("a cursor too long to store is not adopted, and its length is reported", () => {
    const long = "c".repeat(65_537);
    expect(parsePollResult({ events: [], cursor: long })).toMatchObject({ cursor: null, refusedCursorChars: 65_537 });
    expect(parsePollResult({ events: [], cursor: "c".repeat(65_536) })).toMatchObject({ refusedCursorChars: null });
  });

  test("more than 10,000 events is refused", () => {
    expect(parsePollResult({ events: new Array(10_000).fill({ eventId: "e", name: "n" }) })).not.toHaveProperty("error");
    expect(parsePollResult({ events: new Array(10_001).fill({}) })).toHaveProperty("error");
  });
});

describe("nextPollDelayMs", () => {
  const floorMs = 1000;
  test("hasMore with new events polls at once", () => {
    expect(nextPollDelayMs({ hasMore: true, newEvents: 3, nextPollMs: 60_000, floorMs })).toBe(0);
  });

  test("hasMore with nothing new (empty, or only duplicates) waits the floor, never 0", () => {
    expect(nextPollDelayMs({ hasMore: true, newEvents: 0, nextPollMs: 60_000, floorMs })).toBe(floorMs);
    expect(nextPollDelayMs({ hasMore: true, newEvents: 0, nextPollMs: 0, floorMs })).toBe(floorMs);
  });

  test("otherwise nextPollMs, defaulting to 30 s, never below the floor", () => {
    expect(nextPollDelayMs({ hasMore: false, newEvents: 5, nextPollMs: 5000, floorMs })).toBe(5000);
    expect(nextPollDelayMs({ hasMore: false, newEvents: 0, nextPollMs: null, floorMs })).toBe(30_000);
    expect(nextPollDelayMs({ hasMore: false, newEvents: 0, nextPollMs: null, floorMs, defaultMs: 7000 })).toBe(7000);
    expect(nextPollDelayMs({ hasMore: false, newEvents: 0, nextPollMs: 10, floorMs })).toBe(floorMs);
    expect(nextPollDelayMs({ hasMore: false, newEvents: 0, nextPollMs: 0, floorMs })).toBe(floorMs);
  });

  test("an absurd nextPollMs is capped (a timer past 2^31 ms would fire at once)", () => {
    expect(nextPollDelayMs({ hasMore: false, newEvents: 0, nextPollMs: 1e15, floorMs })).toBeLessThan(2 ** 31);
  });
});

describe("adoptCursor", () => {
  test("every string replaces; null, absent and garbage keep the current cursor", () => {
    expect(adoptCursor("c1", "c2")).toBe("c2");
    expect(adoptCursor(null, "c2")).toBe("c2");
    expect(adoptCursor("c1", "")).toBe("");
    expect(adoptCursor("c1", null)).toBe("c1");
    expect(adoptCursor("c1", undefined)).toBe("c1");
    expect(adoptCursor(null, null)).toBeNull();
  });

  test("never invents one from something that is not a cursor", () => {
    for (const garbage of [7, { cursor: "x" }, ["c"], true]) {
      expect(adoptCursor(null, garbage)).toBeNull();
      expect(adoptCursor("keep", garbage)).toBe("keep");
    }
  });

  test("a cursor too long to store keeps the current one (storing it would fail every later write)", () => {
    expect(adoptCursor("keep", "c".repeat(65_537))).toBe("keep");
    expect(adoptCursor("keep", "c".repeat(65_536))).toBe("c".repeat(65_536));
  });
});
