/**
 * The event ledger of a serve session, `events.ndjson` (serve.md "Evidence"), kept by its events
 * store only when evidence is configured: one chained record (ledger-records.ts, chain.ts) per
 * change of the pending queue — an arrival (received or gap), a delivered batch, a dropped event —
 * and per acknowledged event that was not queued (a notify action: received with seq null).
 *
 * The ledger and the pending log can never disagree after a crash: it is written ahead through
 * the pending log.
 *
 * - A line is built (and its chain position taken) synchronously, with the change in memory.
 * - A write pass embeds the lines not yet in the pending log as one `ledger` record, written last
 *   in the same append and sync as the pass's add and done records (the commit point); only then
 *   are they appended to events.ndjson and fdatasync'd, and the pass resolves after both.
 * - A rewrite of the pending log carries every line not yet confirmed in events.ndjson; confirmed
 *   lines are dead records it drops.
 * - On open, a torn tail of events.ndjson is cut, its last line gives the count and head, and the
 *   embedded lines it lacks are appended before anything else (ledger-tail.ts). An embedded line
 *   that contradicts the file (its last line differs, or lines are missing in between) is refused,
 *   naming the file.
 * - A ledger with no record yet whose store already holds live entries (queued by an older vigil,
 *   or before `evidence` was configured) gets one record per entry first — received with
 *   delivery_mode "restored", or a gap — built like any other line (so written ahead through the
 *   pending log by the next pass): their later delivered or dropped records then name seqs the
 *   ledger received.
 * - A failed append is retried by the next pass. While lines wait unconfirmed past a bound, new
 *   arrivals are refused like a full queue (the server keeps them), never dropped unrecorded.
 *
 * Its head (what a checkpoint names) is the durable one: lines written and synced only; so is its
 * pending set (what a stop statement names): the seqs still pending after exactly those lines.
 */
import { Chain, type ChainHead } from "../../evidence/chain.ts";
import type { CheckpointSource } from "../../evidence/checkpoints.ts";
import { deliveredRecord, droppedRecord, gapRecord, receivedRecord } from "../../evidence/ledger-records.ts";
import { canonicalSha256, sha256Hex } from "../../shared/digest.ts";
import { errorMessage } from "../../shared/errors.ts";
import { subscriptionKey } from "../rules/key.ts";
import { type EventAction, type EventDelivery, type EventOccurrence, type GapNotice, type PendingEntry, isGap } from "../types.ts";
import { EventsStoreError } from "./errors.ts";
import { LEDGER_FILE, type LedgerTail, ledgerPath, reconcile } from "./ledger-tail.ts";
import { type Fault, LogFile } from "./log-file.ts";
import { type EmbeddedLedger, serializeLedger } from "./pending-log.ts";

export { LEDGER_FILE, type LedgerTail, ledgerPath, readLedgerTail } from "./ledger-tail.ts";

export interface LedgerOptions {
  /** evidence.event_source: the records' `source` and the chain anchor's. */
  eventSource: string;
  /** The session's name (the records' session_id and the anchor's). */
  sessionId: string;
  /** Told after each successful append to events.ndjson, with the number of records it wrote. */
  onWritten?: (records: number) => void;
}

/** What the store cannot know about an arrival: which subscription it came through, and how. */
export interface ArrivalFacts {
  subscriptionKey: string;
  /** Required for an occurrence (a received record); a gap record has no delivery mode. */
  delivery?: EventDelivery;
  /** When it arrived in vigil (`performance.now()`): not recorded, only timed (metrics.ts ack latency). */
  receivedMs?: number;
}

/** Why entries leave the queue (with the ledger on, every markDone says). */
export type DoneOutcome =
  | { delivered: { batchTag: string; runId: string } }
  | { dropped: { attempts: number; errorCode: string } };

/** An arrival as the ledger records it: a queued entry (seq) or an acknowledged notify event (seq null). */
export interface Arrival {
  seq: number | null;
  server: string;
  name: string;
  action: EventAction;
  event: EventOccurrence | GapNotice;
}

/** What one write pass takes of the ledger, synchronously at its start (events-store.ts `writePass`). */
export interface LedgerPass {
  end: number;
  trailer: { append: string; rewrite: () => string };
}

/** What a line does to the pending set once it is written: queues a seq, settles some, or neither (notify). */
type Effect = { queue: number } | { settle: readonly number[] } | null;

export class EventLedger implements CheckpointSource {
  readonly name = LEDGER_FILE;
  /** Every line built, unconfirmed ones included: the next line's vigilseq and vigilprev. */
  private readonly chain: Chain;
  /** Lines written to events.ndjson and synced. */
  private durable: ChainHead;
  /** Lines built but not confirmed, vigilseq durable.count onwards (no newlines), and what each does to the pending set. */
  private readonly unconfirmed: string[] = [];
  private readonly effects: Effect[] = [];
  /** The seqs pending after the durable lines (queued, neither delivered nor dropped). */
  private readonly durablePending: Set<number>;
  private unconfirmedBytes = 0;
  /** Lines below this vigilseq are in the pending log as it stands, or confirmed. */
  private embeddedUpTo: number;

  private constructor(
    private readonly o: LedgerOptions,
    private readonly file: LogFile,
    head: ChainHead,
    /** Past this many unconfirmed bytes, arrivals are refused (`full`). */
    private readonly cap: number,
    /** The seqs pending after the durable lines: the store's live entries, which they agree with on open. */
    pendingAtOpen: Iterable<number>,
  ) {
    this.chain = Chain.resume(head);
    this.durable = { ...head };
    this.embeddedUpTo = head.count;
    this.durablePending = new Set(pendingAtOpen);
  }

  /**
   * The ledger of a store being opened: `tail` is events.ndjson as found (readLedgerTail), `embedded`
   * the pending log's ledger records, `live` the store's live entries (seq order) after replaying it.
   * The lines the file lacks are appended (and synced) here. A ledger still without any record
   * whose store holds live entries gets their records (`restore`), written by the store's next pass.
   */
  static async recover(dir: string, o: LedgerOptions, tail: LedgerTail, embedded: readonly EmbeddedLedger[], x: {
    fault: Fault | undefined;
    cap: number;
    live: ReadonlyMap<number, { entry: PendingEntry }>;
  }): Promise<EventLedger> {
    const path = ledgerPath(dir);
    const missing = reconcile(path, tail.head, embedded);
    const file = new LogFile(path, dir, tail.handle, tail.size, { logAppends: 0, logSyncs: 0, snapshots: 0, compactions: 0, logBytes: 0 }, x.fault, {
      append: "ledger_append",
      sync: "ledger_sync",
    });
    let head = tail.head;
    if (missing.length > 0) {
      try {
        await file.append(missing.map((l) => `${l}\n`).join(""));
      } catch (e) {
        await file.close().catch(() => {});
        throw new EventsStoreError("write_failed", `event ledger ${path}: cannot append the ${missing.length} record(s) the pending log holds for it: ${errorMessage(e)}`, { cause: e });
      }
      head = { count: head.count + missing.length, head: sha256Hex(`${missing.at(-1)!}\n`) };
      o.onWritten?.(missing.length);
    }
    // With no record, the ledger knows of no entry: those the store holds are queued by `restore`.
    const unknown = head.count === 0 && x.live.size > 0;
    const ledger = new EventLedger(o, file, head, x.cap, unknown ? [] : x.live.keys());
    if (unknown) ledger.restore(Array.from(x.live.values(), (e) => e.entry));
    return ledger;
  }

  // ---- CheckpointSource ----

  /** Records written to events.ndjson and synced, and the `vigilprev` of the next one. */
  head(): ChainHead {
    return { ...this.durable };
  }

  /** Every line counted by `head` is synced already. */
  sync(): boolean {
    return true;
  }

  /** The seqs pending after the durable lines, ascending (what a stop statement names, next to the durable head). */
  pendingSeqs(): number[] {
    return [...this.durablePending].sort((a, b) => a - b);
  }

  get path(): string {
    return this.file.path;
  }

  /** Lines waiting past the bound: the store refuses arrivals until they are written. */
  get full(): boolean {
    return this.unconfirmedBytes > this.cap;
  }

  /** Lines built but not yet written to events.ndjson. */
  get unconfirmedCount(): number {
    return this.unconfirmed.length;
  }

  // ---- records (synchronous, with the change in memory) ----

  /** Throws invalid_argument when these facts cannot make the arrival's record (before anything changes). */
  static checkArrival(event: EventOccurrence | GapNotice, facts: ArrivalFacts | undefined): asserts facts is ArrivalFacts {
    if (facts === undefined || typeof facts.subscriptionKey !== "string") {
      throw new EventsStoreError("invalid_argument", "the event ledger needs the subscription key of every arrival");
    }
    if (!isGap(event) && facts.delivery === undefined) throw new EventsStoreError("invalid_argument", "the event ledger needs the delivery mode of every event");
  }

  /** The record of an arrival; `restored`: an entry queued before the ledger was kept (its delivery mode unknown). */
  arrival(a: Arrival, facts: ArrivalFacts, restored = false): void {
    const base = { session_id: this.o.sessionId, seq: a.seq, server: a.server, event_name: a.name, subscription_key_sha256: sha256Hex(facts.subscriptionKey) };
    const effect = a.seq === null ? null : { queue: a.seq };
    const e = a.event;
    if (isGap(e)) {
      this.add((v) => gapRecord(this.o.eventSource, v, { ...base, reason: e.reason, cursor: e.cursor }), effect);
      return;
    }
    this.add((v) => receivedRecord(this.o.eventSource, v, {
      ...base,
      delivery_mode: restored ? "restored" : facts.delivery!,
      action: a.action,
      event_id: eventIdOf(e),
      payload_sha256: canonicalSha256(e),
    }), effect);
  }

  /**
   * Records entries the store held before the ledger had any record, in seq order. Their
   * subscription key is the one the hub queued them under (server, name, arguments: rules/key.ts).
   */
  private restore(entries: readonly PendingEntry[]): void {
    for (const entry of entries) {
      const facts = { subscriptionKey: subscriptionKey(entry.server, entry.name, entry.arguments) };
      this.arrival({ seq: entry.seq, server: entry.server, name: entry.name, action: entry.action, event: entry.event }, facts, true);
    }
  }

  /** The record of an arrival that is not queued (seq null); false, recording nothing, when the ledger is full. */
  unqueued(a: Omit<Arrival, "seq">, facts: ArrivalFacts): boolean {
    EventLedger.checkArrival(a.event, facts);
    if (this.full) return false;
    let event: Arrival["event"];
    try {
      // Digested as a reload would see it, like a queued entry's stored event.
      event = JSON.parse(JSON.stringify(a.event)) as Arrival["event"];
    } catch (e) {
      throw new EventsStoreError("invalid_argument", `event cannot be recorded: ${errorMessage(e)}`, { cause: e });
    }
    this.arrival({ ...a, event, seq: null }, facts);
    return true;
  }

  delivered(batchTag: string, runId: string, entries: readonly PendingEntry[]): void {
    this.add((v) => deliveredRecord(this.o.eventSource, v, {
      session_id: this.o.sessionId,
      batch_tag: batchTag,
      run_id: runId,
      seqs: entries.map((e) => e.seq),
      event_ids: entries.map((e) => eventIdOf(e.event)),
    }), { settle: entries.map((e) => e.seq) });
  }

  dropped(entry: PendingEntry, attempts: number, errorCode: string): void {
    this.add((v) => droppedRecord(this.o.eventSource, v, { session_id: this.o.sessionId, seq: entry.seq, event_id: eventIdOf(entry.event), attempts, error_code: errorCode }), { settle: [entry.seq] });
  }

  // ---- write passes ----

  /** The pass's share: the ledger record to append after its records, or to end a rewrite with. */
  beginPass(): LedgerPass {
    const end = this.chain.state.count;
    const confirmed = this.durable.count;
    const from = Math.max(this.embeddedUpTo, confirmed);
    const lines = this.unconfirmed.slice(0, end - confirmed);
    const append = end > from ? serializeLedger(from, lines.slice(from - confirmed)) : "";
    // A rewrite always ends with a ledger record (empty or not): its adds are then never taken
    // for the torn tail of an uncommitted pass (pending-log.ts).
    return { end, trailer: { append, rewrite: () => serializeLedger(confirmed, lines) } };
  }

  /** The pass's pending-log write landed: its lines are in the log (appended, or carried by the rewrite). */
  embedded(pass: LedgerPass): void {
    this.embeddedUpTo = Math.max(this.embeddedUpTo, pass.end);
  }

  /** Appends the unconfirmed lines the pass covers to events.ndjson and syncs them; throws the system error. */
  async write(pass: LedgerPass): Promise<void> {
    const n = pass.end - this.durable.count;
    if (n <= 0) return;
    const lines = this.unconfirmed.slice(0, n);
    const text = lines.map((l) => `${l}\n`).join("");
    await this.file.append(text);
    this.unconfirmed.splice(0, n);
    for (const effect of this.effects.splice(0, n)) {
      if (effect === null) continue;
      if ("queue" in effect) this.durablePending.add(effect.queue);
      else for (const seq of effect.settle) this.durablePending.delete(seq);
    }
    this.unconfirmedBytes -= Buffer.byteLength(text);
    this.durable = { count: pass.end, head: sha256Hex(`${lines[n - 1]!}\n`) };
    this.o.onWritten?.(n);
  }

  close(): Promise<void> {
    return this.file.close();
  }

  private add(build: (vigilseq: number) => Record<string, unknown>, effect: Effect): void {
    const line = this.chain.line(build(this.chain.state.count));
    this.chain.advance(line);
    this.unconfirmed.push(line);
    this.effects.push(effect);
    this.unconfirmedBytes += Buffer.byteLength(line) + 1;
  }
}

/**
 * The event id a delivered or dropped record names for an entry: its received record's. A gap's is
 * null — its gap record names none, and the id an oversized or invalid event's gap notice may quote
 * is that of the event it skipped, which was never received.
 */
function eventIdOf(e: EventOccurrence | GapNotice): string | null {
  return !isGap(e) && typeof e.eventId === "string" ? e.eventId : null;
}
