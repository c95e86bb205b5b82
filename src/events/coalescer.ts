/**
 * Hands pending events to the session's model in batches (serve.md §6 item 5), at least once:
 *
 * - at most one injection per coalesce window (VIGIL_EVENTS_COALESCE_MS), at most 50 events each,
 *   after a short settle so a burst becomes one batch; steer events go in even mid-run, follow-ups
 *   are held while a run is in flight;
 * - the store is committed before a batch is injected: the model only ever sees durable events;
 * - a batch is tagged; the session reports the tag `delivered` (the model received it in a run
 *   that succeeded and whose transcript synced) → its entries are marked done and committed; or
 *   `returned` (failed/aborted run, steer never seen) → its entries are ready again; after 3
 *   attempts an entry is dropped and reported.
 */
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { type Scheduler, type TimerHandle, realScheduler } from "../shared/time.ts";
import type { McpEventStatusDetail } from "./frames.ts";
import type { InjectResult, Injection, RunSettled, SessionState } from "./ports.ts";
import { renderBatch } from "./rules/batch-text.ts";
import type { EventsStore } from "./store/events-store.ts";
import type { PendingEntry } from "./types.ts";

export const MAX_BATCH = 50;
export const MAX_ATTEMPTS = 3;
const SETTLE_MS = 250;
const RETRY_AFTER_FAILED_COMMIT_MS = 1000;

/** The part of a Session the coalescer uses. */
export interface InjectTarget {
  readonly state: SessionState;
  readonly closed: boolean;
  inject(injection: Injection): InjectResult;
  onRunSettled(listener: (report: RunSettled) => void): () => void;
}

/** A process-wide batch number: two batches with the same content are told apart by it. */
let batchCounter = 0;

export class Coalescer {
  private readonly inflight = new Map<string, number[]>();
  private readonly inBatch = new Set<number>();
  private readonly attempts = new Map<number, number>();
  private lastInjectAt = Number.NEGATIVE_INFINITY;
  private timer: TimerHandle | null = null;
  private firing = false;
  private stopped = false;
  private readonly off: () => void;

  constructor(
    private readonly session: InjectTarget,
    private readonly store: EventsStore,
    private readonly windowMs: number,
    private readonly dropped: (entry: PendingEntry, detail: McpEventStatusDetail & { kind: "dropped" }) => void,
    /** The clock and timers (tests inject a fake one and advance it instead of sleeping). */
    private readonly scheduler: Scheduler = realScheduler,
  ) {
    this.off = session.onRunSettled((report) => this.settled(report));
  }

  /** Entries queued and not in a batch the model may be working on. */
  get ready(): number {
    let n = 0;
    for (const e of this.store.pending()) if (!this.inBatch.has(e.seq)) n++;
    return n;
  }

  /** Something may be ready: (re)arm the timer. */
  kick(): void {
    if (this.stopped || this.timer !== null || this.firing) return;
    const at = Math.max(this.scheduler.now() + Math.min(SETTLE_MS, this.windowMs), this.lastInjectAt + this.windowMs);
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = null;
      void this.fire();
    }, Math.max(0, at - this.scheduler.now()));
  }

  stop(): void {
    this.stopped = true;
    this.off();
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    this.timer = null;
  }

  private async fire(): Promise<void> {
    if (this.stopped || this.session.closed) return;
    const ready = this.store.pending().filter((e) => !this.inBatch.has(e.seq));
    const steer = ready.filter((e) => e.action === "steer");
    const idle = this.session.state === "idle";
    const batch = steer.length > 0 ? steer.slice(0, MAX_BATCH) : idle ? ready.slice(0, MAX_BATCH) : [];
    // Follow-ups wait for the run in flight; its settlement kicks again.
    if (batch.length === 0) return;
    const behavior = batch[0]!.action === "steer" ? "steer" : "follow_up";
    const seqs = batch.map((e) => e.seq);
    for (const s of seqs) this.inBatch.add(s);
    this.firing = true;
    try {
      await this.store.commit();
    } catch (e) {
      for (const s of seqs) this.inBatch.delete(s);
      logLine(`serve: events: could not store pending events before injecting them (retrying): ${errorMessage(e)}`);
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
    const text = renderBatch(id, batch.map(({ server, name, arguments: args, instructions, event }) => ({
      server,
      name,
      arguments: args,
      ...(instructions !== undefined ? { instructions } : {}),
      event: event as Record<string, unknown>,
    })));
    try {
      this.session.inject({ tag, text, behavior });
    } catch {
      for (const s of seqs) this.inBatch.delete(s);
      return; // the session closed: its pending events stay on disk for the next start
    }
    this.inflight.set(tag, seqs);
    this.lastInjectAt = this.scheduler.now();
    if (this.ready > 0) this.kick();
  }

  private settled(report: RunSettled): void {
    let done: number[] = [];
    for (const tag of report.delivered) {
      const seqs = this.inflight.get(tag);
      if (seqs === undefined) continue;
      this.inflight.delete(tag);
      done = done.concat(seqs);
      for (const s of seqs) {
        this.inBatch.delete(s);
        this.attempts.delete(s);
      }
    }
    for (const tag of report.returned) {
      const seqs = this.inflight.get(tag);
      if (seqs === undefined) continue;
      this.inflight.delete(tag);
      for (const s of seqs) {
        this.inBatch.delete(s);
        const n = (this.attempts.get(s) ?? 0) + 1;
        if (n < MAX_ATTEMPTS) {
          this.attempts.set(s, n);
          continue;
        }
        this.attempts.delete(s);
        const entry = this.store.pending().find((e) => e.seq === s);
        done.push(s);
        if (entry !== undefined) {
          const error = `dropped after ${MAX_ATTEMPTS} injections that never reached the model (last run: ${report.status})`;
          logLine(`serve: events: ${entry.server}/${entry.name}: an event was ${error}`);
          this.dropped(entry, { kind: "dropped", event: entry.event as never, error });
        }
      }
    }
    if (done.length > 0) {
      this.store.markDone(done);
      this.store.commit().catch((e) => logLine(`serve: events: could not record delivered events (they may be injected again): ${errorMessage(e)}`));
    }
    this.kick();
  }
}
