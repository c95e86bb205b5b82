// A push stream's silence watchdog (src/events/wire/push-stream.ts over rules/heartbeat-watch.ts),
// on the fake scheduler: `next()` reports "idle" exactly when the stream has been silent for its
// limit, counted from the last arrival, and not a tick before.
import { describe, expect, test } from "bun:test";
import { HEARTBEAT_METHOD } from "../../../src/events/rules/heartbeat-watch.ts";
import { PushStream, type StreamItem } from "../../../src/events/wire/push-stream.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";

const FALLBACK = 600_000;
const heartbeat = { method: HEARTBEAT_METHOD, params: { cursor: "7" } };
const event = { method: "notifications/events/event", params: { eventId: "e", name: "n", cursor: "8" } };

/** Lets settled promises run their continuations (one macrotask turn; no time passes on the fake clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Starts `next()` and tracks whether it has answered. */
function pending(stream: PushStream) {
  let result: StreamItem | "idle" | undefined;
  const done = stream.next(FALLBACK).then((r) => (result = r));
  return { done, get result() { return result; } };
}

function setup() {
  const clock = new FakeScheduler();
  let stopped = 0;
  const stream = new PushStream(100, () => stopped++, clock);
  return { clock, stream, stopped: () => stopped };
}

/** Hears `n` heartbeats `everyMs` apart, taking each out of the queue as the push loop would. */
async function heartbeats(clock: FakeScheduler, stream: PushStream, n: number, everyMs: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    clock.advance(everyMs);
    stream.offer(heartbeat);
    expect(await stream.next(FALLBACK)).toMatchObject({ kind: "notification" });
  }
}

describe("push stream watchdog", () => {
  test("once two heartbeats were seen, silence for twice the interval is idle, and not before", async () => {
    const { clock, stream } = setup();
    await heartbeats(clock, stream, 3, 600);
    const wait = pending(stream);
    clock.advance(1199);
    await settle();
    expect(wait.result).toBeUndefined();
    clock.advance(1);
    await wait.done;
    expect(wait.result).toBe("idle");
    expect(stream.silence(FALLBACK)).toEqual({ basis: "measured", ms: 1200, intervalMs: 600 });
  });

  test("before two heartbeats, only the fallback ends the wait", async () => {
    const { clock, stream } = setup();
    await heartbeats(clock, stream, 1, 500);
    const wait = pending(stream);
    clock.advance(FALLBACK - 1);
    await settle();
    expect(wait.result).toBeUndefined();
    clock.advance(1);
    await wait.done;
    expect(wait.result).toBe("idle");
    expect(stream.silence(FALLBACK)).toEqual({ basis: "fallback", ms: FALLBACK });
  });

  test("an event restarts the silence clock while the consumer waits", async () => {
    const { clock, stream } = setup();
    await heartbeats(clock, stream, 2, 500);
    const first = pending(stream);
    clock.advance(900);
    stream.offer(event);
    await first.done;
    expect(first.result).toMatchObject({ kind: "notification", notification: event });
    const second = pending(stream);
    clock.advance(999);
    await settle();
    expect(second.result).toBeUndefined();
    clock.advance(1);
    await second.done;
    expect(second.result).toBe("idle");
  });

  test("silence is counted from the arrival, not from when the consumer asks", async () => {
    const { clock, stream } = setup();
    await heartbeats(clock, stream, 2, 500);
    clock.advance(400);
    stream.offer(heartbeat);
    // The consumer was busy (a slow commit) for longer than the limit after that heartbeat arrived.
    clock.advance(1500);
    expect(await stream.next(FALLBACK)).toMatchObject({ kind: "notification" });
    expect(await stream.next(FALLBACK)).toBe("idle");
  });

  test("a wait leaves no timer behind, and an end wins over silence", async () => {
    const { clock, stream, stopped } = setup();
    await heartbeats(clock, stream, 2, 500);
    expect(clock.pending).toBe(0);
    const wait = pending(stream);
    await settle();
    expect(clock.pending).toBe(1);
    stream.finish({ kind: "final" });
    await wait.done;
    expect(wait.result).toEqual({ kind: "end", end: { kind: "final" } });
    expect(clock.pending).toBe(0);
    expect(stopped()).toBe(1);
  });
});
