/**
 * The callback route of one webhook subscription (design notes §4.3 step 8, wire notes §13–§14):
 * what a delivery whose signature and subscription id were checked (serve/daemon/webhook-receiver.ts)
 * gets as an answer.
 *
 * - `verification`: `200 {"challenge"}` at any stage — it arrives inside `events/subscribe`, before
 *   the route is active.
 * - event: 503 while `pending` (the subscribe answer is not stored yet, wire notes §14 item 3),
 *   then the host's ingestion (200 once durable, 503 for a full queue or a failed write).
 * - `gap`: 503 while pending; then a `gap` notice and its fresh cursor, committed before the 200
 *   (503 when the queue is full or the write fails: the server retries).
 * - `terminated`: 200; the route leaves the table at once (later posts get 410) and the loop ends
 *   the subscription like a push termination (`onTerminated`).
 * - any other control `type`: `200 {}`, ignored.
 */
import { errorMessage } from "../../shared/errors.ts";
import { isStorableCursor } from "../rules/occurrence.ts";
import { adoptCursor } from "../rules/poll-rules.ts";
import type { HostedSubscription, SubscriptionHost } from "../subscription/host.ts";
import type { RouteStage, WebhookAnswer, WebhookBody, WebhookRoute, WebhookRoutes } from "./types.ts";
import type { WebhookState } from "./webhook-state.ts";

/** The error a `terminated` envelope carried (null: none readable). */
export type TerminationError = { code: number; message: string; data?: unknown } | null;

const NOT_YET: WebhookAnswer = { status: 503, body: { error: "subscription not active yet; retry" } };
const NOT_STORED: WebhookAnswer = { status: 503, body: { error: "could not store the delivery; retry" } };

export class SubscriptionRoute implements WebhookRoute {
  readonly token: string;
  readonly origin: string | null;
  private currentStage: RouteStage = "pending";
  private id: string | null = null;

  constructor(
    private readonly host: SubscriptionHost,
    private readonly sub: HostedSubscription,
    private readonly state: WebhookState,
    private readonly routes: WebhookRoutes,
    init: { token: string; origin: string | null },
    private readonly onTerminated: (error: TerminationError) => void,
  ) {
    this.token = init.token;
    this.origin = init.origin;
  }

  get stage(): RouteStage {
    return this.currentStage;
  }

  get subscriptionId(): string | null {
    return this.id;
  }

  secrets(): readonly string[] {
    return this.state.secrets();
  }

  /** The subscribe answer is stored: events are routable, and `X-MCP-Subscription-Id` must equal `id` from now on. */
  activate(id: string): void {
    this.id = id;
    this.currentStage = "active";
  }

  /** Leaves the table (if it is still the route registered under its token): later posts get 410. */
  unregister(): void {
    this.routes.unregister(this);
  }

  async deliver(body: WebhookBody, receivedMs?: number): Promise<WebhookAnswer> {
    try {
      return await this.answer(body, receivedMs);
    } catch (e) {
      // The contract: never rejects. A bug or a storage failure is retryable for the server.
      this.host.status(this.sub, { kind: "error", error: `a webhook delivery could not be handled: ${errorMessage(e)}` });
      return NOT_STORED;
    }
  }

  private async answer(body: WebhookBody, receivedMs: number | undefined): Promise<WebhookAnswer> {
    switch (body.kind) {
      case "verification":
        return { status: 200, body: { challenge: body.challenge } };
      case "control":
        return { status: 200, body: {} };
      case "terminated":
        this.unregister();
        this.onTerminated(body.error);
        return { status: 200, body: {} };
      case "gap":
        if (this.currentStage === "pending") return NOT_YET;
        return this.gap(body.cursor);
      case "event":
        if (this.currentStage === "pending") return NOT_YET;
        return this.host.ingest(this.sub, body.occurrence, receivedMs);
    }
  }

  private async gap(received: string | null): Promise<WebhookAnswer> {
    // A cursor too long to store is not carried (as in push and poll): the notice stays bounded.
    const cursor = isStorableCursor(received) ? received : null;
    if (!this.host.gap(this.sub, { gap: true, cursor, reason: "gap", eventId: null })) {
      return { status: 503, body: { error: "the pending queue is full; retry" } };
    }
    const next = adoptCursor(this.sub.cursor, cursor);
    if (next !== this.sub.cursor) {
      this.sub.cursor = next;
      this.host.persist(this.sub);
    }
    try {
      await this.host.commit();
    } catch {
      return NOT_STORED;
    }
    return { status: 200, body: {} };
  }
}
