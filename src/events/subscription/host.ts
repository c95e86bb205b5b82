/**
 * What a subscription's delivery loops need from the session that owns it (the hub): the wire of
 * its server, the tuning knobs, and one path for everything that arrives — deduplicated, stored,
 * framed — plus durability and cursor persistence.
 *
 * Both sides are described here, below the subscription and its loops: `HostedSubscription` is
 * what the host and the loops see of a subscription, so neither imports subscription.ts (which
 * imports them).
 */
import type { McpEventStatusDetail } from "../frames.ts";
import type { EventsTuning } from "../ports.ts";
import type { DedupWindow } from "../rules/dedup.ts";
import type { EventDelivery, EventOccurrence, GapNotice, SubscriptionSpec } from "../types.ts";
import type { ServerEvents } from "../wire/server-events.ts";
import type { WebhookAbility, WebhookAnswer, WebhookRecord } from "../webhook/types.ts";

/** What became of one arriving occurrence. */
export type Acceptance = "new" | "duplicate" | "full";

/** Where a subscription came from: the config (owned by one session) or a client's command. */
export type Origin = "configured" | "runtime";

/** A subscription as its host and its delivery loops see it. */
export interface HostedSubscription {
  readonly key: string;
  readonly spec: SubscriptionSpec;
  readonly origin: Origin;
  /** The stored position; the loops move it only past what is committed. */
  cursor: string | null;
  readonly dedup: DedupWindow;
  delivered: number;
  duplicates: number;
  /** The delivery mode its loop runs in (null until one is chosen): the metrics' mode label. */
  readonly mode?: EventDelivery | null;
  /** Up (a successful poll page or stream notification) since its loop last (re)started. */
  readonly up: boolean;
  /** Called by the delivery loops on every sign of life. */
  markUp(mode: EventDelivery): void;
  /**
   * Called by the delivery loops once a page or run is stored and the cursor moved past it: a
   * subscription that came up without a position announces `subscribed` only once the first one is
   * durable (never rejects; a failed write is reported and the next call tries again).
   */
  stored(): Promise<void>;
}

/** A subscription's cursor moving past what a commit makes durable (`SubscriptionHost.commit`). */
export interface CursorMove {
  sub: HostedSubscription;
  cursor: string | null;
}

export interface SubscriptionHost {
  readonly tuning: EventsTuning;
  /** Webhook delivery: the routes, the server keys and the callback URLs, or which flag is missing. */
  readonly webhook: WebhookAbility;
  wire(server: string): ServerEvents;
  /**
   * One occurrence that arrived by webhook, decided on decoded JSON: checked once
   * (rules/occurrence.ts; one that fails is an `invalid_event` gap, answered 200), then `accept`;
   * its body's `cursor` (a watermark) becomes the subscription's cursor. Answers 200 only once
   * the pending log holding it is fdatasync'd (group commit, within VIGIL_EVENTS_ACK_TIMEOUT_MS),
   * 200 for a duplicate, and 503 for a full queue, a failed write or a write past its deadline.
   * Never rejects.
   */
  ingest(sub: HostedSubscription, occurrence: unknown, receivedMs?: number): Promise<WebhookAnswer>;
  /**
   * Sets the subscription's webhook state in the snapshot (null: none) for the next commit; the
   * caller commits when it must be durable (before a route becomes routable).
   */
  persistWebhook(sub: HostedSubscription, record: WebhookRecord | null): void;
  /**
   * One occurrence: dedup by eventId, then (unless notify) onto the durable queue — "full" records
   * nothing — then the dedup window, the counters and the `mcp_event` frame. Not yet durable: the
   * caller commits before it moves a cursor past it. `receivedMs`: when it arrived in vigil
   * (`performance.now()`, default now), for the acknowledgement latency (events/metrics.ts).
   */
  accept(sub: HostedSubscription, event: EventOccurrence, delivery: EventDelivery, receivedMs?: number): Acceptance;
  /** A gap: a `gap` status frame, and (unless notify) a notice queued for the model; false when the queue is full. */
  gap(sub: HostedSubscription, notice: GapNotice): boolean;
  status(sub: HostedSubscription, detail: McpEventStatusDetail): void;
  /**
   * Holds the frames of `accept`, `gap` and `status` until the returned release (call it before any
   * await): one poll page's or run slice's frames reach the transcript in one write. Optional: a
   * host without it sends each frame at once.
   */
  holdFrames?(): () => void;
  /**
   * Makes everything accepted so far durable (the pending log, then the snapshot if one is due).
   * Rejects on a storage failure. With `move`, the subscription's new cursor is stored by the same
   * log append as the page's or run's events, after them (serve.md §3; store/positions.ts), not by
   * a later write. The caller adopts the cursor once this resolves.
   */
  commit(move?: CursorMove): Promise<void>;
  /** Saves the subscription's cursor and dedup window (debounced; the next commit carries it). */
  persist(sub: HostedSubscription): void;
  /** Forgets the subscription's persisted position (explicit unsubscribe, runtime subscription ended or refused). */
  forget(sub: HostedSubscription): void;
  /** The subscription ended for good and left the hub. */
  retired(sub: HostedSubscription): void;
  /** An exception escaped the subscription's loop: the session's containment boundary (ports.ts FaultReport). */
  fault(error: unknown): void;
}
