/**
 * A manual clock for timer-driven units (src/shared/time.ts `Scheduler`): time stands still until
 * the test advances it, and timers then fire in due order, each with the clock reading its due
 * time. A unit test asserts what happened by a given time without sleeping for it.
 */
import type { Scheduler, TimerHandle } from "../../src/shared/time.ts";

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class FakeScheduler implements Scheduler {
  private clock = 0;
  private nextId = 1;
  private readonly timers = new Map<number, Timer>();

  now(): number {
    return this.clock;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.clock + Math.max(0, ms), fn });
    return id as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as unknown as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /**
   * Moves the clock `ms` forward, firing every timer due by then (those armed while firing too),
   * earliest first and, for equal times, in the order they were armed.
   */
  advance(ms: number): void {
    const end = this.clock + ms;
    for (let due = this.nextDue(end); due !== undefined; due = this.nextDue(end)) {
      this.timers.delete(due.id);
      this.clock = Math.max(this.clock, due.at);
      due.fn();
    }
    this.clock = end;
  }

  private nextDue(end: number): Timer | undefined {
    let first: Timer | undefined;
    for (const t of this.timers.values()) {
      if (t.at <= end && (first === undefined || t.at < first.at || (t.at === first.at && t.id < first.id))) first = t;
    }
    return first;
  }
}
