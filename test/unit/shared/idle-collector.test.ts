/**
 * The idle collector (src/shared/idle-collector.ts): one full collection once a burst of work is
 * over — a quiet second after at least BURST_CPU_MS of JS-thread CPU since the last one — and never
 * under a steady load or while idle. Driven by a fake clock and fake CPU readings.
 */
import { expect, test } from "bun:test";
import { BURST_CPU_MS, QUIET_CPU_MS, TICK_MS, collectNow, startIdleCollector } from "../../../src/shared/idle-collector.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";

/** A collector on a fake clock whose JS thread uses `perTick[i]` ms of CPU in tick i; returns the ticks it collected at. */
function run(perTick: number[]): number[] {
  const clock = new FakeScheduler();
  let cpu = 1_000;
  let tick = 0;
  const collected: number[] = [];
  const stop = startIdleCollector({ scheduler: clock, cpuMs: () => cpu, collect: () => void collected.push(tick) });
  for (const used of perTick) {
    cpu += used;
    tick++;
    clock.advance(TICK_MS);
  }
  stop();
  expect(clock.pending).toBe(0);
  return collected;
}

test("a burst, then a quiet second: one collection, at the first quiet tick", () => {
  expect(run([400, 400, 0, 0, 0])).toEqual([3]);
});

test("a steady load never collects, however long; nor does an idle process", () => {
  expect(run(Array(20).fill(300))).toEqual([]);
  expect(run(Array(20).fill(0))).toEqual([]);
});

test("less than a burst's worth of work before the quiet: no collection", () => {
  expect(run([BURST_CPU_MS / 2 - 1, 0, 0])).toEqual([]);
});

test("each burst gets its own collection, and only one", () => {
  expect(run([600, 0, 0, 0, 700, 10, 0, 0])).toEqual([2, 6]);
});

test("collectNow: quiet means under QUIET_CPU_MS in the last tick", () => {
  const state = { lastTickCpuMs: 2_000, lastCollectCpuMs: 2_000 - BURST_CPU_MS };
  expect(collectNow(state, 2_000 + QUIET_CPU_MS - 1)).toBe(true);
  expect(collectNow(state, 2_000 + QUIET_CPU_MS)).toBe(false);
  expect(collectNow({ lastTickCpuMs: 2_000, lastCollectCpuMs: 2_000 - BURST_CPU_MS + 1 }, 2_000)).toBe(false);
});
