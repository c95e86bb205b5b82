/**
 * The accounting at the end of a run (serve.md §5, §6 item 5), pure: which injected batches were
 * delivered, which go back to the events subsystem, which client messages go back to the queue.
 */
import type { PendingItem } from "./queues.ts";
import { tagsOf } from "./queues.ts";

export interface SettleInput {
  /** Items of the run's prompt. */
  prompt: PendingItem[];
  /** Steers handed to the run, in the order taken. */
  taken: PendingItem[];
  /** How many of `taken` the model received (clamped here). */
  steersSeen: number;
  /** Steers still waiting when the run ended (never handed over). */
  leftover: PendingItem[];
  succeeded: boolean;
}

export interface SettleResult {
  delivered: string[];
  returned: string[];
  /** Client messages (and untaken batches) to put at the front of the follow-up line, in order. */
  requeue: PendingItem[];
}

export function settleRun(input: SettleInput): SettleResult {
  const seenCount = Math.max(0, Math.min(input.taken.length, Math.floor(Number(input.steersSeen) || 0)));
  const seen = input.taken.slice(0, seenCount);
  const unseen = input.taken.slice(seenCount);
  const given = [...input.prompt, ...seen];
  const unseenClient = unseen.filter((i) => i.tag === undefined);
  const requeue = [...unseenClient, ...input.leftover];
  if (input.succeeded) {
    return { delivered: tagsOf(given), returned: tagsOf(unseen), requeue };
  }
  return {
    delivered: [],
    returned: [...tagsOf(given), ...tagsOf(unseen)],
    requeue,
  };
}
