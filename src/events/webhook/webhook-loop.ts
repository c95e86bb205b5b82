/**
 * Webhook delivery for one subscription (serve.md §6 item 4; design notes §4.4; wire notes §9–§11,
 * §14, §17, §18): subscribe, refresh before `refreshBefore` with a new secret each time, and
 * unsubscribe on a graceful stop.
 *
 * The order is the point:
 * 1. a token and secret: the persisted ones (reused across restarts, so a delivery the server
 *    retries across a crash still verifies), or a fresh pair, persisted and committed before the
 *    first subscribe is sent (a crash mid-subscribe keeps the URL);
 * 2. over HTTP, the server's v1a keys (jwks.ts) before every subscribe and refresh — a first fetch
 *    that keeps failing refuses the subscription and leaves no route behind;
 * 3. the route registered (stage `pending`) before `events/subscribe` is sent: the verification
 *    challenge arrives inside that call;
 * 4. the answer validated, then stored (webhook record, cursor, a `truncated` gap) and committed —
 *    only then does the route turn active; events posted before that got 503 and are retried.
 *
 * When a route exists: from before the first subscribe until the subscription ends for good — a graceful stop (after `events/unsubscribe`), a refusal, the
 * server ending it, a retirement, or a switch to another mode. Through transient failures and their
 * backoff it stays, at its stage: an active route keeps taking the deliveries of a server-side
 * subscription that is still live, and a pending one answers 503, never 410 (410 tells the
 * server to stop for good).
 */
import * as v from "valibot";
import { type Scheduler, realScheduler } from "../../shared/time.ts";
import { scrubText } from "../../shared/scrub.ts";
import { formatIssue } from "../../shared/issues.ts";
import { isRecord } from "../../shared/guards.ts";
import { EventsRpcError, classifyEventsError } from "../rules/errors.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { adoptCursor } from "../rules/poll-rules.ts";
import { boundValue } from "../rules/server-text.ts";
import { EventsTerminated } from "../subscription/push-loop.ts";
import { type WakeSlot, abortableSleep } from "../subscription/sleep.ts";
import type { HostedSubscription, SubscriptionHost } from "../subscription/host.ts";
import { EventsRefused } from "../wire/server-events.ts";
import { JwksUnavailable, ensureServerKeys } from "./jwks.ts";
import { refreshDelayMs } from "./refresh-schedule.ts";
import { SubscriptionRoute, type TerminationError } from "./route.ts";
import { newRouteToken, newWebhookSecret } from "./secret.ts";
import { WEBHOOK_LIMITS, type WebhookAbility, type WebhookRecord } from "./types.ts";
import { WebhookState } from "./webhook-state.ts";

type Available = Extract<WebhookAbility, { available: true }>;

/** Bounds of a subscribe answer's members (an id travels in every delivery's header). */
const GRANT_LIMITS = { idChars: 1024, refreshBeforeChars: 256 } as const;

/** The `events/subscribe` answer (wire notes §9.2); unknown members (`resultType`, `_meta`) pass. */
const GrantSchema = v.object({
  id: v.pipe(v.string("expected a string id"), v.minLength(1, "expected a non-empty id"), v.maxLength(GRANT_LIMITS.idChars, `expected at most ${GRANT_LIMITS.idChars} characters`)),
  /** Absent is read like an unparseable time (refresh soon, say so): assuming no expiry could let the grant lapse unnoticed. */
  refreshBefore: v.optional(v.nullable(v.pipe(v.string("expected a string or null"), v.maxLength(GRANT_LIMITS.refreshBeforeChars, "expected a time")))),
  cursor: v.optional(v.nullable(v.string("expected a string or null"))),
  truncated: v.optional(v.boolean("expected a boolean")),
  deliveryStatus: v.optional(v.unknown()),
});

/** A CallbackEndpointError on a refresh: retried in place, not an end (design notes §4.4 "Refresh errors"). */
export class RefreshCallbackError extends EventsRpcError {
  readonly retriedInPlace = true;
}

/** The clocks and I/O seams of a link; production uses the defaults, unit tests inject fakes. */
export interface WebhookSeams {
  /** The refresh wait's timers. */
  scheduler?: Scheduler;
  /** The wall clock (ms since the epoch) `refreshBefore` is read against. */
  now?: () => number;
  /** The JWKS fetch and its retry sleeps (jwks.ts). */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * What a subscription keeps of its webhook delivery across the attempts of its loop: the state
 * (pair, secret generations, last grant), its route, and a `terminated` envelope's news for the
 * loop.
 */
export class WebhookLink {
  readonly state: WebhookState;
  route: SubscriptionRoute | null = null;
  /** Set by the route when the server's `terminated` envelope arrives. */
  ended: { error: TerminationError } | null = null;
  /** The refresh wait in progress, woken by a termination. */
  readonly ending: WakeSlot = { wake: null };

  readonly scheduler: Scheduler;
  readonly now: () => number;

  constructor(
    record: WebhookRecord | null | undefined,
    readonly seams: WebhookSeams = {},
  ) {
    this.state = new WebhookState(record);
    this.scheduler = seams.scheduler ?? realScheduler;
    this.now = seams.now ?? Date.now;
  }

  terminated(error: TerminationError): void {
    this.ended = { error };
    this.ending.wake?.();
  }

  /** Removes the route from the table (later posts get 410). */
  drop(): void {
    this.route?.unregister();
    this.route = null;
  }
}

/** Runs until the signal aborts (returns) or something fails or ends it (throws, to keepUp). */
export async function runWebhook(host: SubscriptionHost, sub: HostedSubscription, signal: AbortSignal, link: WebhookLink): Promise<void> {
  const ability = host.webhook;
  if (!ability.available) throw new EventsRefused(`webhook delivery needs ${ability.missing}`);
  const { state } = link;
  const wire = host.wire(sub.spec.server);
  const origin = wire.origin;
  link.ended = null;

  await ensurePair(host, ability, sub, link);
  const token = state.token as string;
  for (let refresh = state.grant !== null; !signal.aborted; refresh = true) {
    if (origin !== null) await serverKeys(host, ability, origin, link, signal, state.subscriptionId !== null);
    if (signal.aborted) return;
    link.route ??= new SubscriptionRoute(host, sub, state, ability.routes, { token, origin }, (error) => link.terminated(error));
    const route = link.route;
    ability.routes.register(route);
    if (refresh && state.beginRotation(newWebhookSecret)) {
      // Durable before the server can sign with it: a crash mid-rotation still verifies its deliveries.
      host.persistWebhook(sub, state.record());
      await host.commit();
    }
    const sent = state.secretToSend();
    const params: Record<string, unknown> = {
      name: sub.spec.name,
      arguments: sub.spec.arguments,
      delivery: { mode: "webhook", url: ability.callbackUrl(token), secret: sent },
      cursor: sub.cursor,
      ttlMs: host.tuning.webhookTtlMs,
    };
    if (sub.spec.max_age_ms !== undefined) params.maxAgeMs = sub.spec.max_age_ms;
    let raw: Record<string, unknown>;
    try {
      raw = await wire.subscribe(params, signal);
    } catch (e) {
      if (signal.aborted) return;
      throw refresh ? retriedOnRefresh(e) : e;
    }
    if (signal.aborted) return;
    if (link.ended !== null) throw terminatedBy(host, sub, link);
    const grant = readGrant(raw);
    const wasGranted = state.grant !== null;
    state.confirm(sent);
    state.grant = { id: grant.id, refreshBefore: grant.refreshBefore ?? null, deliveryStatus: grant.deliveryStatus ?? null };
    if (wasGranted) state.refreshes++;
    const cursor = adoptCursor(sub.cursor, grant.cursor);
    if (grant.truncated === true && !host.gap(sub, { gap: true, cursor, reason: "truncated", eventId: null })) {
      host.status(sub, { kind: "error", error: "the pending queue is full: a possible gap (truncated) could not be queued" });
    }
    sub.cursor = cursor;
    host.persistWebhook(sub, state.record());
    host.persist(sub);
    await host.commit();
    // Durable: from here a crash resumes with this id, expiry and cursor, so events may be taken.
    route.activate(grant.id);
    sub.markUp("webhook");
    await sub.stored();
    reportDeliveryStatus(host, sub, grant.deliveryStatus);
    if (link.ended === null) {
      const schedule = grant.refreshBefore === undefined ? missingExpiry(link.now()) : refreshDelayMs(grant.refreshBefore, link.now());
      if (schedule.problem !== null) host.status(sub, { kind: "error", error: schedule.problem, retry_in_ms: schedule.delayMs });
      await abortableSleep(schedule.delayMs, signal, link.ending, link.scheduler);
    }
    if (link.ended !== null) throw terminatedBy(host, sub, link);
  }
}

/**
 * A graceful stop (explicit unsubscribe, session teardown, daemon shutdown): `events/unsubscribe`
 * with the mode (some servers require it, wire notes §10), bounded in time; NotFound means it is
 * gone already. Other failures are logged, never thrown: the server-side subscription then lapses
 * at its TTL. The route leaves the table either way. Nothing to do when no subscribe was attempted.
 */
export async function unsubscribeWebhook(host: SubscriptionHost, sub: HostedSubscription, link: WebhookLink): Promise<void> {
  const route = link.route;
  const ability = host.webhook;
  if (route === null || !ability.available) return;
  const params = { name: sub.spec.name, arguments: sub.spec.arguments, delivery: { mode: "webhook", url: ability.callbackUrl(route.token) } };
  try {
    await host.wire(sub.spec.server).unsubscribe(params, undefined, WEBHOOK_LIMITS.unsubscribeTimeoutMs);
  } catch (e) {
    const code = e instanceof EventsRpcError ? e.code : 0;
    if (classifyEventsError(code, undefined).kind !== "not_found") {
      logLine(`serve: events: ${sub.spec.server}/${sub.spec.name}: events/unsubscribe failed (the server's subscription lapses at its expiry): ${errorMessage(e)}`, { level: "warn", server: sub.spec.server, event: sub.spec.name, code: "unsubscribe_failed" });
    }
  } finally {
    link.drop();
  }
}

/** The persisted pair, unless another subscription's route holds its token: then (or with none) a fresh one, durable before use. */
async function ensurePair(host: SubscriptionHost, ability: Available, sub: HostedSubscription, link: WebhookLink) {
  const { state } = link;
  if (state.hasPair) {
    const held = ability.routes.lookup(state.token as string);
    if (held.kind !== "route" || held.route === link.route) return;
  }
  let token = newRouteToken();
  // 128 random bits do not collide; the bound only keeps a broken generator from spinning.
  for (let i = 0; i < 8 && ability.routes.inUse(token); i++) token = newRouteToken();
  if (ability.routes.inUse(token)) throw new EventsRpcError(-32603, "could not mint an unused webhook route token");
  state.adoptPair(token, newWebhookSecret());
  link.route = null;
  host.persistWebhook(sub, state.record());
  await host.commit();
}

/**
 * v1a keys before the call (design notes §4.6). A first fetch that keeps failing (nothing known, no
 * key, never subscribed) refuses, leaving no route. Once the server granted this subscription (an id
 * is known, also from before a restart), a JWKS outage at a refresh is transient: retried with
 * backoff while the route keeps its stage — refusing would drop a working subscription for a
 * passing 5xx.
 */
async function serverKeys(host: SubscriptionHost, ability: Available, origin: string, link: WebhookLink, signal: AbortSignal, granted: boolean): Promise<void> {
  try {
    const { fetch, sleep } = link.seams;
    await ensureServerKeys(origin, ability.keys, { timeoutMs: host.tuning.jwksTimeoutMs, signal, ...(fetch ? { fetch } : {}), ...(sleep ? { sleep } : {}) });
  } catch (e) {
    if (signal.aborted) return;
    if (!(e instanceof JwksUnavailable)) throw e;
    if (granted) throw new EventsRpcError(-32603, errorMessage(e));
    link.drop();
    throw new EventsRefused(errorMessage(e));
  }
}

function readGrant(raw: Record<string, unknown>): v.InferOutput<typeof GrantSchema> {
  const parsed = v.safeParse(GrantSchema, raw);
  if (!parsed.success) {
    throw new EventsRpcError(-32603, `the events/subscribe answer is not valid: ${scrubText(formatIssue(parsed.issues[0]))}`);
  }
  return { ...parsed.output, deliveryStatus: boundValue(parsed.output.deliveryStatus, scrubText) };
}

/** `active: false` or a `lastError` (wire notes §16.3): the server is failing to deliver, and says so. */
function reportDeliveryStatus(host: SubscriptionHost, sub: HostedSubscription, status: unknown): void {
  if (!isRecord(status)) return;
  const failing = status.active === false || (status.lastError !== undefined && status.lastError !== null);
  if (failing) host.status(sub, { kind: "delivery_status", delivery_status: status });
}

function missingExpiry(nowMs: number): { delayMs: number; problem: string } {
  const { delayMs } = refreshDelayMs("", nowMs);
  return { delayMs, problem: `the events/subscribe answer has no refreshBefore; refreshing in ${Math.round(delayMs / 1000)} s` };
}

function retriedOnRefresh(e: unknown): unknown {
  if (e instanceof EventsRpcError && classifyEventsError(e.code, e.data).kind === "callback") return new RefreshCallbackError(e.code, e.message, e.data);
  return e;
}

/** The server's `terminated` envelope: the pair is dropped (its URL stays 410), and the loop ends like a push termination. */
function terminatedBy(host: SubscriptionHost, sub: HostedSubscription, link: WebhookLink): EventsTerminated {
  const e = link.ended?.error ?? null;
  link.ended = null;
  link.drop();
  link.state.dropPair();
  host.persistWebhook(sub, null);
  return new EventsTerminated(e?.code ?? -32603, e?.message ?? "terminated", e?.data);
}
