/**
 * The daemon's sessions (serve.md §1): a session starts when a client first addresses it and is
 * reaped after `--session-idle-timeout` with no client — no attached SSE stream, no command in
 * flight, no run in flight, and no command or frame for that long (0 = never reaped).
 *
 * Holds count attached streams and requests being handled; the reaper is one interval timer,
 * checking a few times per timeout (at most every 30 s). A name being reaped is reopened only once
 * its close has finished, so two Session objects never share a transcript.
 *
 * Open sessions are capped (`--max-sessions`, issue 12 item F): past the cap a new name is refused
 * with `TooManySessions` (HTTP 503 `too_many_sessions`) and the open ones are untouched. Sessions
 * still closing count, since they still hold their files. The daemon's own sessions (the events
 * session at boot and after a failure, restored ones) are not refused: a client burst must not
 * lock them out.
 */
import type { ServeApp } from "../types.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { Session } from "../session/session.ts";

/** A new session past `--max-sessions`. */
export class TooManySessions extends Error {
  readonly code = "too_many_sessions";
  constructor(readonly max: number) {
    super(`the daemon has ${max} sessions open (--max-sessions ${max}); retry once one is reaped`);
    this.name = "TooManySessions";
  }
}

export const DEFAULT_MAX_SESSIONS = 1000;

export interface Lease {
  session: Session;
  /** Idempotent. */
  release(): void;
}

const MIN_CHECK_MS = 100;
const MAX_CHECK_MS = 30_000;

export class SessionRegistry {
  private readonly holds = new Map<string, number>();
  private readonly lastRelease = new Map<string, number>();
  private readonly open = new Map<string, Session>();
  private readonly closing = new Map<string, Promise<void>>();
  private readonly timer: ReturnType<typeof setInterval> | null;

  constructor(
    private readonly app: ServeApp,
    private readonly idleMs: number,
    private readonly now: () => number = Date.now,
    readonly maxSessions: number = DEFAULT_MAX_SESSIONS,
  ) {
    if (idleMs > 0) {
      const every = Math.min(MAX_CHECK_MS, Math.max(MIN_CHECK_MS, Math.floor(idleMs / 4)));
      this.timer = setInterval(() => void this.reapIdle(), every);
    } else {
      this.timer = null;
    }
  }

  get size(): number {
    return this.app.sessionNames().length;
  }

  /** Open plus still closing: what holds files. */
  get held(): number {
    return this.size + this.closing.size;
  }

  /** Opens (or finds) the session and holds it against the reaper until `release`; `uncapped`: a session of the daemon's own. */
  async acquire(name: string, o: { uncapped?: boolean } = {}): Promise<Lease> {
    this.holds.set(name, (this.holds.get(name) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (this.holds.get(name) ?? 1) - 1;
      if (n <= 0) this.holds.delete(name);
      else this.holds.set(name, n);
      this.lastRelease.set(name, this.now());
    };
    try {
      const pending = this.closing.get(name);
      if (pending !== undefined) await pending;
      // Checked with no await before the open registers the name, so a burst cannot overshoot.
      const isNew = !this.app.sessionNames().includes(name);
      if (isNew && o.uncapped !== true && this.held >= this.maxSessions) throw new TooManySessions(this.maxSessions);
      const session = await this.app.openSession(name);
      this.open.set(name, session);
      return { session, release };
    } catch (e) {
      release();
      throw e;
    }
  }

  /** Closes every session idle for the timeout; returns their names. */
  async reapIdle(): Promise<string[]> {
    const now = this.now();
    const reaped: string[] = [];
    for (const [name, session] of this.open) {
      if ((this.holds.get(name) ?? 0) > 0 || session.state !== "idle" || this.closing.has(name)) continue;
      // Live event subscriptions or undelivered events keep a session (unless --mcp-events-reapable).
      if (this.app.keepsAlive(name)) continue;
      const last = Math.max(session.lastActivity, this.lastRelease.get(name) ?? 0);
      if (now - last < this.idleMs) continue;
      reaped.push(name);
      this.open.delete(name);
      this.lastRelease.delete(name);
      const done = this.app
        .closeSession(name, "reaped")
        .catch((e) => logLine(`serve: reaping session ${JSON.stringify(name)} failed: ${errorMessage(e)}`, { level: "warn", session: name, code: "session_reap_failed" }))
        .finally(() => this.closing.delete(name));
      this.closing.set(name, done);
    }
    for (const name of reaped) logLine(`serve: session ${JSON.stringify(name)} reaped after ${Math.round(this.idleMs / 1000)} s idle`, { session: name, code: "session_reaped" });
    await Promise.all(reaped.map((n) => this.closing.get(n)));
    return reaped;
  }

  /** Forgets a session closed elsewhere (a failed one, session-faults.ts); one reopened since stays. */
  forget(name: string): void {
    if (this.open.get(name)?.closed === true) this.open.delete(name);
  }

  /** Stops the reaper (sessions are closed by the app's shutdown). */
  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }
}
