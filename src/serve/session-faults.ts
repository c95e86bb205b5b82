/**
 * The containment boundary of `vigil serve` (serve.md §6 item 9; issue 12 item F): an unexpected
 * exception in one session ends that session only.
 *
 * Where one can escape a session today is where its own code runs with no caller to answer to:
 * the settlement of a run (a rejection there was unhandled, and killed the daemon with every other
 * session) and the run-settled listeners (the events client's coalescer; an exception there was
 * swallowed, leaving the batch in flight for good) — and the events client's own async roots,
 * which nobody awaits: its coalescer's timer, its subscriptions' loops, a server-connected wake
 * (events/ports.ts FaultReport, passed in by session-wiring.ts). All report to the session's
 * `onFault` (session/session.ts), which lands here, once per session object:
 *
 * 1. said on stderr, naming the session;
 * 2. its clients get a stored `error` frame `{type:"error", code:"session_crashed", message}`;
 * 3. the session is closed like a reaped one — its subscriptions and streams stop first, the run in
 *    flight is aborted, its events state is written — so its MCP resources are released;
 * 4. whoever listens (the daemon) is told, with whether it must come back: the events session and
 *    any session with live subscriptions or pending events restart with backoff (daemon/restarts.ts).
 *
 * A command in flight, a model error, a failed tool call: those are answered where they happen
 * (a `response`, a `run_end` failed) and never reach this boundary.
 */
import { errorMessage } from "../shared/errors.ts";
import { sessionThrowSeam, throwAtSessionSeam } from "../shared/fault-seam.ts";
import { logLine } from "../shared/log.ts";
import { errorFrame } from "./protocol/frames.ts";
import type { Session } from "./session/session.ts";

export interface FaultTarget {
  /** Closes the session the way the reaper does (bounded; never rejects for a close failure). */
  close(name: string): Promise<void>;
  /** Whether the session must come back after the failure (it owns or holds subscriptions). */
  restartsAfterFailure(name: string): boolean;
}

/** Told once a failed session is closed; `restart`: it must be reopened (with backoff). */
export type SessionEndedListener = (name: string, restart: boolean) => void;

export class SessionFaults {
  private readonly failing = new WeakSet<Session>();
  private readonly listeners = new Set<SessionEndedListener>();

  constructor(private readonly target: FaultTarget) {}

  onEnded(listener: SessionEndedListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** The boundary: session `name` threw `error` from its own code. Resolves once it is closed. */
  async contain(name: string, session: Session, error: unknown): Promise<void> {
    if (this.failing.has(session) || session.closed) return;
    this.failing.add(session);
    const message = `session ${JSON.stringify(name)} failed: an unexpected exception: ${errorMessage(error)}`
    logLine(`serve: ${message} (the session is ended; the other sessions serve on)`, { level: "error", session: name, code: "session_crashed" });
    session.emit(errorFrame("session_crashed", message));
    // Judged before the close: closing stops the subscriptions that make it a restart.
    const restart = this.target.restartsAfterFailure(name);
    try {
      await this.target.close(name);
    } catch (e) {
      logLine(`serve: session ${JSON.stringify(name)}: closing it after its failure failed: ${errorMessage(e)}`, { level: "error", session: name, code: "session_close_failed" });
    }
    for (const listener of [...this.listeners]) {
      try {
        listener(name, restart);
      } catch (e) {
        logLine(`serve: session ${JSON.stringify(name)}: after its failure: ${errorMessage(e)}`, { level: "error", session: name, code: "session_ended_listener_failed" });
      }
    }
  }
}

/**
 * The test-only seam VIGIL_TEST_SESSION_THROW at `run_settled` (shared/fault-seam.ts; compiled out
 * of release builds): session `session.name` throws while its first run settles, once per process.
 * (`coalescer_fire` throws inside the events client itself: events/coalescer.ts.)
 */
export function armTestThrow(session: Session): void {
  const seam = sessionThrowSeam();
  if (seam === undefined || seam.session !== session.name || seam.when !== "run_settled") return;
  const off = session.onRunSettled(() => {
    off();
    throwAtSessionSeam(session.name, "run_settled");
  });
}
