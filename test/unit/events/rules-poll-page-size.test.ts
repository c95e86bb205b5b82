// The page size of a poll loop facing answers over the message cap (src/events/rules/poll-page-size.ts;
// issue 11): halve down to one event, then report once and back off from the same cursor; a page
// that was read restores the full size.
import { describe, expect, test } from "bun:test";
import { afterOverCap, afterReadPage, fullPageSizing, isOverCapAnswer, reported } from "../../../src/events/rules/poll-page-size.ts";

const bounds = { floorMs: 100, capMs: 60_000 };

describe("afterOverCap", () => {
  test("halves the page at once, from the same cursor, down to one event", () => {
    let sizing = fullPageSizing(50);
    const sizes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const step = afterOverCap(sizing, "c-7", bounds);
      expect(step).toMatchObject({ waitMs: 0, report: false });
      sizing = step.sizing;
      sizes.push(sizing.maxEvents);
    }
    expect(sizes).toEqual([25, 12, 6, 3, 1]);
  });

  test("one event over the cap: reported once, then polled for again with backoff (1 s doubling, capped, never under the floor)", () => {
    let sizing = fullPageSizing(1);
    const steps = [];
    for (let i = 0; i < 8; i++) {
      const step = afterOverCap(sizing, "c-7", { floorMs: 1500, capMs: 16_000 });
      steps.push({ report: step.report, waitMs: step.waitMs, maxEvents: step.sizing.maxEvents });
      sizing = step.report ? reported(step.sizing) : step.sizing;
    }
    expect(steps.map((s) => s.report)).toEqual([true, false, false, false, false, false, false, false]);
    expect(steps.map((s) => s.waitMs)).toEqual([1500, 2000, 4000, 8000, 16_000, 16_000, 16_000, 16_000]);
    expect(steps.every((s) => s.maxEvents === 1)).toBe(true);
  });

  test("a report that could not be recorded (queue full) is tried again on the next answer", () => {
    const first = afterOverCap(fullPageSizing(1), "c", bounds);
    expect(first.report).toBe(true);
    expect(afterOverCap(first.sizing, "c", bounds).report).toBe(true);
  });

  test("stuck at another cursor is a new event: told again, backoff from the start", () => {
    const stuck = reported(afterOverCap(afterOverCap(fullPageSizing(1), "a", bounds).sizing, "a", bounds).sizing);
    const step = afterOverCap(stuck, "b", bounds);
    expect(step).toMatchObject({ report: true, waitMs: 1000 });
  });

  test("a page that was read restores the full size and forgets the stuck event", () => {
    const stuck = reported(afterOverCap(fullPageSizing(1), "a", bounds).sizing);
    const restored = afterReadPage(50);
    expect(restored).toEqual({ maxEvents: 50, stuck: null });
    expect(afterOverCap(restored, "a", bounds).sizing.maxEvents).toBe(25);
    expect(stuck.stuck?.reported).toBe(true);
  });
});

describe("isOverCapAnswer", () => {
  test("matches the transports' over-cap error only", () => {
    expect(isOverCapAnswer({ code: -32000, message: "response larger than 65536 bytes" })).toBe(true);
    expect(isOverCapAnswer({ code: -32603, message: "response larger than 65536 bytes" })).toBe(false);
    expect(isOverCapAnswer({ code: -32000, message: "Connection closed" })).toBe(false);
    expect(isOverCapAnswer({ code: -32000, message: "response larger than 65536 bytes, and more" })).toBe(false);
  });
});
