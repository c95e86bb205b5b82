/**
 * What a timer due now costs (issue 16, events → model): the coalescer arms one before every batch,
 * and with no coalesce window (VIGIL_EVENTS_COALESCE_MS=0, as bench/events/run.ts runs it) it is due
 * at once. Wall µs from arming to the callback, chained one after another, alternating in rounds:
 *
 *   before   a 0 ms `setTimeout` (what realScheduler armed before the fifth pass): Bun holds it for at
 *            least 1 ms, like Node;
 *   now      realScheduler.setTimeout(fn, 0): the next turn of the event loop (setImmediate).
 *
 *   bun bench/events/zero-delay.ts [--iterations N]
 */
import { realScheduler } from "../../src/shared/time.ts";
import { alternate, beforeNowRow, beforeNowTable, iterations } from "../ab.ts";

const n = iterations({ usage: "bun bench/events/zero-delay.ts [--iterations N]", fallback: 200, min: 10, max: 100_000 });

/** One hop: armed, then awaited until it ran. */
const hop = (arm: (fn: () => void) => void) => () => new Promise<void>((resolve) => arm(resolve));
const before = hop((fn) => setTimeout(fn, 0));
const now = hop((fn) => realScheduler.setTimeout(fn, 0));

const [b, a] = await alternate([before, now], { calls: n, warmup: 20 });
process.stdout.write(
  [
    ...beforeNowTable(`A timer due now, armed and run (wall µs per hop, median of rounds; Bun ${Bun.version}, ${n} hops per round); the coalescer pays one per batch when its window is 0`, [
      beforeNowRow("0 ms timer: setTimeout(fn, 0) (before) / realScheduler.setTimeout(fn, 0) (now)", b!, a!),
    ]),
  ].join("\n"),
);
