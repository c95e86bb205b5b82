/**
 * The last resort of `vigil serve` (issue 12 item F): an exception or a rejection that escaped
 * every containment boundary. Each async root of a session — its runs' settlement, its listeners,
 * its events client's coalescer timer, subscription loops and server-connected wakes — reports to
 * that session's boundary (session-faults.ts), which ends the session alone; so this is reached
 * only by a bug outside any session, or in a root nobody routed yet.
 *
 * Decision: nothing says which session (if any) such an error belongs to, nor what it left half
 * done, so serve does not carry on as if nothing happened. It says so on stderr with the stack
 * (through logLine, so scrubbed of every registered secret), shuts down in order — sessions
 * closed, their events state written, the MCP servers closed and their groups swept, bounded —
 * and exits 70 (EXIT.internal, "a bug: please report it"), so a supervisor starts it afresh from
 * what is on disk (pending events included). Without this, Bun would print the error unscrubbed
 * and exit 1 at once, with no events state written and the groups swept only by the exit hook.
 * A second error while shutting down is logged too; the first one decides.
 */
import { type LogFields, logLine } from "../shared/log.ts";

type Kind = "unhandledRejection" | "uncaughtException";
const KINDS: readonly Kind[] = ["unhandledRejection", "uncaughtException"];

/** The part of `process` used (tests pass an EventEmitter). */
export interface ProcessErrorEvents {
  on(event: Kind, listener: (error: unknown) => void): unknown;
  off(event: Kind, listener: (error: unknown) => void): unknown;
}

/**
 * Installs the last resort; `fatal` is called once, with the first error. Returns the uninstaller.
 * `log` is logLine (which scrubs) unless a test watches the lines.
 */
export function onLastResort(
  fatal: (error: unknown) => void,
  target: ProcessErrorEvents = process,
  log: (line: string, fields?: LogFields) => void = logLine,
): () => void {
  let told = false;
  const listeners = KINDS.map((kind) => {
    const listener = (error: unknown) => {
      log(`serve: internal error: ${describe(kind)} escaped every containment boundary (a bug: please report it): ${stackOf(error)}`, { level: "error", code: "internal" });
      if (told) return;
      told = true;
      log("serve: shutting down in order (exit 70); pending events stay on disk", { level: "error", code: "internal" });
      fatal(error);
    };
    target.on(kind, listener);
    return { kind, listener };
  });
  return () => {
    for (const { kind, listener } of listeners) target.off(kind, listener);
  };
}

function describe(kind: Kind): string {
  return kind === "unhandledRejection" ? "an unhandled rejection" : "an uncaught exception";
}

function stackOf(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
