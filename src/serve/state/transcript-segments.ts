/**
 * The transcript's segments (issue 12 item A): a session's transcript is a run of files, each
 * holding the records from its first seq up to the next file's first seq.
 *
 *   transcript.jsonl                     the first segment (seq 1 on): the single file of older versions
 *   transcript.jsonl.<first seq, 16 digits>  every later one, e.g. transcript.jsonl.0000000000004097
 *
 * So a transcript written by an older version needs no migration (it is the first segment), a
 * listing sorts in seq order (a name sorts before its extensions, and the zero-padded seqs sort as
 * numbers, byte-wise and in the usual locales alike), and the first seq of every segment is known
 * from its name without reading it. The last segment is the live one (appends go there); older ones are only read.
 *
 * Retention: after a rotation, the oldest segments are deleted while the kept older segments plus a
 * full live one would exceed the retain bound, so a session's transcript files stay within
 * max(retain, one segment) plus one record. The live segment is never deleted.
 */
import { lstatSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { TRANSCRIPT_FILE } from "./paths.ts";

const NUMBERED = /^transcript\.jsonl\.(\d{16})$/;
/** Seqs are safe integers (transcript-scan.ts reads at most 16 digits). */
const SEQ_DIGITS = 16;

export interface SegmentFile {
  /** Seq of the segment's first record (or of the record that will be first, while it is empty). */
  first: number;
  name: string;
  /** Bytes; for the live segment, what it had when listed. */
  size: number;
}

/** The base name of the segment whose first record is `first`. */
export function segmentName(first: number): string {
  if (!Number.isSafeInteger(first) || first < 1) throw new RangeError(`bad segment seq ${first}`);
  return first === 1 ? TRANSCRIPT_FILE : `${TRANSCRIPT_FILE}.${String(first).padStart(SEQ_DIGITS, "0")}`;
}

/** The first seq a segment's name stands for, or null when the name is not a segment's. */
export function segmentFirst(name: string): number | null {
  if (name === TRANSCRIPT_FILE) return 1;
  const m = NUMBERED.exec(name);
  if (m === null) return null;
  const first = Number(m[1]);
  return Number.isSafeInteger(first) && first > 1 ? first : null;
}

/** The segments in `dir`, oldest first (empty when there is none yet). A segment that is not a regular file is transcript_corrupt. */
export function listSegments(dir: string): SegmentFile[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new StateError("transcript_failed", `cannot list the transcript segments in ${dir}: ${errorMessage(e)}`, { cause: e });
  }
  const segments: SegmentFile[] = [];
  for (const name of names) {
    const first = segmentFirst(name);
    if (first === null) continue;
    const path = join(dir, name);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st === undefined) continue; // deleted by retention meanwhile
    if (st.isSymbolicLink()) throw new StateError("transcript_failed", `cannot open transcript ${path}: it is a symbolic link`);
    if (!st.isFile()) throw new StateError("transcript_corrupt", `transcript segment ${path} is not a regular file`);
    segments.push({ first, name, size: st.size });
  }
  return segments.sort((a, b) => a.first - b.first);
}

/** Index of the segment holding seq `seq` (the last whose first seq is <= it); 0 when seq is before them all. */
export function segmentFor(segments: readonly { first: number }[], seq: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  let found = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((segments[mid]?.first ?? Number.POSITIVE_INFINITY) <= seq) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * How many of the oldest segments to delete (the last one, live, never counts): while the older
 * segments kept plus a full live segment would exceed `retainBytes`.
 */
export function segmentsToPrune(sizes: readonly number[], retainBytes: number, segmentBytes: number): number {
  let kept = 0;
  for (let i = 0; i < sizes.length - 1; i++) kept += sizes[i] ?? 0;
  let n = 0;
  while (n < sizes.length - 1 && kept + segmentBytes > retainBytes) {
    kept -= sizes[n] ?? 0;
    n++;
  }
  return n;
}

/**
 * Deletes the oldest of `segments` (mutated) beyond the retain bound, never the live one. Returns
 * how many were deleted; one that cannot be deleted is told to `log` and stops the pass (the next
 * rotation or open tries again).
 */
export function pruneSegments(
  dir: string,
  segments: SegmentFile[],
  bounds: { retainBytes: number; segmentBytes: number },
  log: (line: string) => void,
): number {
  const n = segmentsToPrune(segments.map((s) => s.size), bounds.retainBytes, bounds.segmentBytes);
  for (let i = 0; i < n; i++) {
    const seg = segments[0]!;
    try {
      unlinkSync(join(dir, seg.name));
    } catch (e) {
      if (errnoCode(e) !== "ENOENT") {
        log(`serve: transcript in ${dir}: cannot delete old segment ${seg.name}: ${errorMessage(e)}`);
        return i;
      }
    }
    segments.shift();
  }
  return n;
}

