/** Small pieces of the Session that stand on their own: the default events hook, errors, outcome checks. */
import { errorResponse } from "../protocol/frames.ts";
import type { EventsHandler, RunOutcome } from "./types.ts";

export const EVENTS_NOT_ENABLED_MESSAGE = "MCP Events are configured by the events subsystem (not enabled in this session)";
export const DEFAULT_CLOSE_TIMEOUT_MS = 5000;

/** Thrown by `inject` once the session is closed. */
export class SessionClosedError extends Error {
  readonly code = "session_closed";
  constructor() {
    super("the session is closed");
  }
}

/**
 * Thrown to a run whose frame the transcript refused (too large, or the transcript failed): the run
 * fails rather than go on with frames no client saw and no restart will find.
 */
export class FrameNotStoredError extends Error {
  readonly code = "frame_not_stored";
  constructor(frameType: string, why: string) {
    super(`a ${frameType} frame of the run could not be stored: ${why}`);
    this.name = "FrameNotStoredError";
  }
}

/** The default events hook: the events subsystem is not plugged in. */
export const eventsNotEnabled: EventsHandler = (command) =>
  errorResponse(command.id, command.type, "events_not_enabled", EVENTS_NOT_ENABLED_MESSAGE);

/** A runner's outcome as the session trusts it: anything malformed counts as failed. */
export function normalizeOutcome(o: RunOutcome | undefined): RunOutcome {
  const status = o?.status === "ok" || o?.status === "aborted" ? o.status : "failed";
  const out: RunOutcome = {
    status,
    steersSeen: typeof o?.steersSeen === "number" ? o.steersSeen : 0,
  };
  if (typeof o?.error === "string") out.error = o.error;
  else if (o?.status !== status) out.error = "the runner reported no valid status";
  if (typeof o?.code === "string") out.code = o.code;
  return out;
}

/**
 * Calls every listener with `value`; a listener's failure does not stop the others, and goes to
 * `onError` (a session's fault boundary: an exception there is unexpected, issue 12 item F).
 */
export function notifyEach<T>(listeners: Iterable<(value: T) => void>, value: T, onError: (e: unknown) => void = () => {}): void {
  for (const listener of [...listeners]) {
    try {
      listener(value);
    } catch (e) {
      onError(e);
    }
  }
}
