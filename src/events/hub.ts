/**
 * The MCP Events side of one session (serve.md §6 items 5–7): its durable store, its subscriptions
 * (the configured ones when this session owns them, and the runtime ones it made), the coalescer
 * that hands pending events to its model, and the answers to `mcp_events_*`.
 *
 * Every arriving occurrence takes one path (`accept`): dedup by eventId → the durable queue
 * (unless notify) → dedup window → `mcp_event` frame. A session that never subscribes opens its
 * store read-only in effect: nothing is written while there is nothing to persist.
 *
 * It reaches its session only through the port (ports.ts), and hands the commands a registry of its
 * subscriptions (hub-commands.ts), not its store and map.
 */
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { within } from "../shared/time.ts";
import { Coalescer } from "./coalescer.ts";
import { FrameHold } from "./frame-hold.ts";
import { type McpEventOccurrence, type McpEventStatusDetail, mcpEventFrame, mcpEventStatusFrame } from "./frames.ts";
import { type HubCommandContext, type SubscriptionRegistry, answerEventsCommand } from "./hub-commands.ts";
import { HubWebhooks, pendingEventIds, seededWindow } from "./hub-webhook.ts";
import { meterHub } from "./metrics-gauges.ts";
import type { EventsServices, EventsSession, EventsTuning, FaultReport } from "./ports.ts";
import { subscriptionKey } from "./rules/key.ts";
import { type ArrivalFacts, type EventLedger, EventsStore, type LedgerOptions, type SubscriptionRecord, pendingOf } from "./store/events-store.ts";
import type { Acceptance, CursorMove, HostedSubscription, Origin, SubscriptionHost } from "./subscription/host.ts";
import { Subscription } from "./subscription/subscription.ts";
import type { EventDelivery, EventOccurrence, GapNotice, SubscriptionSpec } from "./types.ts";
import type { ServerEvents } from "./wire/server-events.ts";
import type { WebhookAbility, WebhookAnswer, WebhookRecord } from "./webhook/types.ts";

const STOP_BOUND_MS = 5000;
/** Over-cap messages already told to the model (one notice however many streams heard of it). */
const DROPPED_MEMORY = 256;

export class EventsHub implements SubscriptionHost {
  private readonly subs = new Map<string, Subscription>();
  private readonly coalescer: Coalescer;
  readonly unsubscribedConfigured = new Set<string>(); // configured keys a client unsubscribed (hub-configured.ts)
  private readonly droppedSeen: string[] = [];
  /** Subscriptions whose dedup window changed since the last commit. */
  private readonly dirty = new Set<HostedSubscription>();
  /** Subscriptions whose store record holds their whole window: a page moves it by a position, not a copy. */
  private readonly mirrored = new WeakSet<HostedSubscription>();
  private readonly offFrames: () => void;
  private readonly offGauges: () => void;
  private closing: Promise<void> | null = null;
  /** Webhook records, token reservations, server keys and ingestion (hub-webhook.ts). */
  private readonly webhooks: HubWebhooks;
  /** eventIds still pending at open, by key: added to each window when its subscription first starts. */
  private readonly pendingIds: Map<string, string[]>;
  private readonly frames: FrameHold; // every frame of this hub goes through it (frame-hold.ts)

  private constructor(
    readonly session: EventsSession,
    private readonly store: EventsStore,
    private readonly services: EventsServices,
    readonly ownsConfigured: boolean,
    private readonly now: () => number,
    /** The session's containment boundary: what escapes this hub's own async roots goes there. */
    private readonly onFault: FaultReport,
  ) {
    this.frames = new FrameHold(session);
    this.coalescer = new Coalescer(session, store, services.tuning.coalesceMs, (entry, detail) => {
      this.frames.emit(mcpEventStatusFrame({ server: entry.server, name: entry.name, arguments: entry.arguments }, detail));
    }, undefined, services.tuning.modelBackoffCapMs, onFault);
    // A response frame answers a client's command: the runtime-subscription TTL runs from the last one.
    this.offFrames = session.subscribe((frame) => {
      if (frame.type === "response" && store.runtimeKeys().length > 0) {
        store.setLastClientMs(this.now());
        store.scheduleCommit();
      }
    });
    const context: HubCommandContext = { registry: this.registry(), services };
    session.setEventsHandler((command) => answerEventsCommand(context, command));
    this.webhooks = new HubWebhooks(services.webhook, store, {
      tuning: services.tuning,
      accept: (sub, event, delivery) => this.accept(sub, event, delivery),
      gap: (sub, notice) => this.gap(sub, notice),
      flushDirty: () => this.flushDirty(),
    });
    this.pendingIds = pendingEventIds(store);
    this.offGauges = meterHub({ session: session.name, store, subscriptions: () => this.subs.values() });
  }

  /** `opened`: the session's store when it was already opened (stdio mode checks it before any MCP server starts). */
  static async open(
    session: EventsSession,
    dir: string,
    services: EventsServices,
    ownsConfigured: boolean,
    now: () => number = Date.now,
    opened?: EventsStore,
    onFault: FaultReport = (e) => logLine(`serve: events: session ${JSON.stringify(session.name)}: ${errorMessage(e)}`, { level: "error", session: session.name, code: "events_fault" }),
    ledger?: LedgerOptions,
  ): Promise<EventsHub> {
    const store = opened ?? (await EventsHub.openStore(dir, services.tuning, ledger));
    const hub = new EventsHub(session, store, services, ownsConfigured, now, onFault);
    // Before any subscription starts: a retry racing its resubscribe gets 503, not 410.
    hub.webhooks.reserve(hub.returningKeys());
    hub.startConfigured();
    hub.restoreRuntime();
    if (store.pendingCount > 0) hub.coalescer.kick();
    return hub;
  }

  /** A session's events store, opened (and refused, when damaged) without starting anything. */
  static openStore(dir: string, tuning: EventsTuning, ledger?: LedgerOptions): Promise<EventsStore> {
    return EventsStore.open(dir, { maxPending: tuning.maxPending, maxPendingBytes: tuning.maxPendingBytes, ...(ledger === undefined ? {} : { ledger }) });
  }

  /** The session's event ledger (with evidence configured), else null. */
  get ledger(): EventLedger | null {
    return this.store.ledger;
  }

  get tuning(): EventsTuning { return this.services.tuning; }
  get webhook(): WebhookAbility { return this.services.webhook; }
  wire(server: string): ServerEvents { return this.services.wire(server); }
  /** A poll page or run slice: its frames go to the session together when released (frame-hold.ts). */
  holdFrames(): () => void { return this.frames.hold(); }

  /** The reaper must leave this session alone: a live subscription, one still trying, or pending events. */
  keepsAlive(): boolean {
    if (this.store.pendingCount > 0) return true;
    for (const sub of this.subs.values()) if (sub.live) return true;
    return false;
  }

  /** The server is connected again: its subscriptions waiting to retry resume now. */
  wakeServer(server: string): void {
    try {
      for (const sub of this.subs.values()) if (sub.spec.server === server) sub.wake();
    } catch (e) {
      this.onFault(e); // called from the pool's listener: this session's failure, not the pool's
    }
  }

  /** Starts (or restarts) a subscription under this hub. */
  private startSubscription(spec: SubscriptionSpec, origin: Origin, restored = false): Subscription {
    const key = subscriptionKey(spec.server, spec.name, spec.arguments);
    const record = this.store.subscription(key);
    const recent = seededWindow(record?.recent ?? [], this.pendingIds.get(key));
    this.pendingIds.delete(key);
    const webhook = this.webhooks.record(key) ?? null;
    const sub = new Subscription(this, { key, spec, origin, restored, cursor: record?.cursor ?? null, recent, webhook }, this.now);
    this.subs.set(key, sub);
    sub.start();
    return sub;
  }

  // ---- SubscriptionHost ----

  accept(sub: HostedSubscription, event: EventOccurrence, delivery: EventDelivery, receivedMs = performance.now()): Acceptance {
    if (typeof event !== "object" || event === null || Array.isArray(event)) return "duplicate";
    const series = this.store.meter.arrived(sub, delivery);
    const id = typeof event.eventId === "string" ? event.eventId : null;
    if (id !== null && sub.dedup.has(id)) {
      sub.duplicates++;
      series.duplicates.inc();
      return "duplicate";
    }
    const { spec } = sub;
    if (!this.take(sub, event, { subscriptionKey: sub.key, delivery, receivedMs })) return "full";
    if (id !== null) sub.dedup.add(id);
    this.dirty.add(sub);
    sub.delivered++;
    const { server, name, arguments: args, action } = spec;
    this.frames.emit(mcpEventFrame({ server, name, arguments: args, delivery, action, event: event as McpEventOccurrence }));
    return "new";
  }

  gap(sub: HostedSubscription, notice: GapNotice & { dropped_id?: string; seen_key?: string }): boolean {
    const { dropped_id: droppedId, seen_key: seenKey, ...gap } = notice;
    // An over-cap or invalid event replayed after a reconnect is the same loss: told once, like
    // any duplicate. The loops give its dedup-window key (rules/occurrence.ts seenKeyOf).
    const seenId = seenKey ?? null;
    if (seenId !== null && sub.dedup.has(seenId)) {
      sub.duplicates++;
      return true;
    }
    const toModel = sub.spec.action !== "notify";
    if (!(toModel && droppedId !== undefined && this.droppedSeen.includes(droppedId))) {
      // Full: nothing is recorded, so the same notice can be offered again.
      if (!this.take(sub, gap, { subscriptionKey: sub.key })) return false;
      if (toModel && droppedId !== undefined) {
        this.droppedSeen.push(droppedId);
        if (this.droppedSeen.length > DROPPED_MEMORY) this.droppedSeen.shift();
      }
    }
    if (seenId !== null) {
      sub.dedup.add(seenId);
      this.dirty.add(sub);
    }
    this.store.meter.gap(sub, gap.reason);
    this.status(sub, {
      kind: "gap",
      cursor: gap.cursor,
      reason: gap.reason,
      event_id: gap.eventId,
      ...(gap.possibly_not_an_event === true ? { possibly_not_an_event: true } : {}),
      ...(gap.problem !== undefined ? { problem: gap.problem } : {}),
    });
    return true;
  }

  /** Queues an arrival, or for notify has the event ledger (if any) record it alone, with the ledger's facts; false when full. */
  private take(sub: HostedSubscription, event: EventOccurrence | GapNotice, facts: ArrivalFacts): boolean {
    const { spec } = sub;
    if (spec.action === "notify") return this.store.noteUnqueued({ server: spec.server, name: spec.name, action: "notify", event }, facts);
    if (this.store.tryAdd(pendingOf(spec, spec.action, event), facts) === null) return false;
    this.coalescer.kick();
    return true;
  }

  ingest(sub: HostedSubscription, occurrence: unknown, receivedMs?: number): Promise<WebhookAnswer> {
    return this.webhooks.ingest(sub, occurrence, receivedMs);
  }

  persistWebhook(sub: HostedSubscription, record: WebhookRecord | null): void {
    this.webhooks.set(sub.key, record);
    this.dirty.delete(sub);
    this.store.setSubscription(sub.key, this.record(sub));
    this.webhooks.exportKeys();
    this.store.scheduleCommit();
  }

  status(sub: HostedSubscription, detail: McpEventStatusDetail): void {
    this.frames.emit(mcpEventStatusFrame({ server: sub.spec.server, name: sub.spec.name, arguments: sub.spec.arguments }, detail));
  }

  commit(move?: CursorMove): Promise<void> {
    if (move !== undefined) this.dirty.add(move.sub);
    this.flushDirty(move);
    return this.store.commit();
  }

  persist(sub: HostedSubscription): void {
    this.dirty.delete(sub);
    this.store.setSubscription(sub.key, this.record(sub));
    this.store.scheduleCommit();
  }

  forget(sub: HostedSubscription): void {
    this.webhooks.forget(sub.key);
    this.store.forgetSubscription(sub.key);
    this.store.scheduleCommit();
  }

  retired(sub: HostedSubscription): void {
    if (this.subs.get(sub.key) === sub) this.subs.delete(sub.key);
  }

  fault(error: unknown): void { this.onFault(error); }

  /** The snapshot record of a subscription (a runtime one keeps its spec, for restore), for the store to keep whole. */
  private record(sub: HostedSubscription, cursor = sub.cursor): SubscriptionRecord {
    sub.dedup.takeFresh(); // the whole window goes to the store: none of its ids is news to it any more
    this.mirrored.add(sub);
    const record: SubscriptionRecord = { cursor, recent: sub.dedup.toArray() };
    if (sub.origin === "runtime") record.runtime = sub.spec;
    const webhook = this.webhooks.record(sub.key);
    if (webhook !== undefined) record.webhook = webhook;
    return record;
  }

  // ---- lifecycle ----

  /** Stops every subscription (before the session closes, so nothing new arrives). Bounded. */
  async stopSubscriptions(): Promise<void> {
    const subs = [...this.subs.values()];
    await within(Promise.allSettled(subs.map((s) => s.stop())), STOP_BOUND_MS);
  }

  /** After the session closed: stops the coalescer and writes what is left. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stopSubscriptions();
      this.coalescer.stop();
      this.webhooks.stop();
      this.offFrames();
      this.offGauges();
      this.flushDirty();
      try {
        await this.store.close();
      } catch (e) {
        logLine(`serve: events: session ${JSON.stringify(this.session.name)}: closing the events state failed: ${errorMessage(e)}`, { level: "warn", session: this.session.name, code: "events_state_close_failed" });
      }
    })();
    return this.closing;
  }

  /**
   * Hands the dedup windows changed since the last commit to the store, once per page or run, with
   * `move`'s cursor: a subscription whose whole window the store holds moves by a position (cursor and
   * the ids taken since: store/positions.ts), not by a copy of up to 1024 ids and a snapshot rewrite.
   */
  private flushDirty(move?: CursorMove): void {
    for (const sub of this.dirty) {
      if (this.subs.get(sub.key) !== sub) continue;
      const cursor = sub === move?.sub ? move.cursor : sub.cursor;
      if (this.mirrored.has(sub) && this.store.hasSubscription(sub.key)) this.store.setPosition(sub.key, cursor, sub.dedup.takeFresh());
      else this.store.setSubscription(sub.key, this.record(sub, cursor));
    }
    this.dirty.clear();
  }

  /** What the `mcp_events_*` commands (hub-commands.ts) and a reload (hub-configured.ts) may do to this hub's subscriptions. */
  registry(): SubscriptionRegistry {
    return {
      ownsConfigured: this.ownsConfigured,
      pendingCount: () => this.store.pendingCount,
      list: () => this.subs.values(),
      find: (key) => this.subs.get(key),
      upsert: (spec, readyMs) => this.upsertRuntime(spec, readyMs),
      remove: (key) => this.removeKey(key),
    };
  }

  private async upsertRuntime(spec: SubscriptionSpec, readyMs: number): Promise<Subscription | Error> {
    const key = subscriptionKey(spec.server, spec.name, spec.arguments);
    const replaced = this.subs.get(key);
    // The old loops stop first: old and new share the cursor and dedup window through the store.
    if (replaced !== undefined) {
      await replaced.stop();
      this.store.setSubscription(key, this.record(replaced));
    }
    const sub = this.startSubscription(spec, "runtime");
    const ready = await within(sub.ready, readyMs);
    const failure = ready === undefined ? new Error(`the subscription did not come up within ${readyMs / 1000} s`) : ready;
    if (failure !== null) {
      await sub.stop();
      this.retired(sub);
      if (replaced !== undefined) this.startSubscription(replaced.spec, "runtime", true);
      else this.forgetKey(key);
      return failure;
    }
    this.store.setSubscription(key, this.record(sub));
    this.store.setLastClientMs(this.now());
    await this.store.commit();
    return sub;
  }

  private async removeKey(key: string): Promise<boolean> {
    const sub = this.subs.get(key);
    const stored = this.store.subscription(key) !== undefined;
    if (sub !== undefined) {
      await sub.stop();
      this.retired(sub);
      if (sub.origin === "configured") this.unsubscribedConfigured.add(key);
    }
    if (stored) {
      this.forgetKey(key);
      await this.store.commit();
    }
    return sub !== undefined || stored;
  }

  /** The whole record goes, webhook token included (it answers 410 from now on). */
  private forgetKey(key: string): void {
    this.webhooks.forget(key);
    this.store.forgetSubscription(key);
  }

  /** Keys whose subscriptions start as the hub opens: configured ones it owns, runtime ones within the TTL. */
  private returningKeys(): string[] {
    const configured = this.ownsConfigured ? this.services.configured().map((s) => subscriptionKey(s.server, s.name, s.arguments)) : [];
    const runtime = this.runtimeFresh() ? this.store.runtimeKeys() : [];
    return [...configured, ...runtime];
  }

  /** Runtime records come back only within the TTL since the last client command. */
  private runtimeFresh(): boolean {
    const last = this.store.lastClientMs;
    return last !== null && this.now() - last <= this.services.tuning.runtimeTtlMs;
  }

  startConfigured(): void { // at open, and after a reload (hub-configured.ts)
    if (!this.ownsConfigured || this.closing !== null) return;
    for (const spec of this.services.configured()) {
      const key = subscriptionKey(spec.server, spec.name, spec.arguments);
      if (this.subs.has(key) || this.unsubscribedConfigured.has(key)) continue;
      this.startSubscription(spec, "configured");
    }
  }

  /** Runtime subscriptions from the snapshot come back, within the TTL since the last client command. */
  private restoreRuntime(): void {
    for (const key of this.store.subscriptionKeys()) {
      const record = this.store.subscription(key);
      if (record?.runtime === undefined || this.subs.has(key)) continue;
      if (!this.runtimeFresh()) {
        logLine(`serve: events: session ${JSON.stringify(this.session.name)}: forgetting the expired runtime subscription ${record.runtime.server}/${record.runtime.name}`, { session: this.session.name, server: record.runtime.server, event: record.runtime.name, code: "runtime_subscription_expired" });
        this.forgetKey(key);
        this.store.scheduleCommit();
        continue;
      }
      this.startSubscription(record.runtime, "runtime", true);
    }
  }
}
