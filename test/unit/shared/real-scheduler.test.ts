/**
 * realScheduler (src/shared/time.ts): a timer due now runs at the next turn of the event loop,
 * like setImmediate, not as a 0 ms timer (which Bun holds for at least 1 ms: a coalescer with no
 * window idled that long before every batch). Still never inside the call that armed it, in the
 * order armed, and cancellable.
 */
import { expect, test } from "bun:test";
import { realScheduler } from "../../../src/shared/time.ts";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test("a timer due now runs at the next turn, in the order armed — before an immediate armed after it", async () => {
  const order: string[] = [];
  realScheduler.setTimeout(() => order.push("now-1"), 0);
  realScheduler.setTimeout(() => order.push("past"), -5);
  setImmediate(() => order.push("immediate"));
  realScheduler.setTimeout(() => order.push("now-2"), 0);
  expect(order).toEqual([]); // not inside the call that armed it
  await turn();
  await turn();
  expect(order).toEqual(["now-1", "past", "immediate", "now-2"]);
});

test("clearTimeout cancels a timer due now, and a later one", async () => {
  const ran: string[] = [];
  const now = realScheduler.setTimeout(() => ran.push("now"), 0);
  const later = realScheduler.setTimeout(() => ran.push("later"), 5);
  realScheduler.clearTimeout(now);
  realScheduler.clearTimeout(later);
  const kept = realScheduler.setTimeout(() => ran.push("kept"), 0, { unref: true });
  // Timers fire in due order: once one due after `later` has fired, `later` would have too.
  await new Promise<void>((resolve) => realScheduler.setTimeout(resolve, 10));
  expect(ran).toEqual(["kept"]);
  realScheduler.clearTimeout(kept); // clearing one that ran is harmless
});
