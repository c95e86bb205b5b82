/** The transcript's records, options and defaults (transcript.ts). */
import { MAX_FRAME_BYTES } from "../../shared/frame-cap.ts";

export type Frame = { type: string; [key: string]: unknown };
export type TranscriptRecord = Frame & { seq: number; time: string };

const MiB = 1024 * 1024;

export const TRANSCRIPT_DEFAULTS = {
  maxRecordBytes: MAX_FRAME_BYTES,
  /** Rotate to a new segment at this size (issue 12: 64 MiB; `VIGIL_TRANSCRIPT_SEGMENT_BYTES`). */
  segmentBytes: 64 * MiB,
  /** Keep at most this much transcript per session (`--transcript-retain-bytes`, 1 GiB). */
  retainBytes: 1024 * MiB,
  /** The backward scan for the last compaction when its pointer is missing or stale reads at most this much. */
  compactionScanBytes: 256 * MiB,
  indexEvery: 256,
  readChunkBytes: 64 * 1024,
  readLimit: 1000,
  readMaxBytes: 4 * MiB,
} as const;

/** The bounds serve configures (the segment size knob and the retain flag). */
export interface TranscriptLimits {
  segmentBytes: number;
  retainBytes: number;
}

export interface TranscriptOptions extends Partial<TranscriptLimits> {
  /** Largest record, newline included (default 8 MiB). */
  maxRecordBytes?: number;
  compactionScanBytes?: number;
  /** Index the byte offset of every Nth record (default 256). */
  indexEvery?: number;
  readChunkBytes?: number;
  /** Test seam: the fdatasync used by open and sync. */
  fdatasync?: (fd: number) => Promise<void>;
  /** Test seam: the positional write (returns bytes written, throws the system error). */
  write?: (fd: number, buf: Buffer, offset: number, length: number, position: number) => number;
  now?: () => Date;
  /** Where housekeeping problems (a pointer not written, a segment not deleted) are told (default stderr). */
  log?: (line: string) => void;
}

export interface ReadSinceOptions {
  /** At most this many records (default 1000). */
  limit?: number;
  /** At most this many bytes of records (default 4 MiB); the first record is returned whatever its size. */
  maxBytes?: number;
}

export interface ReadSinceResult {
  records: TranscriptRecord[];
  /** Records after the last one returned exist (ask again with its seq). */
  more: boolean;
}
