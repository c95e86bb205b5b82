/**
 * Settled readings for the soak (bench/soak/run.ts): what a process retains, not how fast it
 * allocates. RSS read while a load runs is mostly garbage not yet collected (JSC collects and
 * returns pages to the OS on its own schedule), so a 5 s burst of 100,000 events reads tens of MiB
 * above what the process keeps. At each checkpoint the load pauses (no event emitted, every one
 * emitted already received; or the fixture holding its poll answers), and the process's RSS is
 * sampled every SAMPLE_MS until it has made no new low (by more than NOISE_KIB) for QUIET_MS, at
 * most MAX_MS: the reading is the last sample, taken once memory stopped falling. Nothing in the
 * process under test is asked to collect: the harness only paces.
 */
import { fmt, mib } from "../report.ts";
import { type Memory, cpuMsOf, memoryOf } from "../proc.ts";

const SAMPLE_MS = 250;
const QUIET_MS = 2_000;
/** Bounded: a process that never stops falling is read after this (and the reading says how long it took). */
export const SETTLE_MAX_MS = 15_000;
/** A page or two up and down is noise, not a new low. */
const NOISE_KIB = 256;

export interface Settled {
  m: Memory;
  /** How long until memory stopped falling (MAX_MS: it had not). */
  settleMs: number;
}

export async function settle(pid: number): Promise<Settled> {
  const t0 = performance.now();
  let last = memoryOf(pid);
  let low = last.rssKiB;
  let lowAt = t0;
  while (performance.now() - t0 < SETTLE_MAX_MS) {
    await Bun.sleep(SAMPLE_MS);
    last = memoryOf(pid);
    if (last.rssKiB < low - NOISE_KIB) {
      low = last.rssKiB;
      lowAt = performance.now();
    } else if (performance.now() - lowAt >= QUIET_MS) break;
  }
  return { m: last, settleMs: performance.now() - t0 };
}

export interface Reading {
  label: string;
  /** Polls answered or events received in the phase when read (null outside the load). */
  done: number | null;
  m: Memory;
  /** Process CPU ms since the phase began (pauses included: collection is part of the cost). */
  cpuMs: number;
  /** ms of load since the phase began (pauses excluded). */
  ms: number;
  settleMs: number;
}

export async function settledReading(pid: number, label: string): Promise<Reading> {
  const s = await settle(pid);
  return { label, done: null, m: s.m, cpuMs: Number.NaN, ms: Number.NaN, settleMs: s.settleMs };
}

/** The checkpoints of one phase: every tenth of n, each read settled while the load is paused. */
export class Checkpoints {
  readonly readings: Reading[] = [];
  private k = 1;
  private readonly t0 = performance.now();
  private readonly cpu0: number;
  /** Wall ms spent paused for readings (kept out of the load's time and rate). */
  pausedMs = 0;

  constructor(
    private readonly pid: number,
    private readonly n: number,
  ) {
    this.cpu0 = cpuMsOf(pid);
  }

  /** The next mark (a tenth of n, rounded), or null once the reading at n was taken. */
  get next(): number | null {
    return this.k > 10 ? null : Math.round((this.n * this.k) / 10);
  }

  /** ms of load so far (pauses excluded). */
  get loadMs(): number {
    return performance.now() - this.t0 - this.pausedMs;
  }

  get cpuMs(): number {
    return cpuMsOf(this.pid) - this.cpu0;
  }

  /** Reads the paused process once it settled; `done` is the load's count then (at or past the mark). */
  async read(done: number): Promise<void> {
    const mark = this.next!;
    const ms = this.loadMs;
    const began = performance.now();
    const s = await settle(this.pid);
    this.pausedMs += performance.now() - began;
    const r: Reading = { label: fmt(mark), done, m: s.m, cpuMs: this.cpuMs, ms, settleMs: s.settleMs };
    this.readings.push(r);
    process.stderr.write(`  ${fmt(done).padStart(9)} after ${fmt(ms / 1000, 1)} s of load: VmRSS ${mib(r.m.rssKiB)} MiB settled in ${fmt(s.settleMs / 1000, 1)} s, ${r.m.fds} fds\n`);
    while (this.next !== null && this.next <= done) this.k++;
  }
}
