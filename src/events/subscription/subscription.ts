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
 */
import type { SubscriptionState, SubscriptionStatus } from "../../serve/protocol/frames.ts";
import { EventsRpcError, classifyEventsError, describeRpcError, toEventsRpcError } from "../rules/errors.ts";
import { chooseDeliveryMode } from "../rules/negotiate.ts";
import { backoffMs } from "../rules/poll-rules.ts";
import { DedupWindow } from "../rules/dedup.ts";
import type { EventDelivery, SubscriptionSpec } from "../types.ts";
import { EventsRefused } from "../wire/server-events.ts";
import type { SubscriptionHost } from "./host.ts";
import { runPoll } from "./poll-loop.ts";
import { EventsTerminated, runPush } from "./push-loop.ts";
import { abortableSleep } from "./sleep.ts";

const FORBIDDEN_CAP_MS = 5000;
const MAX_FORBIDDEN_IN_A_ROW = 5;
const MAX_REDISCOVERIES = 5;

export type Origin = "configured" | "runtime";

export class Subscription {
  readonly key: string;
  readonly spec: SubscriptionSpec;
  readonly origin: Origin;
  /** A runtime subscription brought back from the snapshot: nobody waits on it, so it retries like a configured one until it is up. */
  readonly restored: boolean;
  cursor: string | null;
  readonly dedup: DedupWindow;
  state: SubscriptionState = "starting";
  /** A permanent refusal is standing (reported as `refused`; does not keep the session alive). */
  refused = false;
  mode: EventDelivery | null = null;
  delivered = 0;
  duplicates = 0;
  lastError: string | null = null;
  /** Has been up (first successful poll page or stream notification) since it last (re)started. */
  up = false;
  private everUp = false;
  private endedSinceUp = false;
  private upSince: number | null = null;
  private rediscoveries = 0;
  private readonly controller = new AbortController();
  private loop: Promise<void> | null = null;
  private settleReady!: (error: Error | null) => void;
  /** Resolves with null once up, or with the error that stopped it first. */
  readonly ready: Promise<Error | null>;

  constructor(
    private readonly host: SubscriptionHost,
    init: { key: string; spec: SubscriptionSpec; origin: Origin; restored?: boolean; cursor: string | null; recent: readonly string[] },
    private readonly now: () => number = Date.now,
  ) {
    this.key = init.key;
    this.spec = init.spec;
    this.origin = init.origin;
    this.restored = init.restored === true;
    this.cursor = init.cursor;
    this.dedup = new DedupWindow(init.recent);
    this.ready = new Promise((resolve) => (this.settleReady = resolve));
  }

  /** Live for keep-alive purposes: up, or still trying (not refused, not ended). */
  get live(): boolean {
    return !this.refused && this.state !== "terminated" && this.state !== "stopped";
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  start(): void {
    this.loop ??= this.keepUp();
  }

  /** Stops the loops (cancels a stream or a poll in flight); resolves when they have ended. */
  async stop(): Promise<void> {
    if (!this.controller.signal.aborted) this.controller.abort(new Error("unsubscribed"));
    if (this.state !== "terminated") this.state = "stopped";
    this.settleReady(new Error("unsubscribed"));
    await this.loop;
  }

  /** Called by the delivery loops on every sign of life. */
  markUp(mode: EventDelivery): void {
    this.mode = mode;
    if (this.up) return;
    this.up = true;
    this.upSince = this.now();
    // Back after the server ended it: events may have been missed. Back after a transient failure
    // (the cursor held): just up again.
    const comeback = this.everUp && this.endedSinceUp;
    this.everUp = true;
    this.endedSinceUp = false;
    this.state = "active";
    this.refused = false;
    this.lastError = null;
    this.settleReady(null);
    if (comeback) {
      this.host.status(this, { kind: "resubscribed" });
      this.host.gap(this, { gap: true, cursor: this.cursor, reason: "resubscribed", eventId: null });
    } else {
      this.host.status(this, { kind: "subscribed", subscription: this.status() });
    }
  }

  status(): SubscriptionStatus {
    return {
      server: this.spec.server,
      name: this.spec.name,
      arguments: this.spec.arguments,
      delivery: this.mode ?? this.spec.delivery ?? "poll",
      action: this.spec.action,
      state: this.state,
      cursor: this.cursor,
      delivered: this.delivered,
      duplicates: this.duplicates,
      refreshes: 0,
      last_error: this.lastError,
      refresh_before: null,
      subscription_id: null,
      delivery_status: null,
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
      this.up = false;
      const verdict = this.judge(failure, wasUp, forbidden);
      forbidden = verdict.forbidden ? forbidden + 1 : 0;
      if (wasUp) attempt = 0;
      if (!this.everUp && this.origin === "runtime" && !this.restored) {
        // The command that made it is still waiting: it fails, and nothing is kept.
        this.lastError = verdict.message;
        this.state = "stopped";
        this.settleReady(new Error(verdict.message));
        this.host.retired(this);
        return;
      }
      const wait = this.next(verdict, attempt++);
      if (wait === null) return;
      await abortableSleep(wait, signal);
    }
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
    const choice = chooseDeliveryMode(descriptor.delivery, this.spec.delivery, { webhook: this.host.canWebhook, push: canStream });
    if ("error" in choice) throw new EventsRefused(choice.error);
    if (choice.mode === "webhook") throw new EventsRefused("webhook delivery is not available in this version of vigil serve");
    this.mode = choice.mode;
    if (choice.mode === "push") await runPush(this.host, this, signal);
    else await runPoll(this.host, this, signal);
  }

  private judge(failure: EventsRpcError | EventsRefused, wasUp: boolean, forbiddenSoFar: number) {
    if (failure instanceof EventsRefused) {
      return { message: failure.message, permanent: true, forbidden: false, rediscover: false, ended: false, error: null };
    }
    const c = classifyEventsError(failure.code, failure.data);
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

  /** Reports the failure and returns how long to wait before the next attempt (null: stop). */
  private next(v: ReturnType<Subscription["judge"]>, attempt: number): number | null {
    const t = this.host.tuning;
    this.lastError = v.message;
    if (v.ended && v.error !== null) {
      this.endedSinceUp = true;
      this.host.status(this, { kind: "terminated", error: v.error });
    }
    if (v.rediscover) {
      if (this.upSince !== null && this.now() - this.upSince >= t.healthyMs) this.rediscoveries = 0;
      if (this.rediscoveries < MAX_REDISCOVERIES) {
        this.rediscoveries++;
        this.host.wire(this.spec.server).invalidate();
        this.state = "retrying";
        return backoffMs(this.rediscoveries - 1, 30_000);
      }
    }
    if (v.ended && this.origin === "runtime" && !v.rediscover) return this.retire("terminated");
    if (v.permanent || v.rediscover) {
      if (this.origin === "runtime") return this.retire("stopped", v.message);
      this.refused = true;
      this.state = "retrying";
      this.host.status(this, { kind: "refused", error: v.message, retry_in_ms: t.refusedRetryMs });
      return t.refusedRetryMs;
    }
    this.state = "retrying";
    const wait = backoffMs(attempt, v.forbidden ? Math.min(FORBIDDEN_CAP_MS, t.retryCapMs) : t.retryCapMs);
    if (!v.ended) this.host.status(this, { kind: "error", error: v.message, retry_in_ms: wait });
    return wait;
  }

  private retire(state: SubscriptionState, refusal?: string): null {
    this.state = state;
    if (refusal !== undefined) this.host.status(this, { kind: "refused", error: refusal, retry_in_ms: 0 });
    this.controller.abort(new Error(state));
    this.host.forget(this);
    this.host.retired(this);
    return null;
  }
}
