/**
 * Where one supervised MCP server is in its life (serve.md §6 item 10), as one value, and the pure
 * rules that move it on. The I/O around each move (spawning, connecting, timers) is server-link.ts.
 *
 *   connecting ──connected──▶ connected ──dropped──▶ waiting ──attempt──▶ retrying ──connected──▶ connected
 *       └──────failed──────▶ waiting ◀──failed── retrying            (any) ──close──▶ closed (final)
 *
 * - Backoff (shared/backoff.ts): the n-th wait in a row is `initialMs · 2^n`, capped at `capMs`
 *   (1 s doubling to 60 s). A connection that stayed up for `healthyMs` (10 min) before it dropped
 *   starts the backoff over; one that flaps keeps doubling, so a server that crashes right after
 *   every start is not restarted in a tight loop.
 * - `restarts` counts the attempts after the first (every respawn of a stdio server, every
 *   re-initialization of an HTTP connection), whether or not they succeeded.
 * - `closed` is final: no event moves it, so nothing restarts a server while serve closes.
 */
import { type BackoffPolicy, doublingBackoffMs, waitsAfterUptime } from "../shared/backoff.ts";

export type LinkPhase =
  /** The first attempt, in progress. */
  | { kind: "connecting"; since: number }
  | { kind: "connected"; since: number }
  /** Down since `since`; the next attempt is due at `retryAt`. */
  | { kind: "waiting"; since: number; error: string; retryAt: number }
  /** Down since `since`; an attempt is in progress. */
  | { kind: "retrying"; since: number; error: string }
  | { kind: "closed"; since: number };

export interface Supervision {
  readonly phase: LinkPhase;
  /** Waits in a row so far: the backoff exponent. */
  readonly failures: number;
  readonly restarts: number;
}

export type LinkEvent =
  | { type: "connected"; at: number }
  /** An attempt failed. */
  | { type: "failed"; at: number; error: string }
  /** A connection that was up ended (process exit, connection lost, MCP session expired). */
  | { type: "dropped"; at: number; error: string }
  /** The wait is over: the next attempt starts. */
  | { type: "attempt"; at: number }
  | { type: "close"; at: number };

export function initialSupervision(at: number): Supervision {
  return { phase: { kind: "connecting", since: at }, failures: 0, restarts: 0 };
}

/** The next state; an event that does not apply in the current phase leaves it unchanged. */
export function nextSupervision(s: Supervision, event: LinkEvent, policy: BackoffPolicy): Supervision {
  const phase = s.phase;
  if (phase.kind === "closed") return s;
  switch (event.type) {
    case "close":
      return { ...s, phase: { kind: "closed", since: event.at } };
    case "connected":
      if (phase.kind !== "connecting" && phase.kind !== "retrying") return s;
      return { ...s, phase: { kind: "connected", since: event.at } };
    case "failed": {
      if (phase.kind !== "connecting" && phase.kind !== "retrying") return s;
      return wait(s, phase.since, event.at, event.error, s.failures, policy);
    }
    case "dropped": {
      if (phase.kind !== "connected") return s;
      const failures = waitsAfterUptime(s.failures, event.at - phase.since, policy.healthyMs);
      return wait(s, event.at, event.at, event.error, failures, policy);
    }
    case "attempt":
      if (phase.kind !== "waiting") return s;
      return { ...s, phase: { kind: "retrying", since: phase.since, error: phase.error }, restarts: s.restarts + 1 };
  }
}

function wait(s: Supervision, since: number, at: number, error: string, failures: number, policy: BackoffPolicy): Supervision {
  const retryAt = at + doublingBackoffMs(failures, policy.capMs, policy.initialMs);
  return { ...s, phase: { kind: "waiting", since, error, retryAt }, failures: failures + 1 };
}

/** The state a server reports (pool.serverStates(), `/v1/health`, get_state). */
export type ReportedServerState = "connecting" | "connected" | "reconnecting" | "closed";

export interface ServerStateReport {
  name: string;
  transport: "stdio" | "http";
  state: ReportedServerState;
  /** ISO time the state began (for `reconnecting`: when the server went down). */
  since: string;
  error?: string;
  retry_in_ms?: number;
  restarts: number;
}

export function reportSupervision(name: string, transport: "stdio" | "http", s: Supervision, now: number, toIso: (ms: number) => string): ServerStateReport {
  const phase = s.phase;
  const base = { name, transport, since: toIso(phase.since), restarts: s.restarts };
  switch (phase.kind) {
    case "connecting":
    case "connected":
    case "closed":
      return { ...base, state: phase.kind };
    case "waiting":
      return { ...base, state: "reconnecting", error: phase.error, retry_in_ms: Math.max(0, phase.retryAt - now) };
    case "retrying":
      return { ...base, state: "reconnecting", error: phase.error, retry_in_ms: 0 };
  }
}

/** What a tool call to a server that is not connected answers (the model reads it). */
export function unavailableText(report: ServerStateReport): string {
  const label = `MCP server ${JSON.stringify(report.name)}`;
  switch (report.state) {
    case "connecting":
      return `${label} is connecting (first attempt since ${report.since}); try again shortly`;
    case "connected":
      return `${label} is connected`;
    case "closed":
      return `${label} is closed (vigil serve is shutting down)`;
    case "reconnecting": {
      const retry = report.retry_in_ms === 0 ? "an attempt is in progress" : `next attempt in ${report.retry_in_ms} ms`;
      return `${label} is reconnecting (down since ${report.since}: ${report.error}; ${retry})`;
    }
  }
}
