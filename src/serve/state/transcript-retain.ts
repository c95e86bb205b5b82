/**
 * `--transcript-retain-bytes N` (issue 12 item A): how much of each session's transcript serve
 * keeps; older segments beyond it are deleted after a rotation (transcript-segments.ts). Plain
 * bytes, 0 (keep only the live segment) to 2^53 - 1; default 1 GiB.
 */
import { usageError } from "../../shared/errors.ts";
import { TRANSCRIPT_DEFAULTS } from "./transcript-types.ts";

export function parseRetainBytes(raw: string | undefined): number {
  if (raw === undefined) return TRANSCRIPT_DEFAULTS.retainBytes;
  const n = /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw usageError(
      `--transcript-retain-bytes: expected a whole number of bytes from 0 to ${Number.MAX_SAFE_INTEGER} (default ${TRANSCRIPT_DEFAULTS.retainBytes}; 0 keeps only the live segment)`,
    );
  }
  return n;
}
