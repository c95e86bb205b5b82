/**
 * What a session tells the events client, and get_state, about delivery to its model (serve.md
 * §5, §6 item 5):
 *
 * - run settlements (`onRunSettled`): which batches a finished run delivered or returned, with the
 *   run_end's code and error (`model_unavailable` makes the events client back off);
 * - steer receipts (`onReceived`): a steered batch counts as delivered the moment the model
 *   answered a turn that carried it — a taken steer, or a run's prompt item that came in as a
 *   steer — so nothing later in that run (a failure, a compaction, a crash) injects it again;
 * - the model's availability, as the `model_unavailable` / `model_available` frames the events
 *   client sent said it, for get_state.
 */
import type { ModelUnavailableFrame } from "../../events/model-status.ts";
import type { Injection, ReceivedListener } from "../../events/ports.ts";
import { MODEL_OUTAGE } from "../models/outage-clock.ts";
import type { TranscriptRecord } from "../state/transcript.ts";
import type { PendingItem } from "./queues.ts";
import { notifyEach } from "./session-support.ts";
import type { ModelUnavailableState, RunOutcome, RunSettled, RunSettledListener } from "./types.ts";

/** The queue item of an injected batch; one that came in as a steer is marked, so its receipt counts. */
export function injectedItem(injection: Injection): PendingItem {
  return injection.behavior === "steer" ? { text: injection.text, tag: injection.tag, steer: true } : { text: injection.text, tag: injection.tag };
}

/**
 * Tags newly received when the model answered a turn carrying the run's prompt and the first
 * `count` steers taken: the steered ones not in `reported` (which this adds them to). Pure but for `reported`.
 */
export function newlyReceived(prompt: readonly PendingItem[], taken: readonly PendingItem[], count: number, reported: Set<string>): string[] {
  const fresh: string[] = [];
  const seen = [...prompt.filter((i) => i.steer === true), ...taken.slice(0, Math.max(0, Math.floor(count)))];
  for (const item of seen) {
    if (item.tag === undefined || reported.has(item.tag)) continue;
    reported.add(item.tag);
    fresh.push(item.tag);
  }
  return fresh;
}

export class DeliveryReports {
  private readonly settledListeners = new Set<RunSettledListener>();
  private readonly receivedListeners = new Set<ReceivedListener>();
  private unavailable: { error: string; since: string; retryAt: number } | null = null;

  constructor(
    /** A listener's exception (unexpected: the session's fault boundary). */
    private readonly onError: (e: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  onRunSettled(listener: RunSettledListener): () => void {
    return subscribe(this.settledListeners, listener);
  }

  onReceived(listener: ReceivedListener): () => void {
    return subscribe(this.receivedListeners, listener);
  }

  /** Reports a settled run; the run's code and error go with it. */
  settled(report: RunSettled, outcome: RunOutcome): void {
    const full: RunSettled = { ...report };
    if (outcome.code !== undefined) full.code = outcome.code;
    if (outcome.error !== undefined) full.error = outcome.error;
    notifyEach(this.settledListeners, full, this.onError);
  }

  /** The callback the run `runId` calls when the model answered a turn (RunRequest.steersReceived). */
  receiptsFor(prompt: readonly PendingItem[], taken: readonly PendingItem[], runId: string): (count: number) => void {
    const reported = new Set<string>();
    return (count) => {
      const fresh = newlyReceived(prompt, taken, count, reported);
      if (fresh.length > 0) notifyEach([...this.receivedListeners].map((l) => (tags: string[]) => l(tags, runId)), fresh, this.onError);
    };
  }

  /** Follows the stored frames: the events client's model status frames. */
  see(frame: TranscriptRecord): void {
    if (frame.type === "model_unavailable") {
      const { error, retry_in_ms: retryIn } = frame as unknown as ModelUnavailableFrame;
      const since = this.unavailable?.since ?? frame.time;
      this.unavailable = { error, since, retryAt: this.now() + retryIn };
      MODEL_OUTAGE.enter(this);
    } else if (frame.type === "model_available") {
      this.unavailable = null;
      MODEL_OUTAGE.leave(this);
    }
  }

  /** The session closed: its outage, if any, no longer runs the model-unavailable clock. */
  close(): void {
    MODEL_OUTAGE.leave(this);
  }

  /** get_state's part: `{model_unavailable}` during an outage, else nothing. */
  stateField(): { model_unavailable?: ModelUnavailableState } {
    const u = this.unavailable;
    if (u === null) return {};
    return { model_unavailable: { error: u.error, since: u.since, retry_in_ms: Math.max(0, u.retryAt - this.now()) } };
  }
}

function subscribe<L>(listeners: Set<L>, listener: L): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}
