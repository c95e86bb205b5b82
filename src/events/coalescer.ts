/**
 * Hands pending events to the session's model in batches (serve.md §6 item 5), at least once:
 *
 * - at most one injection per coalesce window (VIGIL_EVENTS_COALESCE_MS), at most 50 events each
 *   and only as many as fit the session's `injectionMaxBytes` (its model context; an event larger
 *   than that is cut in the text, rules/batch-text.ts `fitBatch`),
 *   after a short settle so a burst becomes one batch; steer events go in even mid-run, follow-ups
 *   are held while a run is in flight;
 * - the store is committed before a batch is injected: the model only ever sees durable events;
 * - a batch is tagged; the session reports the tag `delivered` (the model received it in a run
 *   that succeeded and whose transcript synced) → its entries are marked done and committed; or
 *   `returned` (failed/aborted run, steer never seen) → its entries are ready again; after 3
 *   attempts an entry is dropped and reported;
 * - a steered batch is reported `received` as soon as a model turn carrying it was answered: it is
 *   done and committed then, so nothing later in its run (a failure, a compaction, a crash) can
 *   inject it again;
 * - a run aborted because the session is closing counts no attempt;
 * - a run that ended `model_unavailable` counts no attempt: the next batch waits out a backoff
 *   (delivery-rules.ts) and clients get `model_unavailable` frames, then `model_available` once a
 *   run is answered again. Attempts counts live in the pending log with the entries, so the bound
 *   holds across restarts and crashes.
 */
import { errorMessage } from "../shared/errors.ts";
import { throwAtSessionSeam } from "../shared/fault-seam.ts";
import { logLine } from "../shared/log.ts";
import { type Scheduler, type TimerHandle, realScheduler } from "../shared/time.ts";
import { droppedError, droppedErrorCode, judgeReturned, modelBackoffMs } from "./delivery-rules.ts";
import type { EventsFrame, McpEventStatusDetail } from "./frames.ts";
import { modelAvailableFrame, modelUnavailableFrame } from "./model-status.ts";
import { type FaultReport, type InjectResult, type Injection, MODEL_UNAVAILABLE, type ReceivedListener, type RunSettled, type SessionState } from "./ports.ts";
import { DeliverySpans } from "./delivery-span.ts";
import { type BatchEntry, fitBatch, renderFitted } from "./rules/batch-text.ts";
import type { EventsStore } from "./store/events-store.ts";
import type { PendingEntry } from "./types.ts";

export const MAX_BATCH = 50;
export { MAX_ATTEMPTS } from "./delivery-rules.ts";
const SETTLE_MS = 250;
const RETRY_AFTER_FAILED_COMMIT_MS = 1000;

/** The part of a Session the coalescer uses. */
export interface InjectTarget {
  /** The session's name (the test seam VIGIL_TEST_SESSION_THROW names it). */
  readonly name?: string;
  readonly state: SessionState;
  readonly closed: boolean;
  inject(injection: Injection): InjectResult;
  onRunSettled(listener: (report: RunSettled) => void): () => void;
  /** The largest batch text the session's model takes (bytes); none: no bound. */
  readonly injectionMaxBytes?: number;
  onReceived(listener: ReceivedListener): () => void;
  emit(frame: EventsFrame): number | null;
}

/** A process-wide batch number: two batches with the same content are told apart by it. */
let batchCounter = 0;

export class Coalescer {
  private readonly inflight = new Map<string, number[]>();
  private readonly inBatch = new Set<number>();
  /** Consecutive runs that found the model unavailable, and until when the next batch waits. */
  private outages = 0;
  private holdUntil = Number.NEGATIVE_INFINITY;
  private lastInjectAt = Number.NEGATIVE_INFINITY;
  /**
   * What this coalescer's own commits have made durable: every entry up to `durableThrough` (a
   * commit called after it was added resolved), and the attempts counts up to `attemptsGen`
   * (counted by `settled`). A batch within both needs no commit of its own before it is injected.
   */
  private durableThrough = 0;
  private attemptsGen = 0;
  private attemptsDurableGen = 0;
  private timer: TimerHandle | null = null;
  private firing = false;
  private stopped = false;
  private readonly offs: (() => void)[];
  /** One span per batch, from injection to its report (delivery-span.ts; nothing kept with tracing off). */
  private readonly spans: DeliverySpans;

  constructor(
    private readonly session: InjectTarget,
    private readonly store: EventsStore,
    private readonly windowMs: number,
    private readonly dropped: (entry: PendingEntry, detail: McpEventStatusDetail & { kind: "dropped" }) => void,
    /** The clock and timers (tests inject a fake one and advance it instead of sleeping). */
    private readonly scheduler: Scheduler = realScheduler,
    /** VIGIL_MODEL_BACKOFF_CAP_MS (its default is serve's tuning.ts, the one place it is set). */
    private readonly backoffCapMs: number,
    /** The session's containment boundary, for what escapes the timer's work (nobody awaits it). */
    private readonly onFault: FaultReport = (e) => logLine(`serve: events: the coalescer failed: ${errorMessage(e)}`, { level: "error", code: "coalescer_failed" }),
  ) {
    this.spans = new DeliverySpans(session.name);
    this.offs = [session.onRunSettled((report) => this.settled(report)), session.onReceived((tags, runId) => this.received(tags, runId))];
  }

  /** Something may be ready: (re)arm the timer. */
  kick(): void {
    if (this.stopped || this.timer !== null || this.firing) return;
    const at = Math.max(this.scheduler.now() + Math.min(SETTLE_MS, this.windowMs), this.lastInjectAt + this.windowMs, this.holdUntil);
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = null;
      // The timer is an async root: an exception from its work goes to the session's boundary
      // instead of becoming an unhandled rejection that would end the whole process.
      this.onTimer().catch((e) => this.onFault(e));
    }, Math.max(0, at - this.scheduler.now()));
  }

  private async onTimer(): Promise<void> {
    // A backoff that began after this timer was armed still holds.
    if (this.scheduler.now() < this.holdUntil) this.kick();
    else await this.fire();
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.offs) off();
    this.spans.clear();
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    this.timer = null;
  }

  private async fire(): Promise<void> {
    if (this.stopped || this.session.closed) return;
    if (this.session.name !== undefined) throwAtSessionSeam(this.session.name, "coalescer_fire");
    const chosen = chooseBatch(this.store, this.inBatch, this.session.state === "idle");
    // Only what fits the session's model context goes in (issue 12 item A); the rest is the next batch.
    const entries = chosen.map(batchEntry);
    const fit = fitBatch(entries, this.session.injectionMaxBytes ?? Number.POSITIVE_INFINITY);
    const batch = chosen.slice(0, fit.count);
    // Follow-ups wait for the run in flight; its settlement kicks again.
    if (batch.length === 0) return;
    const behavior = batch[0]!.action === "steer" ? "steer" : "follow_up";
    const seqs = batch.map((e) => e.seq);
    for (const s of seqs) this.inBatch.add(s);
    this.firing = true;
    try {
      // The model only ever sees durable events (and durable attempts counts, so the bound holds
      // across a crash). Entries a commit already covered need no second one: waiting here for the
      // previous batch's `done` records to sync would only stall the next batch behind them.
      // Either way the injection happens after an await, never inside the call that fired.
      if (Math.max(...seqs) > this.durableThrough || this.attemptsGen !== this.attemptsDurableGen) await this.commit();
      else await Promise.resolve();
    } catch (e) {
      for (const s of seqs) this.inBatch.delete(s);
      logLine(`serve: events: could not store pending events before injecting them (retrying): ${errorMessage(e)}`, { level: "warn", session: this.session.name, code: "events_store_failed" });
      this.firing = false;
      this.lastInjectAt = this.scheduler.now() - this.windowMs + RETRY_AFTER_FAILED_COMMIT_MS;
      this.kick();
      return;
    }
    this.firing = false;
    if (this.stopped || this.session.closed || (behavior === "follow_up" && this.session.state !== "idle")) {
      // A run started meanwhile: its settlement kicks again.
      for (const s of seqs) this.inBatch.delete(s);
      return;
    }
    const id = ++batchCounter;
    const tag = `mcp_events:${id}`;
    // The texts fitBatch rendered are the batch's (renderBatch would render the same again).
    const text = renderFitted(id, entries.slice(0, fit.count), fit.texts);
    try {
      this.session.inject({ tag, text, behavior });
    } catch {
      for (const s of seqs) this.inBatch.delete(s);
      return; // the session closed: its pending events stay on disk for the next start
    }
    this.inflight.set(tag, seqs);
    this.spans.opened(tag, batch, behavior);
    this.lastInjectAt = this.scheduler.now();
    if (firstReady(this.store.pendingInOrder(), this.inBatch, 1).length > 0) this.kick();
  }

  private settled(report: RunSettled): void {
    const delivered = this.takeBatches(report.delivered);
    this.spans.settled(report.delivered, report.runId, "delivered");
    this.spans.settled(report.returned, report.runId, "returned", report.code ?? (report.succeeded ? "not_seen" : report.status));
    const unavailable = report.code === MODEL_UNAVAILABLE;
    // A run aborted because its session is closing (a graceful exit, the reaper, a contained
    // fault) is no fault of its batch: like an outage, it counts no attempt (serve.md §6 item 5).
    const closing = report.status === "aborted" && this.session.closed;
    // A batch that comes back from a run that succeeded was never put to the model (a steer taken
    // after its last turn): nothing to count either; it goes into the next run.
    const unseen = report.succeeded;
    const verdict = judgeReturned(this.take(report.returned), (seq) => this.store.attemptsOf(seq), unavailable || closing || unseen);
    if (verdict.counted.size > 0) {
      this.store.setAttempts(verdict.counted);
      this.attemptsGen++;
    }
    const drops: { seq: number; attempts: number }[] = [];
    for (const seq of verdict.dropped) {
      const entry = this.store.pending().find((e) => e.seq === seq);
      drops.push({ seq, attempts: this.store.attemptsOf(seq) + 1 });
      if (entry !== undefined) {
        const error = droppedError(report);
        logLine(`serve: events: ${entry.server}/${entry.name}: an event was ${error}`, { level: "warn", session: this.session.name, server: entry.server, event: entry.name, code: "event_dropped" });
        this.dropped(entry, { kind: "dropped", event: entry.event as never, error });
      }
    }
    this.noteModel(report, unavailable);
    // One done per delivered batch and per dropped event: each is one record of the event ledger.
    for (const b of delivered) this.store.markDone(b.seqs, { delivered: { batchTag: b.tag, runId: report.runId } });
    const errorCode = drops.length > 0 ? droppedErrorCode(report) : "";
    for (const d of drops) this.store.markDone([d.seq], { dropped: { attempts: d.attempts, errorCode } });
    if (delivered.length > 0 || drops.length > 0 || verdict.counted.size > 0) this.commitNow();
    this.kick();
  }

  /** Steered batches the model received mid-run (in the run `runId`): delivered, and committed at once. */
  private received(tags: string[], runId: string): void {
    const batches = this.takeBatches(tags);
    this.spans.settled(tags, runId, "delivered");
    if (batches.length === 0) return;
    for (const b of batches) this.store.markDone(b.seqs, { delivered: { batchTag: b.tag, runId } });
    this.commitNow();
  }

  /** The seqs of the batches with these tags, which leave the in-flight set. */
  private take(tags: readonly string[]): number[] {
    return this.takeBatches(tags).flatMap((b) => b.seqs);
  }

  /** The batches with these tags (those in flight), which leave the in-flight set. */
  private takeBatches(tags: readonly string[]): { tag: string; seqs: number[] }[] {
    const out: { tag: string; seqs: number[] }[] = [];
    for (const tag of tags) {
      const seqs = this.inflight.get(tag);
      if (seqs === undefined) continue;
      this.inflight.delete(tag);
      for (const s of seqs) this.inBatch.delete(s);
      out.push({ tag, seqs });
    }
    return out;
  }

  /** Backs off while runs find the model unavailable; ends the outage at the first run it answered. */
  private noteModel(report: RunSettled, unavailable: boolean): void {
    if (unavailable) {
      this.outages++;
      const wait = modelBackoffMs(this.outages, this.backoffCapMs);
      this.holdUntil = this.scheduler.now() + wait;
      const error = report.error ?? "the model is unavailable";
      if (this.outages === 1) logLine(`serve: events: the model is unavailable (${error}); pending events wait for it`, { level: "warn", session: this.session.name, code: "model_unavailable" });
      this.session.emit(modelUnavailableFrame(error, wait));
    } else if (this.outages > 0 && report.status !== "aborted") {
      logLine(`serve: events: the model answers again after ${this.outages} unavailable run(s)`, { session: this.session.name, code: "model_available" });
      this.outages = 0;
      this.holdUntil = Number.NEGATIVE_INFINITY;
      this.session.emit(modelAvailableFrame());
    }
  }

  /** A store commit; once it resolved, what it covered is known durable (see `durableThrough`). */
  private async commit(): Promise<void> {
    const through = this.store.newestSeq;
    const attempts = this.attemptsGen;
    await this.store.commit();
    this.durableThrough = Math.max(this.durableThrough, through);
    this.attemptsDurableGen = Math.max(this.attemptsDurableGen, attempts);
  }

  private commitNow(): void {
    this.commit().catch((e) => logLine(`serve: events: could not record delivered events or attempts (they may be injected again): ${errorMessage(e)}`, { level: "warn", session: this.session.name, code: "events_store_failed" }));
  }
}

/**
 * The entries of the next batch, before fitting: up to MAX_BATCH steer events not in a batch (they
 * go in even mid-run), else, when the session is idle, the first MAX_BATCH entries not in a batch.
 * It walks the queue only as far as the batch needs and looks for steer events only when the queue
 * holds some: a firing costs O(batch + in flight), not O(queue) (a queue of 10⁵ follow-ups waiting
 * on a busy session is walked not at all).
 */
export function chooseBatch(
  store: Pick<EventsStore, "pendingInOrder" | "steerCount">,
  inBatch: ReadonlySet<number>,
  idle: boolean,
): PendingEntry[] {
  if (store.steerCount > 0) {
    const steer = firstReady(store.pendingInOrder(), inBatch, MAX_BATCH, (e) => e.action === "steer");
    if (steer.length > 0) return steer;
  }
  return idle ? firstReady(store.pendingInOrder(), inBatch, MAX_BATCH) : [];
}

/** The first `limit` entries in seq order that are not in a batch (and pass `want`). */
export function firstReady(entries: Iterable<PendingEntry>, inBatch: ReadonlySet<number>, limit: number, want?: (e: PendingEntry) => boolean): PendingEntry[] {
  const out: PendingEntry[] = [];
  for (const e of entries) {
    if (inBatch.has(e.seq) || (want !== undefined && !want(e))) continue;
    out.push(e);
    if (out.length >= limit) break;
  }
  return out;
}

function batchEntry({ server, name, arguments: args, instructions, event }: PendingEntry): BatchEntry {
  return { server, name, arguments: args, ...(instructions !== undefined ? { instructions } : {}), event: event as Record<string, unknown> };
}
