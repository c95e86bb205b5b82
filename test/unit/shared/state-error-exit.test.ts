/**
 * The exit code each state failure reaches the error boundary with (README "Exit status"): a state
 * file that is damaged, invalid or unreadable is a refusal (2); a write or sync that failed (disk
 * full, EIO) is not a refusal of the file but a failure to keep it, like a failed evidence write
 * (3). Pinned per reason and per events-store kind, so a remap is a visible decision.
 */
import { describe, expect, test } from "bun:test";
import { EXIT } from "../../../src/shared/errors.ts";
import { StateError, type StateErrorReason } from "../../../src/shared/durable/state-error.ts";
import { EventsStoreError, type EventsStoreErrorKind } from "../../../src/events/store/errors.ts";

const BY_REASON: Record<StateErrorReason, number> = {
  invalid_session_name: EXIT.usage,
  unsafe_state_dir: EXIT.usage,
  transcript_corrupt: EXIT.usage,
  file_unreadable: EXIT.usage,
  transcript_failed: EXIT.evidence,
  write_failed: EXIT.evidence,
  // Programming errors of a caller, never a user's input: a bug if they reach the boundary.
  record_too_large: EXIT.internal,
  record_invalid: EXIT.internal,
  transcript_closed: EXIT.internal,
  invalid_argument: EXIT.internal,
  // Answered to the client that asked (get_transcript, ?since=), never a reason to exit.
  transcript_pruned: EXIT.internal,
};

const BY_EVENTS_KIND: Record<EventsStoreErrorKind, number> = {
  snapshot_invalid: EXIT.usage,
  file_refused: EXIT.usage,
  write_failed: EXIT.evidence,
  invalid_argument: EXIT.internal,
  closed: EXIT.internal,
};

describe("state errors exit with their documented code", () => {
  for (const [reason, exit] of Object.entries(BY_REASON) as [StateErrorReason, number][]) {
    test(`${reason} → ${exit}`, () => {
      expect(new StateError(reason, "x").exitCode).toBe(exit);
    });
  }

  for (const [kind, exit] of Object.entries(BY_EVENTS_KIND) as [EventsStoreErrorKind, number][]) {
    test(`events store ${kind} → ${exit}`, () => {
      expect(new EventsStoreError(kind, "x").exitCode).toBe(exit);
    });
  }

  test("a failed events-state write is a write failure, not a damaged file", () => {
    const e = new EventsStoreError("write_failed", "writing mcp-events.json failed: ENOSPC");
    expect(e.reason).toBe("write_failed");
    expect(e.code).toBe("evidence_write_failed");
  });
});
