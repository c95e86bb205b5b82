/**
 * Acting on `notifications/events/list_changed` (issue 12 item C; serve.md §6 item 10): the draft
 * says the client SHOULD call `events/list` again, so serve does, without waiting for a client to
 * ask — once per burst. The first notice arms one re-list `delayMs` later; notices arriving before
 * it fires ride along (each has already marked the cached list stale). The wait is fixed from the
 * first notice, so a server that never stops announcing changes still gets re-listed on time.
 * A notice arriving while the re-list is in flight arms the next one (the answer in flight may
 * predate the change).
 */
import { type Scheduler, type TimerHandle, realScheduler } from "../../shared/time.ts";

/** Long enough to fold a burst of notices into one `events/list`, short next to any human wait. */
export const LIST_CHANGED_DELAY_MS = 250;

export class ListRefresh {
  private timer: TimerHandle | null = null;

  constructor(
    /** Re-calls `events/list` and caches the answer; a failure is the callee's to report. */
    private readonly relist: () => Promise<void>,
    private readonly scheduler: Scheduler = realScheduler,
    readonly delayMs = LIST_CHANGED_DELAY_MS,
  ) {}

  /** A list_changed notice arrived. */
  changed(): void {
    if (this.timer !== null) return;
    // unref: a pending re-list alone never keeps serve from exiting.
    this.timer = this.scheduler.setTimeout(() => {
      this.timer = null;
      void this.relist();
    }, this.delayMs, { unref: true });
  }

  /** A re-list is armed and has not fired yet. */
  get armed(): boolean {
    return this.timer !== null;
  }
}
