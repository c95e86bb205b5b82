/**
 * The counters and histograms of MCP Events (issue 15 item 1; names in shared/metrics/catalog.ts
 * `EVENTS`), kept per session by its events store, which sees every step an event takes:
 *
 * - received: every valid occurrence offered to the hub (`accept`), before deduplication — so
 *   received = acknowledged + duplicates + refused (a full queue: the server offers it again,
 *   and it is received again). An invalid or oversized occurrence is not received: it is a gap.
 * - duplicates: an occurrence whose eventId is in its subscription's dedup window.
 * - acknowledged: stored durably — the write pass (pending log appended and fdatasync'd, then the
 *   snapshot) that covers its add has succeeded; a failed pass leaves it for the next one. A notify
 *   occurrence is never queued: with the event ledger it is acknowledged once its ledger record
 *   is written (same rule); without the ledger nothing of it is stored, so it is acknowledged as it
 *   is accepted and observes no acknowledgement latency (there is no fdatasync to measure).
 * - ackLatency: from its receipt in vigil (the poll page answered, the push notification routed,
 *   the webhook request arriving: a `performance.now()` reading the loops hand `accept`) to that
 *   successful write pass.
 * - delivered / dropped: the event left the queue with a delivered record (the model received it:
 *   in a run that succeeded, or a steer whose turn was answered — coalescer.ts) or was dropped after
 *   its attempts; deliveryLatency runs from its acknowledgement to that moment. Events queued by an
 *   earlier process (restored at open) carry mode "restored" and observe no delivery latency.
 * - gaps: a gap told (a status frame, and a notice to the model unless notify), by reason.
 *
 * Gap notices queued for the model are not events: they count in none of the event counters.
 * Hot path: the series of a (subscription, mode) is looked up once and kept; an arrival waiting
 * for its write is three array slots, an acknowledged queued event one map entry until it leaves.
 */
import { EVENTS, type EventMode } from "../shared/metrics/catalog.ts";
import type { CounterChild, HistogramChild } from "../shared/metrics/registry.ts";
import type { ArrivalFacts, DoneOutcome } from "./store/ledger.ts";
import { type EventOccurrence, type GapNotice, type PendingEntry, isGap } from "./types.ts";

/** The mode label of events an earlier process queued (their delivery mode was not kept). */
export const RESTORED_MODE: EventMode = "restored";
/** The mode label before a subscription has chosen one (or when the caller did not say). */
export const NO_MODE: EventMode = "none";
/** Series cached per store at most (subscription keys × modes); past it the cache starts again. */
const MAX_CACHED_KEYS = 1024;

/** Every series of one (server, event, mode). */
export interface EventSeries {
  readonly received: CounterChild;
  readonly acknowledged: CounterChild;
  readonly duplicates: CounterChild;
  readonly delivered: CounterChild;
  readonly dropped: CounterChild;
  readonly ackLatency: HistogramChild;
  readonly deliveryLatency: HistogramChild;
}

export function eventSeries(server: string, event: string, mode: string): EventSeries {
  return {
    received: EVENTS.received.at(server, event, mode),
    acknowledged: EVENTS.acknowledged.at(server, event, mode),
    duplicates: EVENTS.duplicates.at(server, event, mode),
    delivered: EVENTS.delivered.at(server, event, mode),
    dropped: EVENTS.dropped.at(server, event, mode),
    ackLatency: EVENTS.ackLatency.at(mode),
    deliveryLatency: EVENTS.deliveryLatency.at(mode),
  };
}

/** What the meter needs to know of an arrival (a queue entry, or a notify occurrence the ledger records). */
interface ArrivalView {
  server: string;
  name: string;
  event: EventOccurrence | GapNotice;
}

export class EventsMeter {
  /** Series by subscription key, then mode. */
  private readonly byKey = new Map<string, Record<string, EventSeries | undefined>>();
  /** Stored occurrences waiting for the write pass that makes them durable (parallel arrays: no object per event). */
  private waitSeries: EventSeries[] = [];
  /** Their receipt (`performance.now()`), NaN when unknown. */
  private waitSince: number[] = [];
  /** Their seq, -1 for one that is not queued (notify, recorded by the ledger). */
  private waitSeq: number[] = [];
  /** Queued occurrences acknowledged, by seq, until they are delivered or dropped. */
  private readonly acked = new Map<number, { series: EventSeries; at: number }>();

  constructor(
    /** Whether a seq is still queued (one that left before its write pass is not remembered). */
    private readonly isQueued: (seq: number) => boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The series of a subscription in a mode (looked up once, then kept). */
  series(key: string, server: string, name: string, mode: string): EventSeries {
    let modes = this.byKey.get(key);
    if (modes === undefined) {
      if (this.byKey.size >= MAX_CACHED_KEYS) this.byKey.clear();
      modes = {};
      this.byKey.set(key, modes);
    }
    return (modes[mode] ??= eventSeries(server, name, mode));
  }

  /** An occurrence offered to the hub (before dedup): counted received; its series, for the rest of its way. */
  arrived(sub: { key: string; spec: { server: string; name: string } }, mode: string): EventSeries {
    const s = this.series(sub.key, sub.spec.server, sub.spec.name, mode);
    s.received.inc();
    return s;
  }

  /** A gap told for a subscription (its mode, when it has one), by reason. */
  gap(sub: { spec: { server: string; name: string }; mode?: string | null }, reason: string): void {
    EVENTS.gaps.at(sub.spec.server, sub.spec.name, sub.mode ?? NO_MODE, reason).inc();
  }

  /** An occurrence recorded for the next write pass: queued (seq), or a notify one the ledger records (null). Gaps are ignored. */
  stored(seq: number | null, arrival: ArrivalView, facts: ArrivalFacts | undefined): void {
    if (facts === undefined || isGap(arrival.event)) return;
    this.waitSeries.push(this.series(facts.subscriptionKey, arrival.server, arrival.name, facts.delivery ?? NO_MODE));
    this.waitSince.push(facts.receivedMs ?? Number.NaN);
    this.waitSeq.push(seq ?? -1);
  }

  /** A notify occurrence with nothing to store (no ledger): acknowledged now, no latency. Returns true (the store's answer). */
  unstored(arrival: ArrivalView, facts: ArrivalFacts): true {
    if (!isGap(arrival.event)) this.series(facts.subscriptionKey, arrival.server, arrival.name, facts.delivery ?? NO_MODE).acknowledged.inc();
    return true;
  }

  /**
   * Runs one write pass (events-store.ts `writePass`, which takes what it writes synchronously as
   * it starts): what waited before it is acknowledged once it succeeded; a failed pass puts it
   * back in front, for the next one.
   */
  async pass(write: () => Promise<void>): Promise<void> {
    const series = this.waitSeries;
    const since = this.waitSince;
    const seqs = this.waitSeq;
    this.waitSeries = [];
    this.waitSince = [];
    this.waitSeq = [];
    try {
      await write();
    } catch (e) {
      this.waitSeries = series.concat(this.waitSeries);
      this.waitSince = since.concat(this.waitSince);
      this.waitSeq = seqs.concat(this.waitSeq);
      throw e;
    }
    const at = this.now();
    for (let i = 0; i < series.length; i++) {
      const s = series[i]!;
      s.acknowledged.inc();
      const t = since[i]!;
      if (!Number.isNaN(t)) s.ackLatency.observeSince(t, at);
      const seq = seqs[i]!;
      if (seq >= 0 && this.isQueued(seq)) this.acked.set(seq, { series: s, at });
    }
  }

  /** Entries left the queue (delivered or dropped); without an outcome they are only forgotten. */
  done(removed: readonly PendingEntry[], outcome: DoneOutcome | undefined): void {
    const at = this.now();
    for (const e of removed) {
      const known = this.acked.get(e.seq);
      if (known !== undefined) this.acked.delete(e.seq);
      if (outcome === undefined || isGap(e.event)) continue;
      const s = known?.series ?? this.series(`${RESTORED_MODE}\u0000${e.server}\u0000${e.name}`, e.server, e.name, RESTORED_MODE);
      if ("delivered" in outcome) {
        s.delivered.inc();
        if (known !== undefined) s.deliveryLatency.observeSince(known.at, at);
      } else {
        s.dropped.inc();
      }
    }
  }

  /** Acknowledged queued events remembered (for tests: bounded by the queue). */
  get remembered(): number {
    return this.acked.size;
  }
}
