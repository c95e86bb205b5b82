/**
 * Typed errors of the session state store. A StateError is a VigilError, so a state problem that
 * reaches the command's error boundary prints one line with the right exit code; callers that
 * answer a client (an HTTP 400, a `response` frame) switch on `reason`.
 */
import { type ErrorCode, VigilError } from "../errors.ts";

export type StateErrorReason =
  /** A session name outside `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, or containing `..`. */
  | "invalid_session_name"
  /** The state dir (or a directory inside it) is a symlink, not a directory, writable by others, or not ours. */
  | "unsafe_state_dir"
  /** One record over the per-record cap; nothing was written, the transcript stays usable. */
  | "record_too_large"
  /** A frame that cannot be serialized (cycle, BigInt, not an object); nothing was written. */
  | "record_invalid"
  /** A write or a sync failed: the transcript is latched failed and refuses every later append. */
  | "transcript_failed"
  /** A transcript whose middle (not its tail) is damaged: it is not repaired, the session cannot start. */
  | "transcript_corrupt"
  /** The transcript was closed. */
  | "transcript_closed"
  /** A read from before the oldest record retention kept (the error carries that seq). */
  | "transcript_pruned"
  /** A bad argument to a read (since, limit). */
  | "invalid_argument"
  /** A small state file that is over its bound, not a regular file, or unreadable. */
  | "file_unreadable"
  /**
   * Writing or syncing a state file failed at run time (disk full, EIO): the file is not refused,
   * it could not be kept up to date — an evidence failure (exit 3), not a refusal (exit 2).
   */
  | "write_failed";

function vigilCode(reason: StateErrorReason): ErrorCode {
  switch (reason) {
    case "invalid_session_name":
    case "unsafe_state_dir":
      return "usage";
    // State refusals (issue 11 item 9): a session whose files cannot be used does not start; the
    // message names the file, and the exit is 2 like any refused input — not 70, this is no bug.
    case "transcript_corrupt":
    case "file_unreadable":
      return "state_invalid";
    // What was to be kept durable could not be written: like a failed evidence write (README "Exit status").
    case "transcript_failed":
    case "write_failed":
      return "evidence_write_failed";
    default:
      return "internal";
  }
}

export class StateError extends VigilError {
  readonly reason: StateErrorReason;

  constructor(reason: StateErrorReason, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(vigilCode(reason), message, options);
    this.name = "StateError";
    this.reason = reason;
  }
}

export function isStateError(e: unknown, reason?: StateErrorReason): e is StateError {
  return e instanceof StateError && (reason === undefined || e.reason === reason);
}
