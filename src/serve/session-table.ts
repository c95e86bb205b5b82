/**
 * The open sessions of one `vigil serve` process, by name (serve.md §1): one Session per name,
 * shared by concurrent callers; a session that failed to open is forgotten, so the next request
 * tries again; after `shutdown` starts, nothing new opens.
 *
 * How a session is built and taken apart is the caller's (session-wiring.ts); this table only
 * decides when. Every close is bounded, and a failing close is logged, never thrown.
 */
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { within } from "../shared/time.ts";
import type { ServeStopReason } from "./session-evidence.ts";
import type { OpenedSession } from "./session-wiring.ts";
import type { Session } from "./session/session.ts";
import type { OpenOptions } from "./types.ts";

/** A session's own close timeout, and what its close may take on top (transcript sync and close). */
const SESSION_CLOSE_MS = 5000;
const SESSION_CLOSE_SLACK_MS = 2000;

export interface SessionTableHooks {
  open(name: string, options: OpenOptions): Promise<OpenedSession>;
  close(name: string, session: Session): Promise<void>;
}

export class SessionTable {
  private readonly entries = new Map<string, Promise<OpenedSession>>();
  private shuttingDown: Promise<void> | null = null;

  constructor(private readonly hooks: SessionTableHooks) {}

  names(): string[] {
    return [...this.entries.keys()];
  }

  open(name: string, options: OpenOptions = {}): Promise<Session> {
    if (this.shuttingDown !== null) return Promise.reject(new Error("serve is shutting down"));
    let opening = this.entries.get(name);
    if (opening === undefined) {
      const entry = this.hooks.open(name, options);
      opening = entry;
      this.entries.set(name, entry);
      entry.catch(() => {
        if (this.entries.get(name) === entry) this.entries.delete(name);
      });
    }
    return opening.then((opened) => opened.session);
  }

  /** Closes one session; `reason` is what its stop statement names ("reaped" by the idle reaper). */
  async close(name: string, reason: ServeStopReason = "closed"): Promise<void> {
    const opening = this.entries.get(name);
    if (opening === undefined) return;
    this.entries.delete(name);
    await this.closeEntry(name, opening, reason);
  }

  /** Closes every session (bounded), then runs `after` (the pool and the stdio groups); idempotent. */
  shutdown(after: () => Promise<void>): Promise<void> {
    this.shuttingDown ??= (async () => {
      const entries = [...this.entries.entries()];
      this.entries.clear();
      await within(Promise.allSettled(entries.map(([name, e]) => this.closeEntry(name, e, "shutdown"))), SESSION_CLOSE_MS + SESSION_CLOSE_SLACK_MS);
      await after();
    })();
    return this.shuttingDown;
  }

  private async closeEntry(name: string, opening: Promise<OpenedSession>, reason: ServeStopReason): Promise<void> {
    let opened: OpenedSession | undefined;
    try {
      opened = await opening;
      await this.hooks.close(name, opened.session);
    } catch (e) {
      logLine(`serve: session ${JSON.stringify(name)}: close failed: ${errorMessage(e)}`, { level: "warn", session: name, code: "session_close_failed" });
    } finally {
      // Even when the close failed: the stop statement covers the files as they are.
      opened?.release(reason);
    }
  }
}
