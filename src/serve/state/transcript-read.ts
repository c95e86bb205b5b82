/**
 * Reading a page of records across the transcript's segments: the segment holding `since + 1` is
 * found from the segments' first seqs (their names), so earlier segments are never read; within
 * it the scan starts at its sparse index when it has one (segments written by this process), else
 * at its start; the page continues into the next segments until it is full.
 *
 * Each segment is opened read-only for the read, so a rotation or a retention deletion meanwhile
 * never pulls a descriptor from under it. A segment deleted before it was opened means the range
 * was pruned meanwhile: `transcript_pruned` with the oldest seq now stored.
 */
import { closeSync, constants, openSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { fdReader } from "../../shared/durable/line-scan.ts";
import { TranscriptPrunedError } from "./transcript-pruned.ts";
import { type PageFill, type RecordScan, type SparseIndex, readPage } from "./transcript-scan.ts";
import { segmentFor } from "./transcript-segments.ts";

export interface Segment {
  first: number;
  name: string;
  /** Bytes of whole records (the live segment's grows as records are appended). */
  size: number;
  /** Offsets of every Nth record, for the segments this process wrote or scanned; null otherwise. */
  index: SparseIndex | null;
}

export interface Page {
  since: number;
  limit: number;
  maxBytes: number;
}

/** Records with seq > page.since from `segments` (oldest first, a snapshot), bounded by the page. */
export async function readAcross<R>(
  dir: string,
  segments: readonly Segment[],
  oldest: () => number,
  page: Page,
  scan: RecordScan,
): Promise<{ records: R[]; more: boolean }> {
  const first = segments[0]?.first ?? 1;
  if (page.since + 1 < first) throw new TranscriptPrunedError(page.since, first);
  const fill: PageFill<R> = { records: [], bytes: 0, more: false };
  for (let i = segmentFor(segments, page.since + 1); i < segments.length && !fill.more; i++) {
    const seg = segments[i]!;
    const end = seg.size;
    const path = join(dir, seg.name);
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      if (errnoCode(e) === "ENOENT") throw new TranscriptPrunedError(page.since, oldest());
      throw new StateError("transcript_failed", `cannot read transcript segment ${path}: ${errorMessage(e)}`, { cause: e });
    }
    try {
      const start = seg.first > page.since ? 0 : (seg.index?.startOffset(page.since) ?? 0);
      await readPage<R>(path, fdReader(fd), start, end, scan, page, fill);
    } finally {
      closeSync(fd);
    }
  }
  return { records: fill.records, more: fill.more };
}
