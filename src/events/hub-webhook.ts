/**
 * A hub's webhook side (serve.md §6 item 4; events design notes §3.1, §4.3, §4.5): the webhook
 * records of its subscriptions, the reservations of their tokens after a restart, the v1a keys it
 * shares with the process, and the ingestion of one delivered occurrence.
 *
 * Ingestion is the daemon's hot path. A delivery is answered 2xx only once the pending log holding
 * it is fdatasync'd, and every answer waits for the store's group commit that covers its own add:
 * one sync serves every delivery that arrived while the previous one was in flight, and since each
 * ack waits for a sync covering everything added before it, no delivery is acknowledged before an
 * earlier one in the log is durable (log order = acknowledgement order). That commit writes the
 * log only: the dedup windows and cursors the deliveries changed are handed to the snapshot by a
 * debounce (one snapshot rewrite per burst, never one per delivery). The window on disk may lag the
 * log; on open the hub adds the eventIds of still-pending entries to their windows (see
 * `pendingEventIds`), so a delivery retried across a crash is not queued twice.
 */
import { isRecord } from "../shared/guards.ts";
import { type Scheduler, type TimerHandle, realScheduler, within } from "../shared/time.ts";
import type { EventsTuning } from "./ports.ts";
import { checkOccurrence, isStorableCursor } from "./rules/occurrence.ts";
import { subscriptionKey } from "./rules/key.ts";
import { COMMIT_DEBOUNCE_MS, type EventsStore } from "./store/events-store.ts";
import { SNAPSHOT_LIMITS } from "./store/snapshot.ts";
import type { Acceptance, HostedSubscription } from "./subscription/host.ts";
import type { EventDelivery, EventOccurrence, GapNotice } from "./types.ts";
import { isGap } from "./types.ts";
import type { WebhookAbility, WebhookAnswer, WebhookRecord } from "./webhook/types.ts";

/** What ingestion needs of its hub: the one path every occurrence takes, and the dirty windows. */
export interface IngestHost {
  readonly tuning: EventsTuning;
  accept(sub: HostedSubscription, event: EventOccurrence, delivery: EventDelivery, receivedMs?: number): Acceptance;
  gap(sub: HostedSubscription, notice: GapNotice & { seen_key?: string }): boolean;
  /** Hands the changed dedup windows and cursors to the store (no write). */
  flushDirty(): void;
}

const OK: WebhookAnswer = { status: 200, body: {} };
const UNAVAILABLE: WebhookAnswer = { status: 503 };

export class HubWebhooks {
  /** Webhook records by subscription key, as the snapshot keeps them. */
  private readonly records = new Map<string, WebhookRecord>();
  private debounce: TimerHandle | null = null;
  private stopped = false;
  /** The answer of the group commit the latest deliveries wait on, shared by all of them (see `durable`). */
  private waiting: { commit: Promise<void>; answer: Promise<WebhookAnswer> } | null = null;

  constructor(
    readonly ability: WebhookAbility,
    private readonly store: EventsStore,
    private readonly host: IngestHost,
    private readonly scheduler: Scheduler = realScheduler,
  ) {
    for (const key of store.subscriptionKeys()) {
      const webhook = store.subscription(key)?.webhook;
      if (webhook !== undefined) this.records.set(key, webhook);
    }
    // Keys ever seen for an origin bind its deliveries from now on, whichever session saw them.
    if (ability.available) for (const [origin, xs] of Object.entries(store.serverKeys)) ability.keys.add(origin, xs);
  }

  record(key: string): WebhookRecord | undefined {
    return this.records.get(key);
  }

  /**
   * Reserves the tokens of the records whose subscriptions start now (before any of them starts):
   * a delivery the server retries meanwhile gets 503, never 410 (design notes §4.5).
   */
  reserve(returning: Iterable<string>): void {
    if (!this.ability.available) return;
    for (const key of returning) {
      const token = this.records.get(key)?.token;
      if (token !== undefined) this.ability.routes.reserve(token);
    }
  }

  /** Sets (or, with null, removes) a subscription's record; a token no longer kept is released. */
  set(key: string, record: WebhookRecord | null): void {
    const old = this.records.get(key);
    if (record === null) this.records.delete(key);
    else this.records.set(key, { ...record });
    if (old !== undefined && old.token !== record?.token) this.releaseToken(old.token);
  }

  /** The subscription is forgotten: its token answers 410 from now on. */
  forget(key: string): void {
    const old = this.records.get(key);
    this.records.delete(key);
    if (old !== undefined) this.releaseToken(old.token);
  }

  /** The process's v1a keys, within the snapshot's bounds, for this session's snapshot. */
  exportKeys(): void {
    if (!this.ability.available) return;
    const out: Record<string, string[]> = {};
    const origins = Object.entries(this.ability.keys.exported());
    for (const [origin, xs] of origins.slice(0, SNAPSHOT_LIMITS.keyOrigins)) {
      if (origin.length > SNAPSHOT_LIMITS.originChars) continue;
      out[origin] = xs.filter((x) => x.length <= SNAPSHOT_LIMITS.serverKeyChars).slice(0, SNAPSHOT_LIMITS.keysPerOrigin);
    }
    this.store.setServerKeys(out);
  }

  /** One occurrence delivered by webhook (host.ts `ingest`). Never rejects. */
  async ingest(sub: HostedSubscription, occurrence: unknown, receivedMs?: number): Promise<WebhookAnswer> {
    const check = checkOccurrence(occurrence);
    const cursor = isRecord(occurrence) && isStorableCursor(occurrence.cursor) ? occurrence.cursor : null;
    let moves: boolean;
    if (!check.ok) {
      // Skipped and told as a gap, like the other modes; answered 200 so the server moves on.
      const notice = { gap: true as const, cursor, reason: check.reason, eventId: check.eventId, problem: check.problem };
      if (!this.host.gap(sub, { ...notice, ...(check.seenKey !== null ? { seen_key: check.seenKey } : {}) })) return UNAVAILABLE;
      moves = true;
    } else {
      const accepted = this.host.accept(sub, check.occurrence, "webhook", receivedMs);
      if (accepted === "full") return UNAVAILABLE;
      // A duplicate still waits below: its first copy may not be durable yet.
      moves = accepted === "new";
    }
    // The body's cursor is a watermark (wire notes §18 rule 8): the most recently received one is kept.
    if (moves && cursor !== null) sub.cursor = cursor;
    this.scheduleFlush();
    const answer = await this.durable();
    return !moves && answer.status === 200 ? { ...answer, duplicate: true } : answer;
  }

  /** Stops the debounce (the hub is closing; its final commit carries the windows). */
  stop(): void {
    this.stopped = true;
    if (this.debounce !== null) this.scheduler.clearTimeout(this.debounce);
    this.debounce = null;
  }

  /**
   * 200 once the log covering everything added so far is synced, within the ack deadline; else 503.
   * The deliveries that arrive while one commit is in flight all wait on the same next commit (the
   * store's group commit hands them one promise): they share one answer and one deadline timer,
   * armed by the first of them — a later one may get its 503 sooner than ackTimeoutMs, never a 200
   * before the sync that covers its add. Once that answer is given (either way) it is no longer
   * shared: a delivery arriving after a deadline passed waits its own, on the same commit.
   */
  private durable(): Promise<WebhookAnswer> {
    const commit = this.store.commit();
    if (this.waiting !== null && this.waiting.commit === commit) return this.waiting.answer;
    const entry = {
      commit,
      answer: answerWithin(commit, this.host.tuning.ackTimeoutMs, () => {
        if (this.waiting === entry) this.waiting = null;
      }),
    };
    this.waiting = entry;
    return entry.answer;
  }

  private scheduleFlush(): void {
    if (this.stopped || this.debounce !== null) return;
    this.debounce = this.scheduler.setTimeout(() => {
      this.debounce = null;
      this.host.flushDirty();
      this.store.scheduleCommit();
    }, COMMIT_DEBOUNCE_MS, { unref: true });
  }

  private releaseToken(token: string): void {
    if (this.ability.available) this.ability.routes.release(token);
  }
}

/**
 * OK once `commit` resolves within `ms`; UNAVAILABLE on a timeout or a failed write (kept for the
 * next one, which the server's retry triggers). `settled` runs as the answer is decided, before
 * anyone awaiting it resumes.
 */
async function answerWithin(commit: Promise<void>, ms: number, settled: () => void): Promise<WebhookAnswer> {
  let answer: WebhookAnswer;
  try {
    answer = (await within(commit.then(() => true), ms)) === true ? OK : UNAVAILABLE;
  } catch {
    answer = UNAVAILABLE;
  }
  settled();
  return answer;
}

/**
 * The eventIds of the still-pending entries (not gaps), by subscription key: a crash after the 2xx
 * can leave an event in the log but not yet in the snapshot's dedup window.
 */
export function pendingEventIds(store: EventsStore): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const entry of store.pending()) {
    if (isGap(entry.event) || typeof entry.event.eventId !== "string") continue;
    const key = subscriptionKey(entry.server, entry.name, entry.arguments);
    const ids = byKey.get(key) ?? [];
    ids.push(entry.event.eventId);
    byKey.set(key, ids);
  }
  return byKey;
}

/** A dedup window seeded from the snapshot, then the pending eventIds it lacks (newest last). */
export function seededWindow(recent: readonly string[], pending: readonly string[] | undefined): string[] {
  if (pending === undefined || pending.length === 0) return [...recent];
  const seen = new Set(recent);
  return [...recent, ...pending.filter((id) => !seen.has(id))];
}
