/**
 * Time helpers every part uses (issue 10: one definition, so bounds read the same everywhere).
 * Every wait in vigil is bounded (../spec/README.md, Processes); `within` is how a wait on a
 * promise gets its bound.
 */

/**
 * Races a promise against a timeout; resolves undefined on timeout (the promise is left running).
 * A rejection of the promise within the bound rejects. The timer is cleared either way, so it
 * never holds the process open.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

declare const timerHandle: unique symbol;
/** What `Scheduler.setTimeout` returns: opaque, only good for handing back to `clearTimeout`. */
export type TimerHandle = { readonly [timerHandle]: true };

/**
 * The clock and the timers of a timer-driven unit (the events coalescer, the events store's
 * background commits), injected so its unit
 * tests advance time instead of sleeping (test/helpers/fake-scheduler.ts). `realScheduler` is the
 * default everywhere in production.
 */
export interface Scheduler {
  /** Milliseconds; only differences between two readings mean anything. */
  now(): number;
  /** `unref`: the timer alone does not keep the process alive (a real timer's `unref()`). */
  setTimeout(fn: () => void, ms: number, options?: { unref?: boolean }): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** A zero-delay timer of `realScheduler`: the next turn of the event loop. */
class NextTurn {
  constructor(readonly immediate: ReturnType<typeof setImmediate>) {}
}

/**
 * A timer due now (`ms` ≤ 0) runs at the next turn of the event loop (setImmediate), not as a
 * 0 ms timer: Bun, like Node, gives those at least 1 ms, and measured ~1.5 ms per hop here — a
 * coalescer with no window (VIGIL_EVENTS_COALESCE_MS=0) otherwise idled that long before every
 * batch (issue 16). Either way the callback never runs inside the call that armed it.
 */
export const realScheduler: Scheduler = {
  now: () => Date.now(),
  setTimeout: (fn, ms, options) => {
    if (!(ms > 0)) {
      const immediate = setImmediate(fn);
      if (options?.unref === true) immediate.unref();
      return new NextTurn(immediate) as unknown as TimerHandle;
    }
    const timer = setTimeout(fn, ms);
    if (options?.unref === true) timer.unref();
    return timer as unknown as TimerHandle;
  },
  clearTimeout: (handle) => {
    if ((handle as unknown) instanceof NextTurn) clearImmediate((handle as unknown as NextTurn).immediate);
    else clearTimeout(handle as unknown as ReturnType<typeof setTimeout>);
  },
};
