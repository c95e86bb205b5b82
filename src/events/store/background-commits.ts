/**
 * Commits nobody waits on (events-store.ts `scheduleCommit`): one within COMMIT_DEBOUNCE_MS, so a
 * burst of changes is one write. A failed one is logged once per streak of failures and retried
 * with backoff (1 s doubling to 30 s) until a write — any write — succeeds again. And the
 * checkpoint of positions that no later write would carry into a snapshot (`checkpointIn`).
 */
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { Scheduler, TimerHandle } from "../../shared/time.ts";

/** How long a scheduled commit waits to gather more changes into one write. */
export const COMMIT_DEBOUNCE_MS = 100;
const RETRY_MAX_MS = 30_000;

export class BackgroundCommits {
  private timer: TimerHandle | null = null;
  private checkpointTimer: TimerHandle | null = null;
  private retryMs = 0;
  private failing = false;
  private stopped = false;

  constructor(
    private readonly commit: () => Promise<void>,
    private readonly scheduler: Scheduler,
    /** Names the state in the log line. */
    private readonly where: string,
    /** Makes the next commit a write pass even with nothing new (a checkpoint is due then). */
    private readonly dueCheckpoint: () => void = () => {},
  ) {}

  /** A commit soon, unless one is already armed (or they were stopped). */
  schedule(): void {
    if (this.stopped || this.timer !== null) return;
    this.arm(COMMIT_DEBOUNCE_MS);
  }

  /** A commit in `ms` (then the debounce) that writes the due checkpoint, unless one is armed; null: none due. */
  checkpointIn(ms: number | null): void {
    if (ms === null || this.stopped || this.checkpointTimer !== null) return;
    this.checkpointTimer = this.scheduler.setTimeout(() => {
      this.checkpointTimer = null;
      if (this.stopped) return;
      this.dueCheckpoint();
      this.schedule();
    }, ms, { unref: true });
  }

  /** A write succeeded: the next failure starts a new streak (and is logged). */
  succeeded(): void {
    this.failing = false;
  }

  /** No more background commits (the store is closing; its final commit covers everything). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    if (this.checkpointTimer !== null) this.scheduler.clearTimeout(this.checkpointTimer);
    this.timer = null;
    this.checkpointTimer = null;
  }

  private arm(ms: number): void {
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = null;
      this.commit().then(
        () => (this.retryMs = 0),
        (e: unknown) => {
          if (!this.failing) logLine(`events state in ${this.where}: a background write failed (retrying): ${errorMessage(e)}`, { level: "warn", code: "events_state_write_failed" });
          this.failing = true;
          if (this.stopped || this.timer !== null) return;
          this.retryMs = Math.min(RETRY_MAX_MS, Math.max(1000, this.retryMs * 2));
          this.arm(this.retryMs);
        },
      );
    }, ms, { unref: true });
  }
}
