/**
 * What a subscription's delivery loops need from the session that owns it (the hub): the wire of
 * its server, the tuning knobs, and one path for everything that arrives — deduplicated, stored,
 * framed — plus durability and cursor persistence.
 */
import type { ServeTuning } from "../../serve/config/tuning.ts";
import type { McpEventStatusDetail } from "../../serve/protocol/frames.ts";
import type { EventDelivery, EventOccurrence, GapNotice } from "../types.ts";
import type { ServerEvents } from "../wire/server-events.ts";
import type { Subscription } from "./subscription.ts";

/** What became of one arriving occurrence. */
export type Acceptance = "new" | "duplicate" | "full";

export interface SubscriptionHost {
  readonly tuning: ServeTuning;
  /** A listener and a callback URL exist (webhook delivery is possible). */
  readonly canWebhook: boolean;
  wire(server: string): ServerEvents;
  /**
   * One occurrence: dedup by eventId, then (unless notify) onto the durable queue — "full" records
   * nothing — then the dedup window, the counters and the `mcp_event` frame. Not yet durable: the
   * caller commits before it moves a cursor past it.
   */
  accept(sub: Subscription, event: EventOccurrence, delivery: EventDelivery): Acceptance;
  /** A gap: a `gap` status frame, and (unless notify) a notice queued for the model; false when the queue is full. */
  gap(sub: Subscription, notice: GapNotice): boolean;
  status(sub: Subscription, detail: McpEventStatusDetail): void;
  /** Makes everything accepted so far durable (log, then snapshot). Rejects on a storage failure. */
  commit(): Promise<void>;
  /** Saves the subscription's cursor and dedup window (debounced; the next commit carries it). */
  persist(sub: Subscription): void;
  /** Forgets the subscription's persisted position (explicit unsubscribe, runtime subscription ended or refused). */
  forget(sub: Subscription): void;
  /** The subscription ended for good and left the hub. */
  retired(sub: Subscription): void;
}
