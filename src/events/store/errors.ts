/**
 * Errors of the events store. Each is a StateError (so it reaches the command's error boundary as
 * one line) with a `kind` that says what went wrong here; callers that answer a server (a webhook
 * 503, a poll that holds its cursor) switch on `kind`, not on the base `reason`.
 *
 * The base reason is the closest one StateErrorReason offers today (the state module has no
 * events-specific reasons yet); never one that another state file gives a stronger meaning.
 */
import { StateError, type StateErrorReason } from "../../shared/durable/state-error.ts";

export type EventsStoreErrorKind =
  /** The snapshot failed validation or is not JSON: refused, never silently replaced by an empty state. */
  | "snapshot_invalid"
  /** A state file that is a symlink, not a regular file, over its size bound, or unreadable. */
  | "file_refused"
  /** Writing or syncing the log or the snapshot failed; the records are kept and the next commit retries them. */
  | "write_failed"
  /** An entry or record that cannot be stored as given (not serializable, wrong shape, over a bound). */
  | "invalid_argument"
  /** The store was closed. */
  | "closed";

const BASE_REASON: Record<EventsStoreErrorKind, StateErrorReason> = {
  snapshot_invalid: "file_unreadable",
  file_refused: "file_unreadable",
  // not "transcript_failed" (that one tells a session its transcript is latched dead), and not
  // "file_unreadable": a failed write is no damaged file, it exits 3, not 2
  write_failed: "write_failed",
  invalid_argument: "invalid_argument",
  closed: "invalid_argument",
};

export class EventsStoreError extends StateError {
  readonly kind: EventsStoreErrorKind;

  constructor(kind: EventsStoreErrorKind, message: string, options: { cause?: unknown } = {}) {
    super(BASE_REASON[kind], message, options);
    this.name = "EventsStoreError";
    this.kind = kind;
  }
}

export function isEventsStoreError(e: unknown, kind?: EventsStoreErrorKind): e is EventsStoreError {
  return e instanceof EventsStoreError && (kind === undefined || e.kind === kind);
}
