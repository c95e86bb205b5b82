/**
 * Where the last `compaction` record of a transcript is (issue 12 item A: a reopened session
 * rebuilds its history from it, reading O(recent)).
 *
 * - In the live segment it is found by the open-time scan, which reads every record's prefix anyway.
 * - For the older segments, `transcript.compaction.json` says `{"before":F,"seq":N|null}`: the last
 *   compaction record with a seq below F is N (null: none). It is written atomically at each
 *   rotation, after the finished segment was synced, with F the new live segment's first seq, so it
 *   only ever describes records already durable: it cannot point past what is on disk.
 * - It is a hint. Missing, unreadable, or stale (F is not the live segment's first seq: a crash came
 *   between a rotation and its write), the older segments are scanned backwards, newest first, down
 *   to the one the hint covers, within a byte budget; past the budget the answer is "none".
 */
import { closeSync, constants, openSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { readSmallFile, writeFileAtomic } from "../../shared/durable/atomic-file.ts";
import { fdReader } from "../../shared/durable/line-scan.ts";
import { errnoCode } from "../../shared/errors.ts";
import { type RecordScan, lastCompactionIn } from "./transcript-scan.ts";

export const COMPACTION_POINTER_FILE = "transcript.compaction.json";
const MAX_POINTER_BYTES = 256;

const Seq = v.pipe(v.number(), v.safeInteger(), v.minValue(1));
const PointerSchema = v.object({ before: Seq, seq: v.nullable(Seq) });
export type CompactionPointer = v.InferOutput<typeof PointerSchema>;

/** The pointer, or null when it is missing or cannot be used (the scan stands in for it). */
export function readCompactionPointer(dir: string): CompactionPointer | null {
  try {
    const bytes = readSmallFile(join(dir, COMPACTION_POINTER_FILE), MAX_POINTER_BYTES);
    if (bytes === null) return null;
    const parsed = v.safeParse(PointerSchema, JSON.parse(bytes.toString("utf8")));
    return parsed.success && (parsed.output.seq === null || parsed.output.seq < parsed.output.before) ? parsed.output : null;
  } catch {
    return null;
  }
}

export function writeCompactionPointer(dir: string, pointer: CompactionPointer): Promise<void> {
  return writeFileAtomic(join(dir, COMPACTION_POINTER_FILE), `${JSON.stringify(pointer)}\n`);
}

export interface OlderSegment {
  first: number;
  name: string;
  size: number;
}

/**
 * The seq of the last compaction record in `older` (the segments before the live one, oldest
 * first; the live one starts at `liveFirst`), scanning newest first. `hint` (a stale pointer)
 * answers for the segments below its `before`. Null when there is none, or none within
 * `budgetBytes` of reading.
 */
export async function scanForCompaction(
  dir: string,
  older: readonly OlderSegment[],
  liveFirst: number,
  hint: CompactionPointer | null,
  budgetBytes: number,
  scan: RecordScan,
): Promise<number | null> {
  let spent = 0;
  for (let i = older.length - 1; i >= 0; i--) {
    const seg = older[i]!;
    const next = older[i + 1]?.first ?? liveFirst;
    if (hint !== null && next <= hint.before) return hint.seq;
    if (spent + seg.size > budgetBytes) return null;
    spent += seg.size;
    let fd: number;
    try {
      fd = openSync(join(dir, seg.name), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      if (errnoCode(e) === "ENOENT") return null; // deleted by retention: everything older is too
      throw e;
    }
    try {
      const found = await lastCompactionIn(fdReader(fd), seg.size, scan);
      if (found !== null) return found;
    } finally {
      closeSync(fd);
    }
  }
  return null;
}

/**
 * What the transcript knows of its last compaction record: the newest one at or after the live
 * segment's first seq at open (seen by the open scan and by appends), else the one before it,
 * resolved once — from the pointer when it is current, else by the bounded scan.
 */
export class CompactionTracker {
  private newest: number | null = null;
  private older: { seq: number | null } | null = null;
  private hint: CompactionPointer | null = null;

  constructor(
    private readonly dir: string,
    /** The live segment's first seq at open. */
    private readonly openedFirst: number,
    private readonly budgetBytes: number,
    private readonly scan: RecordScan,
  ) {}

  /** A compaction record at or after openedFirst (the open scan, an append). */
  seen(seq: number): void {
    this.newest = seq;
  }

  /** The newest compaction at or after openedFirst, when there is one. */
  get recent(): number | null {
    return this.newest;
  }

  /** At open, after the live scan: whether earlier segments exist, and what the pointer says of them. */
  settle(hasOlder: boolean): void {
    if (!hasOlder) {
      this.older = { seq: null };
      return;
    }
    const hint = readCompactionPointer(this.dir);
    if (hint !== null && hint.before === this.openedFirst) this.older = { seq: hint.seq };
    else this.hint = hint !== null && hint.before < this.openedFirst ? hint : null;
  }

  /** The seq of the last compaction record, or null. `segments` are the transcript's now (oldest first). */
  async last(segments: readonly OlderSegment[]): Promise<number | null> {
    if (this.newest !== null) return this.newest;
    return this.before(segments);
  }

  /** The last compaction before openedFirst (scanned once, bounded). */
  async before(segments: readonly OlderSegment[]): Promise<number | null> {
    if (this.older === null) {
      const older = segments.filter((s) => s.first < this.openedFirst);
      const seq = await scanForCompaction(this.dir, older, this.openedFirst, this.hint, this.budgetBytes, this.scan);
      this.older ??= { seq };
    }
    return this.older.seq;
  }
}
