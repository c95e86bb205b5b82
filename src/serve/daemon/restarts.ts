/**
 * Brings failed sessions back (issue 12 item F; serve.md §6 item 9): a session that must keep
 * running — the events session, one with live subscriptions or pending events — is reopened after
 * its failure with backoff (restart-backoff.ts). Reopening is the daemon's `reopen` (the registry,
 * uncapped: a restart is not a new client); a reopen that fails is scheduled again. Timers come
 * from an injected scheduler, so the unit test advances time instead of sleeping.
 *
 * What is kept per session is how its last restart went, and only while it matters: an entry
 * whose session has been up the healthy period (10 minutes) would start the backoff over anyway,
 * so it is dropped at the next restart. Over months the map holds the sessions restarted within
 * the last 10 minutes, not every session that ever failed.
 */
import { SUPERVISION_BACKOFF } from "../../shared/backoff.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { type Scheduler, type TimerHandle, realScheduler } from "../../shared/time.ts";
import { type NextRestart, type RestartState, nextRestart } from "../restart-backoff.ts";

export class SessionRestarts {
  private readonly states = new Map<string, RestartState>();
  private readonly timers = new Map<string, { handle: TimerHandle; at: number }>();
  private stopped = false;

  constructor(
    private readonly reopen: (name: string) => Promise<void>,
    private readonly scheduler: Scheduler = realScheduler,
  ) {}

  /** Session `name` failed: reopen it after its backoff. Returns the delay (null: already scheduled, or stopped). */
  failed(name: string): number | null {
    if (this.stopped || this.timers.has(name)) return null;
    const next = nextRestart(this.states.get(name), this.scheduler.now());
    const handle = this.scheduler.setTimeout(() => {
      this.timers.delete(name);
      void this.restart(name, next);
    }, next.delayMs, { unref: true });
    this.timers.set(name, { handle, at: this.scheduler.now() + next.delayMs });
    logLine(`serve: session ${JSON.stringify(name)} restarts in ${next.delayMs / 1000} s`, { level: "warn", session: name, code: "session_restart_scheduled" });
    return next.delayMs;
  }

  /** How long until `name` is reopened, or undefined when no restart is scheduled. */
  restartInMs(name: string): number | undefined {
    const t = this.timers.get(name);
    return t === undefined ? undefined : Math.max(0, t.at - this.scheduler.now());
  }

  /** Cancels every scheduled restart (shutdown). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) this.scheduler.clearTimeout(t.handle);
    this.timers.clear();
  }

  /** Sessions whose last restart is remembered (the bound above). */
  get remembered(): number {
    return this.states.size;
  }

  private async restart(name: string, next: NextRestart): Promise<void> {
    if (this.stopped) return;
    this.forgetHealthy();
    this.states.set(name, { inARow: next.inARow, startedAt: this.scheduler.now() });
    try {
      await this.reopen(name);
      logLine(`serve: session ${JSON.stringify(name)} restarted`, { session: name, code: "session_restarted" });
    } catch (e) {
      logLine(`serve: session ${JSON.stringify(name)} could not be restarted: ${errorMessage(e)}`, { level: "error", session: name, code: "session_restart_failed" });
      this.failed(name);
    }
  }

  /** Drops the entries that no longer change a delay (restart-backoff.ts: up `healthyMs`, the row starts over). */
  private forgetHealthy(): void {
    const now = this.scheduler.now();
    for (const [name, state] of this.states) {
      if (now - state.startedAt >= SUPERVISION_BACKOFF.healthyMs) this.states.delete(name);
    }
  }
}
