// The push watchdog's measurement and deadline (src/events/rules/heartbeat-watch.ts), driven by the
// fake scheduler's clock: time only moves when the test says so.
import { describe, expect, test } from "bun:test";
import {
  GAP_WINDOW,
  HEARTBEAT_METHOD,
  MIN_SILENCE_MS,
  type HeartbeatWatch,
  describeSilence,
  measuredIntervalMs,
  observed,
  openedWatch,
  silenceDeadline,
  silenceLimit,
} from "../../../src/events/rules/heartbeat-watch.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";

const FALLBACK = 70_000;
const EVENT = "notifications/events/event";

/** A stream opened now on `clock`, with a `hear(method, afterMs)` that advances and observes. */
function stream(clock = new FakeScheduler()) {
  let watch: HeartbeatWatch = openedWatch(clock.now());
  return {
    clock,
    get watch() {
      return watch;
    },
    hear(method: string, afterMs: number) {
      clock.advance(afterMs);
      watch = observed(watch, method, clock.now());
    },
  };
}

describe("heartbeat watch", () => {
  test("until two heartbeats were seen the fallback applies, counted from the opening", () => {
    const s = stream();
    expect(silenceLimit(s.watch, FALLBACK)).toEqual({ basis: "fallback", ms: FALLBACK });
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(FALLBACK);

    s.hear(HEARTBEAT_METHOD, 500);
    expect(measuredIntervalMs(s.watch)).toBeNull();
    expect(silenceLimit(s.watch, FALLBACK)).toEqual({ basis: "fallback", ms: FALLBACK });
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(s.clock.now() + FALLBACK);
  });

  test("after two heartbeats the limit is twice the measured interval", () => {
    const s = stream();
    s.hear(HEARTBEAT_METHOD, 100);
    s.hear(HEARTBEAT_METHOD, 700);
    expect(measuredIntervalMs(s.watch)).toBe(700);
    expect(silenceLimit(s.watch, FALLBACK)).toEqual({ basis: "measured", ms: 1400, intervalMs: 700 });
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(s.clock.now() + 1400);
    // The measurement wins over the fallback in both directions: a tiny fallback does not cut it short.
    expect(silenceLimit(s.watch, 200).ms).toBe(1400);
  });

  test("a fast heartbeat never makes the limit shorter than 1 s", () => {
    const s = stream();
    for (let i = 0; i < 5; i++) s.hear(HEARTBEAT_METHOD, 100);
    expect(measuredIntervalMs(s.watch)).toBe(100);
    expect(silenceLimit(s.watch, FALLBACK)).toEqual({ basis: "measured", ms: MIN_SILENCE_MS, intervalMs: 100 });
  });

  test("an event restarts the silence clock but is not a heartbeat", () => {
    const s = stream();
    s.hear(HEARTBEAT_METHOD, 0);
    s.hear(HEARTBEAT_METHOD, 600);
    s.hear(EVENT, 900);
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(s.clock.now() + 1200);
    s.hear("notifications/events/error", 300);
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(s.clock.now() + 1200);
    // The next heartbeat's gap runs from the previous heartbeat (1800 ms), not from the event.
    s.hear(HEARTBEAT_METHOD, 600);
    expect(measuredIntervalMs(s.watch)).toBe(1800);
  });

  test("events alone never measure anything", () => {
    const s = stream();
    for (let i = 0; i < 20; i++) s.hear(EVENT, 50);
    expect(silenceLimit(s.watch, FALLBACK)).toEqual({ basis: "fallback", ms: FALLBACK });
    expect(silenceDeadline(s.watch, FALLBACK)).toBe(s.clock.now() + FALLBACK);
  });

  test("two bunched heartbeats do not shrink the estimate once a real gap was seen", () => {
    const s = stream();
    s.hear(HEARTBEAT_METHOD, 0);
    s.hear(HEARTBEAT_METHOD, 5_000);
    s.hear(HEARTBEAT_METHOD, 9_000);
    s.hear(HEARTBEAT_METHOD, 0);
    expect(measuredIntervalMs(s.watch)).toBe(9_000);
    expect(silenceLimit(s.watch, FALLBACK).ms).toBe(18_000);
  });

  test("memory is bounded: only the last GAP_WINDOW gaps count, so a server that speeds up is followed", () => {
    const s = stream();
    s.hear(HEARTBEAT_METHOD, 0);
    s.hear(HEARTBEAT_METHOD, 30_000);
    for (let i = 0; i < GAP_WINDOW - 1; i++) s.hear(HEARTBEAT_METHOD, 500);
    expect(measuredIntervalMs(s.watch)).toBe(30_000);
    s.hear(HEARTBEAT_METHOD, 500);
    expect(measuredIntervalMs(s.watch)).toBe(500);
    for (let i = 0; i < 1000; i++) s.hear(HEARTBEAT_METHOD, 500);
    expect(s.watch.gaps.length).toBe(GAP_WINDOW);
  });

  test("a server that slows down is followed at once", () => {
    const s = stream();
    for (let i = 0; i < 4; i++) s.hear(HEARTBEAT_METHOD, 500);
    s.hear(HEARTBEAT_METHOD, 4_000);
    expect(silenceLimit(s.watch, FALLBACK).ms).toBe(8_000);
  });

  test("a clock reading earlier than the last one never moves the watch back", () => {
    const w = observed(observed(openedWatch(1_000), HEARTBEAT_METHOD, 2_000), HEARTBEAT_METHOD, 1_500);
    expect(w.lastActivityAt).toBe(2_000);
    expect(w.gaps).toEqual([0]);
    expect(silenceDeadline(w, FALLBACK)).toBe(2_000 + MIN_SILENCE_MS);
  });

  test("the reason names the measured interval, or the fallback", () => {
    expect(describeSilence({ basis: "measured", ms: 1020, intervalMs: 510 })).toBe(
      "the event stream was silent for 1020 ms (2 × its measured heartbeat interval of 510 ms, at least 1000 ms); reconnecting from the cursor",
    );
    expect(describeSilence({ basis: "fallback", ms: 70_000 })).toBe(
      "the event stream was silent for 70000 ms (VIGIL_EVENTS_STREAM_IDLE_MS; fewer than two heartbeats seen); reconnecting from the cursor",
    );
  });
});
