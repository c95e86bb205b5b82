/**
 * A session's durable MCP Events state (serve.md §3, §6 item 5): the bounded queue of pending
 * events (the log) and the small per-subscription state (the snapshot: cursor, dedup window,
 * runtime spec, last client use; store-snapshot.ts).
 *
 * Changes are made in memory and become durable on `commit()`: the log, then the snapshot if one
 * is due (its temp synced alongside the log, renamed after it), so a stored cursor never runs ahead
 * of the events it passed. A page's cursor and window ids are a `position` record in the log's own
 * append (positions.ts): the snapshot is written at other changes, as a checkpoint at most once a
 * second while positions come in, and on close. A failed log write keeps the records for the next
 * commit and writes no snapshot. Concurrent commits share writes (group commit); passes never overlap.
 *
 * Nothing is written until there is something to persist: a session that never subscribes leaves
 * no files behind.
 *
 * With evidence configured (`ledger`), every change of the queue also makes a record of the event
 * ledger `events.ndjson`, written ahead through the pending log in the same commit (ledger.ts); the
 * facts the store cannot know (the subscription, the delivery mode, a batch's run) come with the
 * change: `tryAdd(input, facts)`, `noteUnqueued(arrival, facts)`, `markDone(seqs, outcome)`.
 */
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { realScheduler } from "../../shared/time.ts";
import { GroupCommit } from "../../shared/durable/group-commit.ts";
import type { PendingEntry } from "../types.ts";
import { BackgroundCommits } from "./background-commits.ts";
import { EventsStoreError } from "./errors.ts";
import { LogBacklog } from "./log-backlog.ts";
import { LogFile, type WriteCounters } from "./log-file.ts";
import { type Arrival, type ArrivalFacts, type DoneOutcome, EventLedger } from "./ledger.ts";
import { backlogCap, type EventsStoreOptions, type LoadedState, loadState } from "./load.ts";
import { applyAttempts, asEntry, type LiveEntry, liveEntry, logPath, serializeAdd, serializeDone } from "./pending-log.ts";
import { NOT_PLAIN, plainJsonCopy } from "./json-copy.ts";
import { readSnapshotFile, type ServerKeysData, type SnapshotData, type SubscriptionRecord, snapshotPath } from "./snapshot.ts";
import { StoreSnapshot } from "./store-snapshot.ts";
import { SnapshotWrite } from "./snapshot-write.ts";
import type { Scheduler } from "../../shared/time.ts";
import { EventsMeter } from "../metrics.ts";

export type { SubscriptionRecord } from "./snapshot.ts";
export type { FaultOp, WriteCounters } from "./log-file.ts";
export { COMPACT_MIN_BYTES } from "./log-backlog.ts";
export { COMMIT_DEBOUNCE_MS } from "./background-commits.ts";
export type { ArrivalFacts, DoneOutcome, EventLedger, LedgerOptions } from "./ledger.ts";
export { type EventsStoreOptions, maxLogFileBytes } from "./load.ts";
export { pendingOf } from "./pending-log.ts";

export class EventsStore {
  /** Lines of the log that were skipped on load (not a record). */
  readonly skippedLines: number;
  /** Bytes of a torn tail cut from the log on load. */
  readonly repairedBytes: number;
  private readonly live: Map<number, LiveEntry>;
  private nextSeq: number;
  private liveBytes = 0;
  /** Live entries whose action is steer: a reader looking for them scans only when there are some. */
  private liveSteer = 0;
  /** Log records serialized since the last successful write (log-backlog.ts). */
  private readonly backlog: LogBacklog;
  /** Subscription records, client time, server keys; what a pass writes of them (store-snapshot.ts). */
  private readonly snap: StoreSnapshot;
  private readonly scheduler: Scheduler;
  /** Every change bumps this; the group commit tracks how far writes have covered it. */
  private changes = 0;
  private readonly commits: GroupCommit;
  private readonly counters: WriteCounters;
  private readonly log: LogFile;
  private readonly background: BackgroundCommits;
  private closing: Promise<void> | null = null;
  private final = false; // set as close starts (before `closing` is): its pass writes every position into the snapshot
  private closed = false;
  /** The event ledger (with evidence configured), else null. */
  readonly ledger: EventLedger | null;
  /** The events metrics of this session (metrics.ts): every arrival, write pass and done goes through it. */
  readonly meter = new EventsMeter((seq) => this.live.has(seq));

  private constructor(
    private readonly dir: string,
    private readonly options: EventsStoreOptions,
    { snapshot, replayed, counters, ledger, mustRewrite }: LoadedState,
  ) {
    this.ledger = ledger;
    this.counters = counters;
    this.live = replayed.live;
    for (const e of this.live.values()) {
      this.liveBytes += e.bytes;
      if (e.entry.action === "steer") this.liveSteer++;
    }
    this.nextSeq = replayed.maxSeq + 1;
    this.skippedLines = replayed.skipped;
    this.repairedBytes = replayed.repairedBytes;
    this.snap = new StoreSnapshot(snapshot, replayed, dir);
    this.scheduler = options.scheduler ?? realScheduler;
    this.log = new LogFile(logPath(dir), dir, replayed.handle, replayed.size, counters, options.fault);
    this.backlog = new LogBacklog(this.log, backlogCap(options.maxPendingBytes));
    this.commits = new GroupCommit(() => this.meter.pass(() => this.writePass()), () => this.changes);
    this.background = new BackgroundCommits(() => this.commits.request(), this.scheduler, dir, () => this.changes++);
    if (mustRewrite) this.backlog.forceRewrite();
    // Ledger lines built on open (entries queued before the ledger existed) are written soon, not at the next arrival.
    if ((ledger?.unconfirmedCount ?? 0) > 0) this.changes = 1;
    if (this.changes > 0) this.background.schedule();
  }

  /**
   * Loads the snapshot and the log if they exist (creating nothing). A torn log tail is cut back
   * and synced before this returns; unparseable log lines are skipped and counted. An invalid
   * snapshot, or a log that is a symlink or over its bound, is refused with an EventsStoreError.
   * Temp files of snapshot and log rewrites that a crash left behind are removed first. With the
   * ledger, the lines the pending log holds for it but events.ndjson lacks are appended (load.ts).
   */
  static async open(dir: string, options: EventsStoreOptions): Promise<EventsStore> {
    return new EventsStore(dir, options, await loadState(dir, options));
  }

  /** Read-only peek (daemon boot: which sessions have runtime subscriptions); undefined if there is no snapshot. */
  static async readSnapshot(dir: string): Promise<SnapshotData | undefined> {
    return readSnapshotFile(dir);
  }

  // ---- pending queue ----

  /**
   * Queues an entry under the next seq and returns it (as stored, frozen), or null when the queue
   * is full — by count, or by bytes unless the queue is empty (so one oversized event cannot wedge
   * a subscription). Nothing at all is recorded when it returns null. With the ledger, `facts` are
   * required (its received or gap record), and a ledger past its bound of unwritten lines is full too.
   */
  tryAdd(input: Omit<PendingEntry, "seq">, facts?: ArrivalFacts): PendingEntry | null {
    this.assertOpen();
    if (this.ledger !== null) {
      EventLedger.checkArrival(input.event, facts);
      if (this.ledger.full) return null;
    }
    if (this.live.size >= this.options.maxPending) return null;
    const draft = { ...input, seq: this.nextSeq } as PendingEntry;
    let line: string;
    let entry: PendingEntry | null;
    try {
      line = serializeAdd(draft);
      // A private copy, exactly what a reload (the line read back) yields; plain data without the parse (json-copy.ts).
      const copied = plainJsonCopy(draft);
      entry = asEntry(copied !== NOT_PLAIN ? copied : (JSON.parse(line) as { add: unknown }).add);
    } catch (e) {
      throw new EventsStoreError("invalid_argument", `pending event cannot be stored: ${errorMessage(e)}`, { cause: e });
    }
    if (entry === null) throw new EventsStoreError("invalid_argument", "pending event cannot be stored: it does not have the shape of an entry");
    const stored = liveEntry(entry, line);
    if (this.live.size > 0 && this.liveBytes + stored.bytes > this.options.maxPendingBytes) return null;
    this.nextSeq++;
    this.live.set(entry.seq, stored);
    this.liveBytes += stored.bytes;
    if (stored.entry.action === "steer") this.liveSteer++;
    this.record(stored.line, stored.bytes);
    this.meter.stored(entry.seq, entry, facts);
    // The stored entry is JSON read back: its digest cannot throw.
    this.ledger?.arrival({ seq: entry.seq, server: entry.server, name: entry.name, action: entry.action, event: entry.event }, facts!);
    return stored.entry;
  }

  /**
   * An acknowledged event that is not queued (a notify action's occurrence or gap): a ledger record
   * alone, seq null, written by the next commit. False when the ledger is full (refuse it like a
   * full queue); without the ledger it records nothing and returns true.
   */
  noteUnqueued(arrival: Omit<Arrival, "seq">, facts: ArrivalFacts): boolean {
    this.assertOpen();
    if (this.ledger === null) return this.meter.unstored(arrival, facts);
    if (!this.ledger.unqueued(arrival, facts)) return false;
    this.changes++;
    this.meter.stored(null, arrival, facts);
    return true;
  }

  /** Live entries, seq order. */
  pending(): readonly PendingEntry[] {
    return Array.from(this.live.values(), (e) => e.entry);
  }

  /** Live entries in seq order, not copied: a reader that needs the first few stops early (a coalescer firing). */
  *pendingInOrder(): Generator<PendingEntry, void, undefined> {
    for (const e of this.live.values()) yield e.entry;
  }

  /** Live entries whose action is steer. */
  get steerCount(): number {
    return this.liveSteer;
  }

  /**
   * Removes entries from the queue; unknown (or already done) seqs are ignored. With the ledger,
   * `outcome` is required: one delivered record for the batch, or a dropped record per entry.
   */
  markDone(seqs: readonly number[], outcome?: DoneOutcome): void {
    this.assertOpen();
    if (this.ledger !== null && outcome === undefined) throw new EventsStoreError("invalid_argument", "the event ledger needs the outcome of every entry marked done");
    const removed: PendingEntry[] = [];
    for (const seq of seqs) {
      const e = this.live.get(seq);
      if (e === undefined) continue;
      this.live.delete(seq);
      this.liveBytes -= e.bytes;
      if (e.entry.action === "steer") this.liveSteer--;
      removed.push(e.entry);
    }
    if (removed.length === 0) return;
    this.meter.done(removed, outcome);
    const line = serializeDone(removed.map((e) => e.seq));
    this.record(line, Buffer.byteLength(line));
    if (this.ledger === null || outcome === undefined) return;
    if ("delivered" in outcome) this.ledger.delivered(outcome.delivered.batchTag, outcome.delivered.runId, removed);
    else for (const e of removed) this.ledger.dropped(e, outcome.dropped.attempts, outcome.dropped.errorCode);
  }

  /** Records failed-attempt counts by seq, persisted with the entries (pending-log.ts `attempts`). */
  setAttempts(counts: ReadonlyMap<number, number>): void {
    this.assertOpen();
    const applied = applyAttempts(this.live, counts);
    if (applied === null) return;
    this.liveBytes += applied.deltaBytes;
    this.record(applied.line, Buffer.byteLength(applied.line));
  }

  attemptsOf(seq: number): number {
    return this.live.get(seq)?.attempts ?? 0;
  }

  get pendingCount(): number {
    return this.live.size;
  }
  /** The seq of the newest entry added (0: none yet): a commit called now covers every entry up to it. */
  get newestSeq(): number { return this.nextSeq - 1; }

  /** Bytes of the live entries' lines (`add`, and `attempts` once counted), newlines included (a freshly compacted log is exactly this long). */
  get pendingBytes(): number {
    return this.liveBytes;
  }

  // ---- snapshot ----

  subscription(key: string): SubscriptionRecord | undefined {
    return this.snap.get(key);
  }

  hasSubscription(key: string): boolean { return this.snap.has(key); }
  /** Keys of the records that hold a runtime spec (no copies made). */
  runtimeKeys(): string[] { return this.snap.runtimeKeys(); }

  subscriptionKeys(): string[] {
    return this.snap.keys();
  }

  /** Stores a copy of the record (`recent` trimmed to the newest 1024); throws invalid_argument for a record we could not read back. */
  setSubscription(key: string, record: SubscriptionRecord): void {
    this.assertOpen();
    this.snap.set(key, record);
    this.changes++;
  }

  /**
   * A stored subscription's new position, made durable by the next commit's log append (with the
   * page's own records, after them; positions.ts): its cursor, and the ids its dedup window took
   * since its record was set or last moved, oldest first. Throws invalid_argument for an unknown
   * key, or a cursor or id the snapshot could not hold.
   */
  setPosition(key: string, cursor: string | null, seen: readonly string[]): void {
    this.assertOpen();
    const line = this.snap.advance(key, cursor, seen);
    this.record(line, Buffer.byteLength(line));
  }

  /** Forgets the whole record (cursor, dedup window, runtime spec). */
  forgetSubscription(key: string): void {
    this.assertOpen();
    if (this.snap.forget(key)) this.changes++;
  }

  setLastClientMs(ms: number): void {
    this.assertOpen();
    this.snap.setLastClientMs(ms);
    this.changes++;
  }

  get lastClientMs(): number | null {
    return this.snap.lastClientMs;
  }

  /** The v1a keys seen per server origin (a copy). */
  get serverKeys(): ServerKeysData {
    return this.snap.serverKeys;
  }

  /** Replaces the server keys (a change only when they differ); throws invalid_argument past the snapshot's bounds. */
  setServerKeys(keys: ServerKeysData): void {
    this.assertOpen();
    if (this.snap.setServerKeys(keys)) this.changes++;
  }

  // ---- durability ----

  /** Resolves once every change made before the call is durable; rejects with an EventsStoreError (write_failed) when a write failed. */
  commit(): Promise<void> {
    // While closing, the final write covers everything; once closed, nothing is left to write with.
    if (this.closed && this.changes > this.commits.durable) return Promise.reject(this.closedError());
    return this.commits.request();
  }

  /** A commit within COMMIT_DEBOUNCE_MS for changes nobody waits on; failures are logged once per streak and retried with backoff. */
  scheduleCommit(): void {
    if (this.closing === null) this.background.schedule();
  }

  /** Bytes of log records waiting for the next write (bounded: past a cap they give way to one full rewrite). */
  get unwrittenBytes(): number {
    return this.backlog.size;
  }

  get writes(): WriteCounters { return { ...this.counters }; }

  /** A final commit (a failure is logged, not thrown), then the log handle is closed. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.background.stop();
      // Positions not yet in a snapshot: the last pass writes one (store-snapshot.ts `take`).
      this.final = true;
      if (this.snap.positionsPending) this.changes++;
      try {
        await this.commits.request();
      } catch (e) {
        logLine(`events state in ${this.dir}: the last write before closing failed: ${errorMessage(e)}`, { level: "warn", code: "events_state_write_failed" });
      }
      await this.commits.idle();
      this.closed = true;
      await this.log.close().catch(() => {});
      await this.ledger?.close().catch(() => {});
    })();
    return this.closing;
  }

  // ---- internals ----

  private assertOpen(): void {
    if (this.closing !== null) throw this.closedError();
  }

  private closedError(): EventsStoreError {
    return new EventsStoreError("closed", `the events state in ${this.dir} is closed`);
  }

  /** Queues one log line for the next write. */
  private record(line: string, bytes: number): void {
    this.changes++;
    this.backlog.add(line, bytes);
  }

  /**
   * One write: the log (compacted or appended), then the snapshot if one is due, both taken at its start. The
   * snapshot's temp is synced alongside the log and renamed once the log is durable (snapshot-write.ts).
   */
  private async writePass(): Promise<void> {
    const now = this.scheduler.now();
    const taken = this.snap.take(now, this.final);
    const path = snapshotPath(this.dir);
    const snap = typeof taken?.text === "string" && !this.snap.onDisk(taken.text) ? new SnapshotWrite(path, taken.text, this.options.fault) : null;
    const pass = this.ledger?.beginPass() ?? null;
    // A rewrite drops the log's position records: it carries what no snapshot on disk covers yet.
    const rewrite = () => Array.from(this.live.values(), (e) => e.line).join("") + this.snap.rewriteTail();
    try {
      await this.step(this.log.path, () => this.backlog.write(this.liveBytes, rewrite, pass?.trailer ?? null));
      // The commit point is behind us: the ledger's lines are in the pending log, then in events.ndjson.
      if (pass !== null && this.ledger !== null) {
        this.ledger.embedded(pass);
        await this.step(this.ledger.path, () => this.ledger!.write(pass));
      }
    } catch (e) {
      await snap?.discard();
      throw e;
    }
    if (taken !== null) {
      if (taken.text instanceof EventsStoreError) throw taken.text; // cannot fit its bound: after the log, not instead of it
      if (snap !== null) {
        await this.step(path, () => snap.install());
        this.counters.snapshots++;
      }
      this.snap.written(taken, now);
    }
    this.background.succeeded();
    // Positions waiting for a snapshot: one pass writes it once due, if no other change brings one first.
    this.background.checkpointIn(this.snap.checkpointInMs(this.scheduler.now()));
  }

  /** One write of a pass; its failure is a write_failed EventsStoreError naming the file. */
  private async step(path: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (e) {
      if (e instanceof EventsStoreError) throw e;
      throw new EventsStoreError("write_failed", `writing ${path} failed (kept for the next write): ${errorMessage(e)}`, { cause: e });
    }
  }
}
