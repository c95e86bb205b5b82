// A drained run of pushed notifications (src/events/subscription/push-loop.ts) is handled in
// slices that yield to the event loop, in order, all of it before the one commit; and a stream that
// ends with `overflow` (the last resort) is reported and reopened at once from the stored cursor.
import { expect, test } from "bun:test";
import type { SubscriptionHost } from "../../../src/events/subscription/host.ts";
import { SLICE_EVENTS, handleRunInSlices, runPush } from "../../../src/events/subscription/push-loop.ts";
import { PushStream } from "../../../src/events/wire/push-stream.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
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
  const clock = new FakeScheduler();
  const opened: Record<string, unknown>[] = [];
  const statuses: { kind: string; error?: string }[] = [];
  const host = {
    tuning: { streamBuffer: 4, streamIdleMs: 600_000 },
    wire: () => ({
      openStream(params: Record<string, unknown>, capacity: number) {
        opened.push(params);
        const stream = new PushStream(capacity, () => {}, clock);
        if (opened.length === 1) {
          stream.offer({ method: "notifications/events/active", params: { cursor: "5" } });
          stream.finish({ kind: "overflow" });
        }
        return stream;
      },
    }),
    status: (_s: unknown, st: { kind: string; error?: string }) => statuses.push(st),
    commit: async () => {},
    persist: () => {},
  } as unknown as SubscriptionHost;
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
