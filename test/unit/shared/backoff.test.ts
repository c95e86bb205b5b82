/** The one retry schedule (src/shared/backoff.ts): 1 s doubling to a cap, starting over after a healthy stretch. */
import { describe, expect, test } from "bun:test";
import { SUPERVISION_BACKOFF, doublingBackoffMs, waitsAfterUptime } from "../../../src/shared/backoff.ts";

describe("doublingBackoffMs", () => {
  test("1 s doubling from the first wait (n = 0), capped", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 50].map((n) => doublingBackoffMs(n, 60_000))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
    expect(doublingBackoffMs(3, 5000)).toBe(5000);
    expect(doublingBackoffMs(2, 25, 10)).toBe(25);
    expect(doublingBackoffMs(1, 1000, 10)).toBe(20);
  });

  test("safe for huge, negative and non-finite counts", () => {
    expect(doublingBackoffMs(1e9, 30_000)).toBe(30_000);
    expect(doublingBackoffMs(Number.POSITIVE_INFINITY, 30_000)).toBe(30_000);
    expect(doublingBackoffMs(-4, 30_000)).toBe(1000);
    expect(doublingBackoffMs(Number.NaN, 30_000)).toBe(1000);
  });
});

describe("waitsAfterUptime", () => {
  test("a failure after the healthy stretch starts the row over; one sooner keeps it", () => {
    const { healthyMs } = SUPERVISION_BACKOFF;
    expect(waitsAfterUptime(6, healthyMs - 1, healthyMs)).toBe(6);
    expect(waitsAfterUptime(6, healthyMs, healthyMs)).toBe(0);
  });

  test("the supervision policy is 1 s doubling to 60 s, reset after 10 minutes up", () => {
    expect(SUPERVISION_BACKOFF).toEqual({ initialMs: 1000, capMs: 60_000, healthyMs: 600_000 });
  });
});
