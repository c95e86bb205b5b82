/**
 * Waiting for a quiet machine (the bench harnesses share small machines with other work): the
 * machine's busy CPU time is sampled from /proc/stat over windows of `windowMs` until one window
 * is below `maxBusy` (a fraction of one CPU), at most `boundMs`.
 */
import { machineBusyMs } from "./proc.ts";

export interface QuietWait {
  quiet: boolean;
  waitedMs: number;
  /** Busy time of the last window, as a fraction of one CPU. */
  lastBusy: number;
}

export async function waitQuiet(maxBusy: number, windowMs = 1_000, boundMs = 60_000): Promise<QuietWait> {
  const t0 = performance.now();
  for (;;) {
    const b0 = machineBusyMs();
    const w0 = performance.now();
    await Bun.sleep(windowMs);
    const busy = (machineBusyMs() - b0) / (performance.now() - w0);
    // /proc/stat unreadable (NaN): nothing to wait for.
    if (!(busy >= maxBusy)) return { quiet: true, waitedMs: performance.now() - t0, lastBusy: busy };
    if (performance.now() - t0 >= boundMs) return { quiet: false, waitedMs: performance.now() - t0, lastBusy: busy };
  }
}
