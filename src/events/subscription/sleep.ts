import { type Scheduler, realScheduler } from "../../shared/time.ts";

/** Where a sleeper can be woken: a wait in progress puts its early end here (see `abortableSleep`). */
export interface WakeSlot {
  wake: (() => void) | null;
}

/**
 * A wait that ends early (without throwing) when `signal` aborts, or when `slot.wake()` is called
 * while it runs (a subscription's backoff ends once its server is connected again). `scheduler`
 * is the clock it waits on (tests inject a fake one).
 */
export function abortableSleep(ms: number, signal: AbortSignal, slot?: WakeSlot, scheduler: Scheduler = realScheduler): Promise<void> {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      scheduler.clearTimeout(timer);
      signal.removeEventListener("abort", done);
      if (slot?.wake === done) slot.wake = null;
      resolve();
    };
    const timer = scheduler.setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    if (slot !== undefined) slot.wake = done;
  });
}
