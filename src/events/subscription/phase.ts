/**
 * Where one subscription is in its life (serve.md §6 items 1, 6, 7), as one value instead of loose
 * flags, and the pure rules that move it on. Subscription (subscription.ts) holds the value and
 * does the I/O around each move.
 *
 *   starting ──up──▶ up ──failure──▶ retrying | refused ──up──▶ up …
 *       └──failure──▶ retrying | refused            (any) ──stop / retire──▶ stopped | terminated
 *
 * - `refused`: a permanent refusal stands. It is retried (configured subscriptions only) and stays
 *   refused through the failures of those retries until the subscription is up again; it is
 *   reported `retrying` in its status and `refused` in `mcp_events_list`, and it does not keep its
 *   session alive.
 * - `lastUpAt` (when it last came up) and `endedSinceUp` (the server ended it since) survive the
 *   down phases: coming back up after the server ended it is a comeback (events may have been
 *   missed), and `lastUpAt` restores the re-discovery budget after a healthy period.
 * - `stopped` and `terminated` are final.
 */
import type { SubscriptionState } from "../frames.ts";

/** Down, and trying again: what is known about the time before. */
interface Down {
  lastError: string;
  /** When it last came up (null: never since it started). */
  lastUpAt: number | null;
  /** The server ended it (terminated, or a terminal error while up) since it was last up. */
  endedSinceUp: boolean;
}

export type Phase =
  | { kind: "starting" }
  | { kind: "up"; since: number }
  | ({ kind: "retrying" } & Down)
  | ({ kind: "refused" } & Down)
  | { kind: "stopped"; lastError: string | null }
  | { kind: "terminated"; lastError: string | null };

export const STARTING: Phase = { kind: "starting" };

/** The state a status reports (notes §2.2 has no `refused` state: a standing refusal is retrying). */
export function reportedState(phase: Phase): SubscriptionState {
  switch (phase.kind) {
    case "up":
      return "active";
    case "refused":
      return "retrying";
    default:
      return phase.kind;
  }
}

export function lastErrorOf(phase: Phase): string | null {
  return phase.kind === "starting" || phase.kind === "up" ? null : phase.lastError;
}

/** Up, or still trying (not refused, not ended): what keeps a session from the reaper. */
export function isLive(phase: Phase): boolean {
  return phase.kind === "starting" || phase.kind === "up" || phase.kind === "retrying";
}

export function isFinal(phase: Phase): boolean {
  return phase.kind === "stopped" || phase.kind === "terminated";
}

export function lastUpAt(phase: Phase): number | null {
  if (phase.kind === "up") return phase.since;
  return phase.kind === "retrying" || phase.kind === "refused" ? phase.lastUpAt : null;
}

/** Coming up from `phase` follows an end by the server: tell that events may have been missed. */
export function isComeback(phase: Phase): boolean {
  return (phase.kind === "retrying" || phase.kind === "refused") && phase.lastUpAt !== null && phase.endedSinceUp;
}

/**
 * The phase after a failure that the subscription retries: refused when this failure is a
 * permanent refusal or one already stands, else retrying.
 */
export function afterFailure(phase: Phase, failure: { message: string; refused: boolean; ended: boolean }): Phase {
  const before = phase.kind === "retrying" || phase.kind === "refused" ? phase.endedSinceUp : false;
  const down: Down = { lastError: failure.message, lastUpAt: lastUpAt(phase), endedSinceUp: before || failure.ended };
  return failure.refused || phase.kind === "refused" ? { kind: "refused", ...down } : { kind: "retrying", ...down };
}

/** The phase after stop(): stopped, unless the server already ended it for good. */
export function afterStop(phase: Phase): Phase {
  return phase.kind === "terminated" ? phase : { kind: "stopped", lastError: lastErrorOf(phase) };
}
