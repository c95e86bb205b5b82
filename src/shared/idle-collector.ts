/**
 * Memory given back once a burst of work is over (a daemon runs for months). JSC collects its old
 * generation on its own schedule, driven by allocation: a process that goes quiet after a burst can
 * keep the burst's garbage — tens of MiB of RSS after 100,000 pushed events — until the next burst
 * comes. So once a second this looks at the JS thread's CPU time: when the last second was quiet
 * and the work since the last collection was a burst's worth, it asks for one full collection,
 * which on a quiet thread delays nothing that was waiting (a few ms; measured on a ~100 MiB heap).
 * A steady load never triggers it (never quiet), nor does an idle process (no work since).
 *
 * The decision is pure (`collectNow`); the timer and the readings are injected.
 */
import { logDebug } from "./log.ts";
import { mainThreadCpuMs } from "./loop-block-probe.ts";
import { type Scheduler, type TimerHandle, realScheduler } from "./time.ts";

export const TICK_MS = 1000;
/** A tick is quiet when the JS thread used less than this CPU time in it. */
export const QUIET_CPU_MS = 50;
/** …and a collection is worth it once this much JS-thread CPU time went into work since the last. */
export const BURST_CPU_MS = 500;

export interface CollectorState {
  /** JS-thread CPU ms at the last tick, and at the last collection. */
  lastTickCpuMs: number;
  lastCollectCpuMs: number;
}

/** Whether to collect now, given the JS thread's CPU ms so far. Pure. */
export function collectNow(state: CollectorState, cpuMs: number): boolean {
  return cpuMs - state.lastTickCpuMs < QUIET_CPU_MS && state.lastTickCpuMs - state.lastCollectCpuMs >= BURST_CPU_MS;
}

export interface IdleCollectorOptions {
  scheduler?: Scheduler;
  /** The JS thread's CPU time so far, ms. */
  cpuMs?: () => number;
  collect?: () => void;
}

/** Starts the collector (its timer unref'd: it never keeps the process alive); returns its stop. */
export function startIdleCollector(o: IdleCollectorOptions = {}): () => void {
  const scheduler = o.scheduler ?? realScheduler;
  const cpuMs = o.cpuMs ?? jsThreadCpuMs;
  const collect = o.collect ?? (() => Bun.gc(true));
  const start = cpuMs();
  const state: CollectorState = { lastTickCpuMs: start, lastCollectCpuMs: start };
  let timer: TimerHandle | null = null;
  const tick = () => {
    const now = cpuMs();
    if (collectNow(state, now)) {
      const t0 = performance.now();
      collect();
      logDebug(`memory: a burst of work is over; garbage collected in ${(performance.now() - t0).toFixed(1)} ms`, { code: "idle_collection" });
      state.lastCollectCpuMs = cpuMs();
      state.lastTickCpuMs = state.lastCollectCpuMs;
    } else state.lastTickCpuMs = now;
    timer = scheduler.setTimeout(tick, TICK_MS, { unref: true });
  };
  timer = scheduler.setTimeout(tick, TICK_MS, { unref: true });
  return () => {
    if (timer !== null) scheduler.clearTimeout(timer);
    timer = null;
  };
}

/** The JS thread's own CPU time (getrusage RUSAGE_THREAD); the process's where that is missing. */
function jsThreadCpuMs(): number {
  const thread = mainThreadCpuMs();
  if (thread !== null) return thread;
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
