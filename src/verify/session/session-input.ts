/**
 * What the pure session verifier gets (verify-session.ts): the bytes of each evidence file of a
 * serve session directory, read within its bound by load-session.ts, or why it could not be read.
 */
import type { FileState } from "../capture-input.ts";

/**
 * Bounds of a serve session directory, checked before any JSON is materialized. A session lives
 * much longer than a wrap capture, so its logs get more room; one bigger than this is refused
 * (`file_too_large` / `too_many_lines` → unknown) — its evidence must first be rotated into a new
 * session name by the operator.
 */
export const SESSION_BOUNDS = {
  logBytes: 64 * 1024 * 1024,
  logLines: 250_000,
  checkpointBytes: 64 * 1024 * 1024,
  checkpointLines: 100_000,
  stopEnvelopes: 10_000,
  envelopeBytes: 256 * 1024,
  /** All stop envelopes together: they are held in memory at once (10,000 × 256 KiB would be 2.5 GiB). */
  stopBytesTotal: 64 * 1024 * 1024,
} as const;

/** One `stops/<n>.dsse.json`. */
export interface StopEntry {
  n: number;
  /** Its path relative to the session directory, for reports. */
  file: string;
  state: FileState;
}

export type StopsState =
  | { kind: "read"; entries: StopEntry[] }
  | { kind: "problem"; problem: "not_regular" | "too_large" | "unreadable"; message: string };

export interface SessionInput {
  /** The session's name: the directory's base name, the records' session_id and the chains' anchor input. */
  name: string;
  decisions: FileState;
  events: FileState;
  checkpoints: FileState;
  /** `stops/`; a missing directory reads as no entries. Entries in number order. */
  stops: StopsState;
}
