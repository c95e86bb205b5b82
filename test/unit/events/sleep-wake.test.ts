// A subscription's retry wait ends early when its server is connected again (serve.md §6 item 10).
import { expect, test } from "bun:test";
import { type WakeSlot, abortableSleep } from "../../../src/events/subscription/sleep.ts";

test("wake() ends a wait in progress; the slot is empty again afterwards and once the wait ended by itself", async () => {
  const slot: WakeSlot = { wake: null };
  let done = false;
  const wait = abortableSleep(3_600_000, new AbortController().signal, slot).then(() => (done = true));
  expect(slot.wake).not.toBeNull();
  await Promise.resolve();
  expect(done).toBe(false);
  slot.wake?.();
  await wait;
  expect(slot.wake).toBeNull();
  await abortableSleep(1, new AbortController().signal, slot);
  expect(slot.wake).toBeNull();
});
