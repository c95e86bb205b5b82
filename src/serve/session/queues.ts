/**
 * The session's two waiting lines (serve.md §4): follow-ups, run after the run in flight (all of
 * them at once, coalesced), and steers, handed to the run in flight at its next model turn. An item
 * with a `tag` is an injected event batch (§6 item 5); one without is a client's prompt.
 */
import type { ChatMessage } from "../models/types.ts";

export interface PendingItem {
  text: string;
  tag?: string;
  /** An injected batch that came in as a steer: delivered once the model received it (delivery-reports.ts). */
  steer?: true;
}

export class Queues {
  readonly followUp: PendingItem[] = [];
  readonly steer: PendingItem[] = [];

  /** Appends a follow-up and returns its 1-based position. */
  pushFollowUp(item: PendingItem): number {
    this.followUp.push(item);
    return this.followUp.length;
  }

  pushSteer(item: PendingItem): void {
    this.steer.push(item);
  }

  /** Puts items back at the front of the follow-up line, in their order. */
  requeueFront(items: PendingItem[]): void {
    if (items.length > 0) this.followUp.unshift(...items);
  }

  takeFollowUps(): PendingItem[] {
    return this.followUp.splice(0);
  }

  takeSteers(): PendingItem[] {
    return this.steer.splice(0);
  }

  /** Injected batches waiting in either line. */
  get pendingInjections(): number {
    let n = 0;
    for (const i of this.followUp) if (i.tag !== undefined) n++;
    for (const i of this.steer) if (i.tag !== undefined) n++;
    return n;
  }
}

export function userMessages(items: readonly PendingItem[]): ChatMessage[] {
  return items.map((i) => ({ role: "user", text: i.text }));
}

export function tagsOf(items: readonly PendingItem[]): string[] {
  const tags: string[] = [];
  for (const i of items) if (i.tag !== undefined) tags.push(i.tag);
  return tags;
}
