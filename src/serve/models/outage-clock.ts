/**
 * `vigil_model_unavailable_seconds_total` (issue 15 item 1): how long the model was unavailable.
 * Sessions learn of an outage from the events client's `model_unavailable` frame and of its end
 * from `model_available` (session/delivery-reports.ts); they share one model, so the clock runs
 * while at least one session has it marked unavailable — wall time, not summed per session. A
 * collector reads it at scrape time, the outage still going on included, so the counter rises
 * during an outage rather than jumping when it ends.
 */
import { METRICS, MODEL_COLLECTED } from "../../shared/metrics/catalog.ts";

export class OutageClock {
  private readonly marked = new Set<object>();
  private sinceMs = 0;
  private totalSeconds = 0;

  /** `now`: a monotonic millisecond clock (tests pass their own). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** `who` (a session) has the model marked unavailable. Idempotent. */
  enter(who: object): void {
    if (this.marked.has(who)) return;
    if (this.marked.size === 0) this.sinceMs = this.now();
    this.marked.add(who);
  }

  /** `who` saw the model available again, or is gone. Idempotent. */
  leave(who: object): void {
    if (!this.marked.delete(who)) return;
    if (this.marked.size === 0) this.totalSeconds += Math.max(0, this.now() - this.sinceMs) / 1000;
  }

  /** Seconds unavailable so far, the ongoing outage included. */
  seconds(): number {
    return this.totalSeconds + (this.marked.size > 0 ? Math.max(0, this.now() - this.sinceMs) / 1000 : 0);
  }
}

/** The process's clock (one model per daemon). */
export const MODEL_OUTAGE = new OutageClock();

METRICS.collect({
  kind: "counter",
  name: MODEL_COLLECTED.unavailableSeconds,
  help: "Seconds the model was unavailable (marked so by at least one session, from model_unavailable to model_available)",
  read: () => [{ labels: {}, value: MODEL_OUTAGE.seconds() }],
});
