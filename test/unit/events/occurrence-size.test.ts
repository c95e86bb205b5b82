// An occurrence too large for its `mcp_event` frame is an `oversized` gap (src/events/rules/occurrence.ts;
// issue 11): the bound is half serve's frame cap, measured as the event's JSON in UTF-8 bytes.
import { describe, expect, test } from "bun:test";
import { OCCURRENCE_LIMITS, checkOccurrence } from "../../../src/events/rules/occurrence.ts";
import { MAX_FRAME_BYTES } from "../../../src/shared/frame-cap.ts";

const event = (blob: string) => ({ eventId: "big-1", name: "ticket.updated", data: { blob } });
const overhead = JSON.stringify(event("")).length;

describe("the size of an occurrence", () => {
  test("is bounded at 4 MiB of JSON, comfortably under the 8 MiB frame cap", () => {
    expect(OCCURRENCE_LIMITS.eventBytes).toBe(4 * 1024 * 1024);
    expect(OCCURRENCE_LIMITS.eventBytes).toBeLessThanOrEqual(MAX_FRAME_BYTES / 2);
  });

  test("an event of exactly the bound is accepted; one byte more is an oversized gap with its id", () => {
    expect(checkOccurrence(event("x".repeat(OCCURRENCE_LIMITS.eventBytes - overhead))).ok).toBe(true);
    expect(checkOccurrence(event("x".repeat(OCCURRENCE_LIMITS.eventBytes - overhead + 1)))).toEqual({
      ok: false,
      reason: "oversized",
      problem: `the event is ${OCCURRENCE_LIMITS.eventBytes + 1} bytes as JSON (at most ${OCCURRENCE_LIMITS.eventBytes} fit in a frame)`,
      eventId: "big-1",
      seenKey: "big-1",
    });
  });

  test("bytes are counted, not characters: 2 Mi three-byte characters are over the bound", () => {
    const check = checkOccurrence(event("€".repeat(2 * 1024 * 1024)));
    expect(check).toMatchObject({ ok: false, reason: "oversized" });
  });

  test("any other problem is an invalid_event, checked before the size", () => {
    expect(checkOccurrence({ eventId: "", name: "n", data: "x".repeat(5_000_000) })).toMatchObject({ ok: false, reason: "invalid_event" });
  });
});
