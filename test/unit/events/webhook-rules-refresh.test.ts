/**
 * The refresh schedule of a webhook subscription (design notes §4.4; wire notes §9.4, §11): the
 * RFC 3339 grammar (lenient syntax, strict values) and the delay rule, with `now` injected.
 */
import { describe, expect, test } from "bun:test";
import { parseRfc3339, refreshDelayMs } from "../../../src/events/webhook/refresh-schedule.ts";

const BASE = Date.UTC(2026, 1, 19, 16, 30, 0);

describe("parseRfc3339", () => {
  const accepted: [string, number][] = [
    ["2026-02-19T16:30:00Z", BASE],
    ["2026-02-19t16:30:00z", BASE],
    ["2026-02-19 16:30:00Z", BASE],
    ["2026-02-19T16:30Z", BASE],
    ["2026-02-19T16:30:00.5Z", BASE + 500],
    ["2026-02-19T16:30:00.123Z", BASE + 123],
    ["2026-02-19T16:30:00.123456789123456Z", BASE + 123],
    ["2026-02-19T16:30:00.9999Z", BASE + 999],
    ["2026-02-19T17:30:00+01:00", BASE],
    ["2026-02-19T17:30:00+0100", BASE],
    ["2026-02-19T17:30:00+01", BASE],
    ["2026-02-19T11:00:00-05:30", BASE],
    ["2026-02-19T11:00-0530", BASE],
    ["2026-02-19T16:30:00+00:00", BASE],
    ["2026-02-19T16:30:00-00:00", BASE],
    ["2026-02-19 17:30+0100", BASE],
    ["2024-02-29T00:00:00Z", Date.UTC(2024, 1, 29)],
    ["2000-02-29T00:00:00Z", Date.UTC(2000, 1, 29)],
    ["2026-12-31T23:59:59Z", Date.UTC(2026, 11, 31, 23, 59, 59)],
    ["2026-06-30T23:59:60Z", Date.UTC(2026, 6, 1)], // a leap second
    ["2026-02-19T16:30:00", BASE], // no offset: read as UTC
    ["2026-02-19T16:30", BASE],
    ["0050-01-01T00:00:00Z", new Date("0050-01-01T00:00:00Z").getTime()],
  ];
  for (const [text, ms] of accepted) test(`accepts ${JSON.stringify(text)}`, () => expect(parseRfc3339(text)).toBe(ms));

  const refused = [
    "2026-13-01T00:00:00Z",
    "2026-00-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "1900-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2026-01-32T00:00:00Z",
    "2026-02-19T24:00:00Z",
    "2026-02-19T16:60:00Z",
    "2026-02-19T16:30:61Z",
    "2026-02-19T16:30:00+24:00",
    "2026-02-19T16:30:00+01:60",
    "2026-02-19",
    "2026-02-19T16:30:00.Z",
    "2026-02-19T16:30.5Z", // a fraction needs seconds
    "2026-02-19T16:30:00+1",
    "2026-02-19T16:30:00+01:0",
    "2026-02-19_16:30:00Z",
    "26-02-19T16:30:00Z",
    "+2026-02-19T16:30:00Z",
    " 2026-02-19T16:30:00Z",
    "2026-02-19T16:30:00Z ",
    "2026-02-19T16:30:00ZZ",
    "２０２６-02-19T16:30:00Z", // full-width digits
    "1739980800",
    "",
    `2026-02-19T16:30:00.${"1".repeat(100)}Z`, // bounded input
  ];
  for (const text of refused) test(`refuses ${JSON.stringify(text.slice(0, 40))}`, () => expect(parseRfc3339(text)).toBeNull());
});

describe("refreshDelayMs", () => {
  const now = BASE;
  const iso = (ms: number) => new Date(ms).toISOString();

  test("2.5 s left: ¾ of it", () => expect(refreshDelayMs(iso(now + 2500), now)).toEqual({ delayMs: 1875, problem: null }));

  test("600 ms left: not sooner than 500 ms, still before the expiry", () => {
    expect(refreshDelayMs(iso(now + 600), now)).toEqual({ delayMs: 500, problem: null });
  });

  test("100 ms left: ¾ of it, strictly before the expiry", () => {
    expect(refreshDelayMs(iso(now + 100), now)).toEqual({ delayMs: 75, problem: null });
  });

  test("every remaining time from 1 ms to 3 s refreshes strictly before the expiry", () => {
    for (let left = 1; left <= 3000; left++) {
      const { delayMs } = refreshDelayMs(iso(now + left), now);
      expect(delayMs).toBeLessThan(left);
      expect(delayMs).toBeGreaterThanOrEqual(Math.min(500, Math.floor(left * 0.75)));
    }
  });

  test("already expired (−5 s) or exactly now: after the 500 ms floor, never at once (a server that keeps answering so is not re-subscribed in a tight loop)", () => {
    expect(refreshDelayMs(iso(now - 5000), now)).toEqual({ delayMs: 500, problem: null });
    expect(refreshDelayMs(iso(now), now)).toEqual({ delayMs: 500, problem: null });
  });

  test("one hour left: 45 minutes; a far-off expiry still refreshes hourly (no timer overflow)", () => {
    expect(refreshDelayMs(iso(now + 3_600_000), now)).toEqual({ delayMs: 2_700_000, problem: null });
    expect(refreshDelayMs(iso(now + 365 * 86_400_000), now)).toEqual({ delayMs: 3_600_000, problem: null });
    expect(refreshDelayMs("9999-12-31T23:59:59Z", now)).toEqual({ delayMs: 3_600_000, problem: null });
  });

  test("an offset expiry is read in UTC", () => {
    expect(refreshDelayMs("2026-02-19T17:30:04+01:00", now)).toEqual({ delayMs: 3000, problem: null });
  });

  test("null (no expiry): hourly", () => expect(refreshDelayMs(null, now)).toEqual({ delayMs: 3_600_000, problem: null }));

  test("garbage: 30 s, with a problem naming the length, never the text", () => {
    for (const garbage of ["tomorrow", "", "2026-02-30T00:00:00Z", `<script>${"x".repeat(5000)}`, "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="]) {
      const got = refreshDelayMs(garbage, now);
      expect(got.delayMs).toBe(30_000);
      expect(got.problem).toContain(`${garbage.length} characters`);
      if (garbage.length > 0) expect(got.problem).not.toContain(garbage);
    }
  });
});
