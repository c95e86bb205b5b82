/**
 * A debug probe of event-loop blocking (`VIGIL_DEBUG_LOOP_BLOCK_MS=N`, N in 1..1000): a timer armed
 * every N ms notes how late it fired, and every REPORT_MS one log line (code `loop_block`) gives the
 * worst lateness of that window. The metrics' LagSampler (500 ms timer, serve/daemon) cannot see a
 * block shorter than its own period; this one, with a 10 ms timer, sees anything past ~10 ms.
 * Off unless set; unref'd, so it never keeps the process alive. The bench reads the lines
 * (bench/events/run.ts `maxLoopBlockMs`).
 *
 * Lateness alone also counts time the thread was not scheduled (a busy machine): so each tick also
 * reads the JS thread's own CPU time (`process.threadCpuUsage()`, getrusage(RUSAGE_THREAD): a few
 * µs, no file), and the "block" of a tick is min(lateness, that thread's CPU time in the interval)
 * — what the JS thread itself kept the loop busy for, as it would be on a quiet machine. Both are
 * reported. Where the call is missing, the block is the lateness.
 */
import { logLine } from "./log.ts";

const REPORT_MS = 250;

/** The timer period from the environment, or null (unset, or not an integer 1..1000: then a warning). */
export function loopBlockPeriodMs(env: Record<string, string | undefined>): number | null {
  const raw = env.VIGIL_DEBUG_LOOP_BLOCK_MS;
  if (raw === undefined || raw === "") return null;
  const n = Number(raw);
  if (Number.isInteger(n) && n >= 1 && n <= 1000) return n;
  logLine(`VIGIL_DEBUG_LOOP_BLOCK_MS=${JSON.stringify(raw).slice(0, 40)} is not an integer 1..1000: the loop-block probe is off`, { level: "warn", code: "config_ignored" });
  return null;
}

/** Starts the probe when the knob is set; returns its stop. */
export function startLoopBlockProbe(env: Record<string, string | undefined>): () => void {
  const period = loopBlockPeriodMs(env);
  if (period === null) return () => {};
  let worst = 0;
  let worstBlock = 0;
  let windowStart = performance.now();
  let due = windowStart + period;
  let cpu = mainThreadCpuMs();
  let timer: ReturnType<typeof setTimeout>;
  const fired = () => {
    const now = performance.now();
    const late = Math.max(0, now - due);
    const cpuNow = mainThreadCpuMs();
    worst = Math.max(worst, late);
    worstBlock = Math.max(worstBlock, cpuNow === null || cpu === null ? late : Math.min(late, cpuNow - cpu));
    cpu = cpuNow;
    if (now - windowStart >= REPORT_MS) {
      logLine(
        `event loop: worst block ${worstBlock.toFixed(1)} ms on CPU, worst timer lateness ${worst.toFixed(1)} ms in the last ${Math.round(now - windowStart)} ms (${period} ms timer)`,
        { level: "info", code: "loop_block" },
      );
      worst = 0;
      worstBlock = 0;
      windowStart = now;
    }
    due = now + period;
    timer = setTimeout(fired, period);
    timer.unref?.();
  };
  timer = setTimeout(fired, period);
  timer.unref?.();
  return () => clearTimeout(timer);
}

const threadCpu = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage;

/** This (the JS) thread's CPU ms so far, or null where the runtime cannot tell (also idle-collector.ts). */
export function mainThreadCpuMs(): number | null {
  if (threadCpu === undefined) return null;
  const u = threadCpu.call(process);
  return (u.user + u.system) / 1000;
}
