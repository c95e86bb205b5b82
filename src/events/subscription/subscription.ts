/**
 * One subscription (server, event name, canonical arguments) and the loop that keeps it up
 * (serve.md §6 items 1, 6, 7):
 *
 * - discover (events/list, cached) → choose the mode → run the poll or push loop;
 * - transient failures: `error` status, backoff 2^n s capped at VIGIL_EVENTS_RETRY_CAP_MS;
 * - Forbidden: short backoff (cap 5 s), permanent after 5 in a row;
 * - permanent refusals (unknown server/event, no extension, -32601, -32602, NotFound,
 *   Unsupported other than schema_changed, no compatible mode): `refused`; a configured
 *   subscription retries after VIGIL_EVENTS_REFUSED_RETRY_MS and does not keep its session alive,
 *   a runtime one is forgotten;
 * - the server ending it: `terminated`; schema_changed / removed event → re-discover and subscribe
 *   again (budget 5, restored after VIGIL_EVENTS_HEALTHY_MS up); a configured subscription is
 *   always resubscribed; each comeback sends `resubscribed` and tells the model events may have
 *   been missed.
 * A runtime subscription's first failure fails its `mcp_events_subscribe` (see `ready`).
 * `subscribed` (and `ready`) promise that what follows is not lost: a subscription without a
 * position announces it only once the first position is durable (`stored`; issue 11 item 10).
 * Where it stands is one value, its phase (phase.ts: starting, up, retrying, refused, stopped,
 * terminated); the loops see it through `HostedSubscription` (host.ts).
 */
import { doublingBackoffMs } from "../../shared/backoff.ts";
import { errorMessage } from "../../shared/errors.ts";
import type { SubscriptionStatus } from "../frames.ts";
import { EventsRpcError, classifyEventsError, describeRpcError, toEventsRpcError } from "../rules/errors.ts";
import { chooseDeliveryMode, webhookAbilityOf } from "../rules/negotiate.ts";
import { DedupWindow } from "../rules/dedup.ts";
import type { EventDelivery, SubscriptionSpec } from "../types.ts";
import { EventsRefused } from "../wire/server-events.ts";
import type { WebhookRecord } from "../webhook/types.ts";
import { RefreshCallbackError, WebhookLink, runWebhook, unsubscribeWebhook } from "../webhook/webhook-loop.ts";
import type { HostedSubscription, Origin, SubscriptionHost } from "./host.ts";
import { type Phase, STARTING, afterFailure, afterStop, isComeback, isFinal, isLive, lastErrorOf, lastUpAt, reportedState } from "./phase.ts";
import { runPoll } from "./poll-loop.ts";
import { EventsTerminated, runPush } from "./push-loop.ts";
import { type WakeSlot, abortableSleep } from "./sleep.ts";

const FORBIDDEN_CAP_MS = 5000;
const MAX_FORBIDDEN_IN_A_ROW = 5;
const MAX_REDISCOVERIES = 5;

export class Subscription implements HostedSubscription {
  readonly key: string;
  readonly spec: SubscriptionSpec;
  readonly origin: Origin;
  /** A runtime subscription brought back from the snapshot: nobody waits on it, so it retries like a configured one until it is up. */
  readonly restored: boolean;
  cursor: string | null;
  readonly dedup: DedupWindow;
  mode: EventDelivery | null = null;
  delivered = 0;
  duplicates = 0;
  private current: Phase = STARTING;
  private rediscoveries = 0;
  /** Up without a position: `subscribed` waits for the first stored one (see `stored`). */
  private announcing = false;
  private readonly controller = new AbortController();
  /** A backoff wait in progress (its own retry wait, or the push loop's reconnect wait), to end early when the server is connected again. */
  private readonly sleeping: WakeSlot = { wake: null };
  private loop: Promise<void> | null = null;
  /** Webhook delivery's state, kept across attempts (a retry must not mint a new URL or secret). */
  readonly webhook: WebhookLink;
  private settleReady!: (error: Error | null) => void;
  /** Resolves with null once up, or with the error that stopped it first. */
  readonly ready: Promise<Error | null>;

  constructor(
    private readonly host: SubscriptionHost,
    init: {
      key: string;
      spec: SubscriptionSpec;
      origin: Origin;
      restored?: boolean;
      cursor: string | null;
      recent: readonly string[];
      /** The snapshot's webhook record (token and secrets reused, so retried deliveries still verify). */
      webhook?: WebhookRecord | null;
    },
    private readonly now: () => number = Date.now,
  ) {
    this.key = init.key;
    this.spec = init.spec;
    this.origin = init.origin;
    this.restored = init.restored === true;
    this.cursor = init.cursor;
    this.dedup = new DedupWindow(init.recent);
    this.webhook = new WebhookLink(init.webhook);
    this.ready = new Promise((resolve) => (this.settleReady = resolve));
  }

  get phase(): Phase {
    return this.current;
  }

  /** Up (first successful poll page or stream notification) since it last (re)started. */
  get up(): boolean {
    return this.current.kind === "up";
  }

  get lastError(): string | null {
    return lastErrorOf(this.current);
  }

  /** Live for keep-alive purposes: up, or still trying (not refused, not ended). */
  get live(): boolean {
    return isLive(this.current);
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  start(): void {
    // The loop is an async root nobody awaits until stop(): what escapes it (a bug — its request
    // failures are classified inside) goes to the session's boundary, not to the process.
    this.loop ??= this.keepUp().catch((e) => this.host.fault(e));
  }

  /** Stops the loops (cancels a stream or a poll in flight); resolves when they have ended. */
  async stop(): Promise<void> {
    if (!this.controller.signal.aborted) this.controller.abort(new Error("unsubscribed"));
    this.current = afterStop(this.current);
    this.settleReady(new Error("unsubscribed"));
    await this.loop;
  }

  /**
   * Its server is connected again (serve.md §6 item 10): a retry wait in progress (or the push
   * loop's reconnect wait) ends now, so the subscription resumes from its stored cursor at once
   * instead of after its backoff.
   */
  wake(): void {
    this.sleeping.wake?.();
  }

  /** Called by the delivery loops on every sign of life. */
  markUp(mode: EventDelivery): void {
    this.mode = mode;
    const before = this.current;
    // The loops end before a stop or a retirement returns, so a final phase never comes back up.
    if (before.kind === "up" || isFinal(before)) return;
    this.current = { kind: "up", since: this.now() };
    // Back after the server ended it: events may have been missed. Back after a transient failure
    // (the cursor held): just up again.
    if (isComeback(before)) {
      this.settleReady(null);
      this.host.status(this, { kind: "resubscribed" });
      this.host.gap(this, { gap: true, cursor: this.cursor, reason: "resubscribed", eventId: null });
    } else if (this.cursor !== null && !this.announcing) {
      // A position is stored already: it came from the snapshot, or an earlier announcement waited
      // for the first one (every later cursor is at or past it), so a crash resumes at or before here.
      // One still waiting for its first position to be stored goes on waiting.
      this.announce();
    } else {
      // The server's first answer gives the position. Announced before it is stored, a kill -9 would
      // restart from "now" and skip what came in between, unnoticed.
      this.announcing = true;
    }
  }

  async stored(): Promise<void> {
    if (!this.announcing) return;
    try {
      await this.host.commit();
    } catch (e) {
      this.host.status(this, { kind: "error", error: `could not store the starting position (not announced yet): ${errorMessage(e)}` });
      return;
    }
    if (this.announcing && this.current.kind === "up") this.announce();
  }

  private announce(): void {
    this.announcing = false;
    this.settleReady(null);
    this.host.status(this, { kind: "subscribed", subscription: this.status() });
  }

  status(): SubscriptionStatus {
    return {
      server: this.spec.server,
      name: this.spec.name,
      arguments: this.spec.arguments,
      delivery: this.mode ?? this.spec.delivery ?? "poll",
      action: this.spec.action,
      state: reportedState(this.current),
      cursor: this.cursor,
      delivered: this.delivered,
      duplicates: this.duplicates,
      refreshes: this.webhook.state.refreshes,
      last_error: this.lastError,
      refresh_before: this.webhook.state.refreshBefore,
      subscription_id: this.webhook.state.subscriptionId,
      delivery_status: this.webhook.state.grant?.deliveryStatus ?? null,
    };
  }

  private async keepUp(): Promise<void> {
    const signal = this.controller.signal;
    let attempt = 0;
    let forbidden = 0;
    while (!signal.aborted) {
      let failure: EventsRpcError | EventsRefused;
      try {
        await this.runOnce(signal);
        if (signal.aborted) break;
        failure = new EventsRpcError(0, "the delivery loop ended");
      } catch (e) {
        if (signal.aborted) break;
        failure = e instanceof EventsRefused ? e : toEventsRpcError(e);
      }
      const wasUp = this.up;
      const verdict = this.judge(failure, wasUp, forbidden);
      // The subscription is not going on as it was: its callback answers 410 until it is back.
      if (verdict.permanent || verdict.ended || verdict.rediscover) this.webhook.drop();
      forbidden = verdict.forbidden ? forbidden + 1 : 0;
      if (wasUp) attempt = 0;
      if (lastUpAt(this.current) === null && this.origin === "runtime" && !this.restored) {
        // The command that made it is still waiting: it fails, and nothing is kept.
        this.current = { kind: "stopped", lastError: verdict.message };
        this.webhook.drop();
        this.settleReady(new Error(verdict.message));
        this.host.retired(this);
        return;
      }
      const wait = this.next(verdict, attempt++);
      if (wait === null) return;
      await abortableSleep(wait, signal, this.sleeping);
    }
    // A graceful stop (explicit unsubscribe, teardown, shutdown): the server stops delivering too.
    await unsubscribeWebhook(this.host, this, this.webhook);
  }

  private async runOnce(signal: AbortSignal): Promise<void> {
    const wire = this.host.wire(this.spec.server);
    const events = await wire.list(signal);
    const descriptor = events.find((d) => d.name === this.spec.name);
    if (descriptor === undefined) {
      const offered = events.map((d) => d.name).slice(0, 20).join(", ") || "none";
      throw new EventsRefused(`MCP server ${JSON.stringify(this.spec.server)} offers no event ${JSON.stringify(this.spec.name)} (it offers: ${offered})`);
    }
    const canStream = wire.canStream;
    if (this.spec.delivery === "push" && !canStream) {
      // Transient: a stream slot frees up when another subscription ends.
      throw new EventsRpcError(-32603, "no push stream slot is free over HTTP (VIGIL_EVENTS_MAX_HTTP_STREAMS)");
    }
    const choice = chooseDeliveryMode(descriptor.delivery, this.spec.delivery, { webhook: webhookAbilityOf(this.host.webhook), push: canStream });
    if ("error" in choice) throw new EventsRefused(choice.error);
    this.mode = choice.mode;
    if (choice.mode === "webhook") return runWebhook(this.host, this, signal, this.webhook);
    // Webhook no longer fits (the descriptor changed): the server's webhook subscription goes too.
    await unsubscribeWebhook(this.host, this, this.webhook);
    if (choice.mode === "push") await runPush(this.host, this, signal, { wake: this.sleeping });
    else await runPoll(this.host, this, signal);
  }

  private judge(failure: EventsRpcError | EventsRefused, wasUp: boolean, forbiddenSoFar: number) {
    if (failure instanceof EventsRefused) {
      return { message: failure.message, permanent: true, forbidden: false, rediscover: false, ended: false, error: null };
    }
    // A CallbackEndpointError on a refresh is retried in place (design notes §4.4), not an end.
    const c = failure instanceof RefreshCallbackError ? classifyEventsError(0, undefined) : classifyEventsError(failure.code, failure.data);
    const ended = failure instanceof EventsTerminated || (wasUp && c.terminal);
    const message = describeRpcError(failure.code, failure.message, failure.data);
    const permanent = (c.permanent && !c.rediscover) || (c.forbidden && forbiddenSoFar + 1 >= MAX_FORBIDDEN_IN_A_ROW);
    return {
      message,
      permanent,
      forbidden: c.forbidden,
      rediscover: c.rediscover,
      ended,
      error: { code: failure.code, message: failure.message, ...(failure.data !== undefined ? { data: failure.data } : {}) },
    };
  }

  /** Reports the failure, moves the phase on and returns how long to wait before the next attempt (null: stop). */
  private next(v: ReturnType<Subscription["judge"]>, attempt: number): number | null {
    const t = this.host.tuning;
    if (v.ended && v.error !== null) this.host.status(this, { kind: "terminated", error: v.error });
    const ended = v.ended && v.error !== null;
    const down = (refused: boolean) => afterFailure(this.current, { message: v.message, refused, ended });
    if (v.rediscover) {
      const since = lastUpAt(this.current);
      if (since !== null && this.now() - since >= t.healthyMs) this.rediscoveries = 0;
      if (this.rediscoveries < MAX_REDISCOVERIES) {
        this.rediscoveries++;
        this.host.wire(this.spec.server).invalidate();
        this.current = down(false);
        return doublingBackoffMs(this.rediscoveries - 1, 30_000);
      }
    }
    if (v.ended && this.origin === "runtime" && !v.rediscover) return this.retire("terminated", v.message);
    if (v.permanent || v.rediscover) {
      if (this.origin === "runtime") return this.retire("stopped", v.message, v.message);
      this.current = down(true);
      this.host.status(this, { kind: "refused", error: v.message, retry_in_ms: t.refusedRetryMs });
      return t.refusedRetryMs;
    }
    this.current = down(false);
    const wait = doublingBackoffMs(attempt, v.forbidden ? Math.min(FORBIDDEN_CAP_MS, t.retryCapMs) : t.retryCapMs);
    if (!v.ended) this.host.status(this, { kind: "error", error: v.message, retry_in_ms: wait });
    return wait;
  }

  private retire(state: "stopped" | "terminated", lastError: string, refusal?: string): null {
    this.current = { kind: state, lastError };
    if (refusal !== undefined) this.host.status(this, { kind: "refused", error: refusal, retry_in_ms: 0 });
    this.controller.abort(new Error(state));
    this.host.forget(this);
    this.host.retired(this);
    return null;
  }
}
