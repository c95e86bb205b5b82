/**
 * When a push stream is dead (serve.md §6 items 3 and 10; wire notes §8.3): a client that has heard
 * neither an event nor a heartbeat for more than twice the heartbeat interval SHOULD treat the
 * stream as dead and reconnect with its last cursor. The interval is never announced, so it is
 * measured here from the heartbeats the stream delivered.
 *
 * - Activity is any notification routed to the stream (`active`, `event`, `heartbeat`, `error`):
 *   each proves the server is still writing to it, so each restarts the silence clock.
 * - Only heartbeats feed the measurement, and only the gap between two consecutive heartbeats
 *   counts: a server that restarts its heartbeat timer after every event shows longer gaps (a
 *   later deadline, never an early one), while a gap measured from an event would understate the
 *   cadence of a server whose timer ignores events.
 * - The estimate is the largest of the last GAP_WINDOW gaps: two heartbeats that arrive bunched
 *   (a stall on the path, one TCP read) cannot shrink it once one real gap was seen, and a server
 *   that slows down is followed at once. Memory is bounded by the window.
 * - Until two heartbeats were seen the operator's fallback (VIGIL_EVENTS_STREAM_IDLE_MS) applies;
 *   after that 2 × the estimate, never below MIN_SILENCE_MS.
 *
 * Every function is pure: times are readings of one monotonic clock, passed in.
 */

export const HEARTBEAT_METHOD = "notifications/events/heartbeat";

/** Heartbeat gaps remembered per stream. */
export const GAP_WINDOW = 8;

/** The shortest silence that ever counts as a dead stream (serve.md §6 item 10: "at least 1 s"). */
export const MIN_SILENCE_MS = 1000;

export interface HeartbeatWatch {
  /** When the stream last showed life: when it was opened, or the latest notification's arrival. */
  readonly lastActivityAt: number;
  /** The latest heartbeat's arrival, null before the first. */
  readonly lastHeartbeatAt: number | null;
  /** The most recent gaps between consecutive heartbeats (ms), oldest first, at most GAP_WINDOW. */
  readonly gaps: readonly number[];
}

/** How long a silence ends the stream, and why. */
export type SilenceLimit =
  | { basis: "measured"; ms: number; intervalMs: number }
  | { basis: "fallback"; ms: number };

/** A stream opened at `at`: nothing heard yet, so the silence clock starts at the request. */
export function openedWatch(at: number): HeartbeatWatch {
  return { lastActivityAt: at, lastHeartbeatAt: null, gaps: [] };
}

/** The watch after a notification with `method` arrived at `at`. */
export function observed(watch: HeartbeatWatch, method: string, at: number): HeartbeatWatch {
  // A clock reading earlier than the last one (it cannot happen on a monotonic clock) never moves the watch back.
  const now = Math.max(at, watch.lastActivityAt);
  if (method !== HEARTBEAT_METHOD) return { ...watch, lastActivityAt: now };
  const gaps = watch.lastHeartbeatAt === null ? watch.gaps : [...watch.gaps, now - watch.lastHeartbeatAt].slice(-GAP_WINDOW);
  return { lastActivityAt: now, lastHeartbeatAt: now, gaps };
}

/** The measured heartbeat interval (ms), or null until two heartbeats were seen. */
export function measuredIntervalMs(watch: HeartbeatWatch): number | null {
  return watch.gaps.length === 0 ? null : Math.max(...watch.gaps);
}

/** How much silence ends this stream: 2 × the measured interval (≥ 1 s) once measured, else the fallback. */
export function silenceLimit(watch: HeartbeatWatch, fallbackMs: number): SilenceLimit {
  const intervalMs = measuredIntervalMs(watch);
  if (intervalMs === null) return { basis: "fallback", ms: fallbackMs };
  return { basis: "measured", ms: Math.max(MIN_SILENCE_MS, 2 * intervalMs), intervalMs };
}

/** The clock reading at which the stream is dead unless something arrives first. */
export function silenceDeadline(watch: HeartbeatWatch, fallbackMs: number): number {
  return watch.lastActivityAt + silenceLimit(watch, fallbackMs).ms;
}

/** Why a silent stream is being replaced, for the status frame and the log. */
export function describeSilence(limit: SilenceLimit): string {
  const why =
    limit.basis === "measured"
      ? `2 × its measured heartbeat interval of ${Math.round(limit.intervalMs)} ms, at least ${MIN_SILENCE_MS} ms`
      : "VIGIL_EVENTS_STREAM_IDLE_MS; fewer than two heartbeats seen";
  return `the event stream was silent for ${Math.round(limit.ms)} ms (${why}); reconnecting from the cursor`;
}
