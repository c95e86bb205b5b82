/**
 * For unit tests that open a real EventsHub (src/events/hub.ts) over a store in a temp dir: the
 * events tuning at test sizes, and a session that records the frames it is given and takes every
 * injection (no runs, so nothing is ever reported back).
 */
import type { EventsFrame } from "../../src/events/frames.ts";
import type { EventsSession, EventsTuning } from "../../src/events/ports.ts";

export const TEST_EVENTS_TUNING: EventsTuning = {
  pollFloorMs: 1000, coalesceMs: 10, streamIdleMs: 60_000, maxPending: 1000, maxPendingBytes: 1 << 24, healthyMs: 60_000,
  refusedRetryMs: 60_000, retryCapMs: 60_000, runtimeTtlMs: 3_600_000, streamBuffer: 64, longPollMs: 1000,
  modelBackoffCapMs: 60_000, webhookTtlMs: 3_600_000, bodyTimeoutMs: 1000, ackTimeoutMs: 10_000, jwksTimeoutMs: 1000,
};

/** A running session named `name` whose emitted frames land in `frames`. */
export function recordingEventsSession(name: string, frames: EventsFrame[] = []): EventsSession {
  return {
    name, state: "running", closed: false,
    inject: () => ({ queued: "follow_up" }),
    onRunSettled: () => () => {},
    onReceived: () => () => {},
    emit: (frame) => (frames.push(frame), frames.length),
    subscribe: () => () => {},
    setEventsHandler: () => {},
  };
}
