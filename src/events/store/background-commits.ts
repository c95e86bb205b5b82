/**
 * Commits nobody waits on (events-store.ts `scheduleCommit`): one within COMMIT_DEBOUNCE_MS, so a
 * burst of changes is one write. A failed one is logged once per streak of failures and retried
 * with backoff (1 s doubling to 30 s) until a write — any write — succeeds again.
 */
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { Scheduler, TimerHandle } from "../../shared/time.ts";

/** How long a scheduled commit waits to gather more changes into one write. */
export const COMMIT_DEBOUNCE_MS = 100;
const RETRY_MAX_MS = 30_000;

export class BackgroundCommits {
  private timer: TimerHandle | null = null;
  private retryMs = 0;
  private failing = false;
  private stopped = false;

  constructor(
    private readonly commit: () => Promise<void>,
    private readonly scheduler: Scheduler,
    /** Names the state in the log line. */
    private readonly where: string,
  ) {}

  /** A commit soon, unless one is already armed (or they were stopped). */
  schedule(): void {
    if (this.stopped || this.timer !== null) return;
    this.arm(COMMIT_DEBOUNCE_MS);
  }

  /** A write succeeded: the next failure starts a new streak (and is logged). */
  succeeded(): void {
    this.failing = false;
  }

  /** No more background commits (the store is closing; its final commit covers everything). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.scheduler.clearTimeout(this.timer);
    this.timer = null;
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
