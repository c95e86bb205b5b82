// The push loop's reconnect wait (src/events/subscription/push-loop.ts), on the fake scheduler: a
// stream that ended because its server went away is reopened from the cursor as soon as the
// subscription is woken (the pool's `connected`, serve.md §6 item 10), not after the rest of its
// backoff; without a wake the wait runs its full backoff.
import { expect, test } from "bun:test";
import type { HostedSubscription } from "../../../src/events/subscription/host.ts";
import { fakeHostedSubscription } from "../../helpers/hosted-subscription.ts";
import { runPush } from "../../../src/events/subscription/push-loop.ts";
import type { WakeSlot } from "../../../src/events/subscription/sleep.ts";
import { endingPushHost } from "../../helpers/ending-push-host.ts";

/** Lets settled promises run their continuations (one macrotask turn; no time passes on the fake clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A host whose every stream says `active` at `cursor` and then loses its connection (the first
 * stream only: later ones stay open until the test stops the loop).
 */
function setup() {
  const { clock, opened, host } = endingPushHost({ kind: "closed", reason: "the connection failed: ECONNREFUSED" }, { streamBuffer: 100 });
  const sub = fakeHostedSubscription({ server: "s", name: "e", arguments: {}, action: "follow_up", delivery: "push" });
  return { clock, opened, host, sub };
}

test("a stream that lost its server is reopened from the cursor once woken, with no time passed", async () => {
  const { clock, opened, host, sub } = setup();
  const slot: WakeSlot = { wake: null };
  const controller = new AbortController();
  const loop = runPush(host, sub, controller.signal, { wake: slot, scheduler: clock });
  await settle();
  // The stream ended after it was up: the loop waits (1 s, the first reconnect backoff) in the slot.
  expect(opened).toHaveLength(1);
  expect(sub.cursor).toBe("5");
  expect(slot.wake).not.toBeNull();

  slot.wake?.();
  await settle();
  expect(opened).toHaveLength(2);
  expect(opened[1]).toMatchObject({ cursor: "5" });
  expect(clock.now()).toBe(0);

  controller.abort(new Error("unsubscribed"));
  await loop;
});

test("without a wake the reconnect waits its backoff", async () => {
  const { clock, opened, host, sub } = setup();
  const controller = new AbortController();
  const loop = runPush(host, sub, controller.signal, { wake: { wake: null }, scheduler: clock });
  await settle();
  clock.advance(999);
  await settle();
  expect(opened).toHaveLength(1);
  clock.advance(1);
  await settle();
  expect(opened).toHaveLength(2);
  controller.abort(new Error("unsubscribed"));
  await loop;
});
