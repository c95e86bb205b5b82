// A drained run of pushed notifications (src/events/subscription/push-loop.ts) is handled in
// slices that yield to the event loop, in order, all of it before the one commit; and a stream that
// ends with `overflow` (the last resort) is reported and reopened at once from the stored cursor.
import { expect, test } from "bun:test";
import type { SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { SLICE_EVENTS, handleRunInSlices, runPush } from "../../../src/events/subscription/push-loop.ts";
import { endingPushHost } from "../../helpers/ending-push-host.ts";
import { fakeHostedSubscription } from "../../helpers/hosted-subscription.ts";

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const spec = { server: "s", name: "e", arguments: {}, action: "follow_up", delivery: "push" } as const;
const event = (i: number) => ({ method: "notifications/events/event", params: { eventId: `e${i}`, name: "e", data: {}, cursor: String(i) } });

test("a run of several slices yields to the loop between them and accepts every event in order", async () => {
  const accepted: string[] = [];
  const host = { accept: (_s: unknown, o: { eventId: string }) => (accepted.push(o.eventId), "accepted"), gap: () => true, status: () => {} } as unknown as SubscriptionHost;
  const sub = fakeHostedSubscription(spec);
  const n = SLICE_EVENTS * 3 + 5;
  let ticks = 0;
  let ticking = true;
  const tick = () => {
    ticks++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const out = await handleRunInSlices(host, sub, Array.from({ length: n }, (_, i) => event(i + 1)));
  ticking = false;
  expect(accepted).toEqual(Array.from({ length: n }, (_, i) => `e${i + 1}`));
  expect(out.cursor).toEqual({ set: true, value: String(n) });
  // At least one macrotask ran per slice boundary while the run was handled.
  expect(ticks).toBeGreaterThanOrEqual(3);
});

test("an overflow end is reported and the stream reopened from the cursor at once", async () => {
  const statuses: { kind: string; error?: string }[] = [];
  const { clock, opened, host } = endingPushHost({ kind: "overflow" }, { streamBuffer: 4, status: (_s, st) => void statuses.push(st) });
  const sub = fakeHostedSubscription(spec);
  const controller = new AbortController();
  const loop = runPush(host, sub, controller.signal, { scheduler: clock });
  await settle();
  await settle();
  expect(opened).toHaveLength(2);
  expect(opened[1]).toMatchObject({ cursor: "5" });
  expect(statuses.some((s) => s.kind === "error" && /overflowed/.test(String(s.error)))).toBe(true);
  expect(clock.now()).toBe(0);
  controller.abort();
  await loop;
});

test("each slice's frames are held and released before the loop yields, so one slice is one transcript write", async () => {
  const log: string[] = [];
  let held = 0;
  const host = {
    accept: (_s: unknown, o: { eventId: string }) => (log.push(held > 0 ? "held" : "unheld"), "new"),
    gap: () => true,
    status: () => {},
    holdFrames: () => {
      held++;
      log.push("hold");
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held--;
        log.push("release");
      };
    },
  } as unknown as SubscriptionHost;
  const n = SLICE_EVENTS * 2 + 3;
  let yieldedWhileHeld = false;
  let ticking = true;
  const tick = () => {
    if (held > 0) yieldedWhileHeld = true;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  await handleRunInSlices(host, fakeHostedSubscription(spec), Array.from({ length: n }, (_, i) => event(i + 1)));
  ticking = false;
  expect(yieldedWhileHeld).toBe(false);
  expect(held).toBe(0);
  expect(log.filter((l) => l === "unheld")).toEqual([]);
  expect(log.filter((l) => l === "held")).toHaveLength(n);
  // At least three slices (at most 64 events each; a slow machine cuts them sooner, by time), each inside its own hold.
  const slices = log.join(" ").split("hold ").filter((s) => s !== "").map((s) => s.split(" ").filter((w) => w === "held").length);
  expect(slices.length).toBeGreaterThanOrEqual(3);
  expect(slices.every((k) => k > 0 && k <= SLICE_EVENTS)).toBe(true);
  expect(slices.reduce((a, b) => a + b, 0)).toBe(n);
});
