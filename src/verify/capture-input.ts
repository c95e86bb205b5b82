/** What the pure verifier gets: each capture file's bytes, or its size+hash, or why it could not be read. */
import { CAPTURE_FILES } from "../evidence/format.ts";

export type FileState =
  | { kind: "read"; bytes: Uint8Array; sha256: string }
  | { kind: "hashed"; bytes: number; sha256: string }
  | { kind: "problem"; problem: "missing" | "not_regular" | "too_large" | "unreadable"; message: string };

export type CaptureFileName = (typeof CAPTURE_FILES)[keyof typeof CAPTURE_FILES];

export interface CaptureInput {
  files: Record<CaptureFileName, FileState>;
  /** Names of other entries found in the directory (not part of the format). */
  strayEntries: string[];
}

/** Bounds checked before any JSON is materialized (verify.md). */
export const BOUNDS = {
  companionBytes: 64 * 1024,
  decisionBytes: 8 * 1024 * 1024,
  decisionLines: 10_000,
  receiptBytes: 8 * 1024 * 1024,
  receiptLines: 100_000,
  /**
   * checkpoints.ndjson: one signed line per 1,000 records, or per 60 s while records are written —
   * at most one per record. 100,000 lines (~700 bytes each) is 69 days of a record a minute at the
   * default interval; a longer session should checkpoint less often (README "Signed evidence").
   */
  checkpointBytes: 64 * 1024 * 1024,
  checkpointLines: 100_000,
  /** capture.dsse.json (and each serve stop envelope): a statement over a handful of files. */
  envelopeBytes: 256 * 1024,
  /** server-stderr.log is only hashed (streamed), never parsed. */
  stderrBytes: 1024 * 1024 * 1024,
} as const;
