/**
 * The context decisions, pure (issue 12 item A): given token sizes and a budget, what a request
 * keeps, what it replaces by a summary, and how far over-long texts are cut. The I/O around them
 * (the summary request, the compaction frame) is in keeper.ts and compact.ts.
 */
import type { ContextBudget } from "./budget.ts";

export interface CompactionInput {
  budget: ContextBudget;
  /** Tokens sent whatever happens: system prompt, tool schemas, the request's framing. */
  fixed: number;
  /** Tokens of each unit that may be summarized, oldest first (whole runs, or a run's exchanges). */
  units: readonly number[];
  /** Tokens sent after the units that this decision does not touch. */
  tail: number;
}

export type CompactionPlan =
  /** The request is within the trigger: send it as it is. */
  | { kind: "fits" }
  /** Replace the `replace` oldest units by one summary; the rest are kept. */
  | { kind: "compact"; replace: number }
  /** Over the trigger, and no unit to summarize: only cutting texts can help. */
  | { kind: "over" };

export function planCompaction(i: CompactionInput): CompactionPlan {
  const units = sum(i.units);
  if (i.fixed + units + i.tail <= i.budget.trigger) return { kind: "fits" };
  if (i.units.length === 0) return { kind: "over" };
  // Keep the longest run of recent units that leaves room for the summary within the target.
  const room = i.budget.target - i.fixed - i.tail - i.budget.summaryMax;
  let used = 0;
  let kept = 0;
  for (let j = i.units.length - 1; j >= 0; j--) {
    const size = i.units[j]!;
    if (used + size > room) break;
    used += size;
    kept++;
  }
  return { kind: "compact", replace: Math.max(1, i.units.length - kept) };
}

/**
 * The largest common cap such that the sizes, each cut to it, sum to at most `room` (water
 * filling: short items stay whole, the long ones share what is left equally). Returns the cap per
 * item (its own size when it is not cut). Deterministic; never negative.
 */
export function capsWithin(sizes: readonly number[], room: number): number[] {
  const total = sum(sizes);
  if (total <= room) return [...sizes];
  const order = sizes.map((size, index) => ({ size, index })).sort((a, b) => a.size - b.size || a.index - b.index);
  let left = Math.max(0, room);
  let level = 0;
  for (let k = 0; k < order.length; k++) {
    const share = Math.floor(left / (order.length - k));
    if (order[k]!.size <= share) {
      left -= order[k]!.size;
      continue;
    }
    level = share;
    break;
  }
  return sizes.map((size) => Math.min(size, level));
}

/** The notice that stands in for trimmed messages when no summary could be had. */
export function omittedNotice(count: number): string {
  return `[vigil: ${count} earlier ${count === 1 ? "message" : "messages"} omitted to fit the model's context]`;
}

export function sum(values: readonly number[]): number {
  let n = 0;
  for (const v of values) n += v;
  return n;
}
