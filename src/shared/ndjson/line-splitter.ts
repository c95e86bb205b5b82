/**
 * MCP stdio framing with a hard per-message cap, enforced while reading.
 *
 * Chunks go in; complete lines come out as views into the chunks (no copy when a line sits inside
 * one chunk; one concatenation when it spans several). A line that grows past the cap is never
 * buffered whole: only a bounded head is kept (enough to recover a JSON-RPC id), the rest is
 * counted and discarded until its newline arrives.
 *
 * With a BlockPool, the part of a line held across reads is copied into pooled blocks instead of
 * being held as the reads' own chunks (block-pool.ts says why); the views of a frame then stay
 * valid until the next push() or end() call, which hands the blocks back for reuse.
 */
import type { BlockPool } from "./block-pool.ts";

export type Frame =
  /** `bytes` excludes the newline; `withNewline` is the exact bytes to forward (line + "\n"). */
  | { kind: "line"; bytes: Uint8Array; withNewline: Uint8Array }
  /**
   * A large line that spanned several reads, handed over as its pieces (the last ends with the
   * newline) instead of being joined: joining copies it once more and doubles its memory.
   */
  | { kind: "parts"; parts: Uint8Array[]; length: number }
  /** A line longer than the cap: its first and last few KiB, and its full length. */
  | { kind: "oversized"; head: Uint8Array; tail: Uint8Array; length: number };

const NEWLINE = 0x0a;
export const OVERSIZED_HEAD_BYTES = 4096;
/** The tail is kept too: many servers serialize the id after the result (`{"result":…,"id":7}`). */
export const OVERSIZED_TAIL_BYTES = 4096;

export class LineSplitter {
  private parts: Uint8Array[] = [];
  private partsLength = 0;
  /** Set while discarding the remainder of an over-cap line. */
  private oversizedHead: Uint8Array | null = null;
  private oversizedLength = 0;
  private oversizedTail: Uint8Array = new Uint8Array(0);
  /** Pooled blocks holding the current partial line; the last one is filled up to `blockUsed`. */
  private lineBlocks: Uint8Array[] = [];
  private blockUsed = 0;
  /** Pooled blocks under the frames of the last push(): theirs until the next push() or end(). */
  private lent: Uint8Array[] = [];

  /**
   * @param partsAtOrAbove multi-read lines at least this long come as "parts" frames (default: never).
   * @param headBytes how much of an over-cap line's head is kept (default OVERSIZED_HEAD_BYTES).
   * @param pool copy held partial lines into these blocks (default: hold views of the chunks).
   */
  constructor(
    private readonly maxMessageBytes: number,
    private readonly partsAtOrAbove = Number.POSITIVE_INFINITY,
    private readonly headBytes = OVERSIZED_HEAD_BYTES,
    private readonly pool: BlockPool | null = null,
  ) {}

  /** Splits a chunk; returns the frames it completes, in order. */
  push(chunk: Uint8Array): Frame[] {
    this.giveBackLent();
    const frames: Frame[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl < 0) {
        this.keep(chunk.subarray(start));
        return frames;
      }
      frames.push(this.complete(chunk, start, nl));
      start = nl + 1;
      if (start === chunk.length) return frames;
    }
  }

  /** At EOF: an unterminated final line is still a frame (forwarded with a newline added). */
  end(): Frame[] {
    this.giveBackLent();
    if (this.oversizedHead) {
      return [this.finishOversized(0, new Uint8Array(0))];
    }
    if (this.partsLength === 0) return [];
    const bytes = this.take();
    this.releaseLine(false);
    const withNewline = new Uint8Array(bytes.length + 1);
    withNewline.set(bytes);
    withNewline[bytes.length] = NEWLINE;
    return [{ kind: "line", bytes, withNewline }];
  }

  /** Bytes currently held for an incomplete line (bounded by cap + one chunk). */
  get buffered(): number {
    return this.partsLength + (this.oversizedHead?.length ?? 0);
  }

  private keep(rest: Uint8Array): void {
    if (rest.length === 0) return;
    if (this.oversizedHead) {
      this.oversizedLength += rest.length;
      this.keepTail(rest);
      return;
    }
    if (this.partsLength + rest.length > this.maxMessageBytes) {
      this.startDiscarding(rest, rest.length);
      return;
    }
    if (this.pool !== null) this.copyIn(rest);
    // A view, not a copy: stream readers hand over each chunk and never reuse its memory.
    else this.parts.push(rest);
    this.partsLength += rest.length;
  }

  /** Appends bytes of the partial line to its pooled blocks (extending the last view when it can). */
  private copyIn(bytes: Uint8Array): void {
    let off = 0;
    while (off < bytes.length) {
      let block = this.lineBlocks[this.lineBlocks.length - 1];
      if (block === undefined || this.blockUsed === block.length) {
        block = this.pool!.take();
        this.lineBlocks.push(block);
        this.blockUsed = 0;
      }
      const n = Math.min(bytes.length - off, block.length - this.blockUsed);
      block.set(bytes.subarray(off, off + n), this.blockUsed);
      const last = this.parts[this.parts.length - 1];
      if (last !== undefined && last.buffer === block.buffer && last.byteOffset + last.length === block.byteOffset + this.blockUsed) {
        this.parts[this.parts.length - 1] = block.subarray(last.byteOffset - block.byteOffset, this.blockUsed + n);
      } else {
        this.parts.push(block.subarray(this.blockUsed, this.blockUsed + n));
      }
      this.blockUsed += n;
      off += n;
    }
  }

  /** The current line's blocks now belong to the frame made of it (or to nobody, `now`). */
  private releaseLine(now: boolean): void {
    if (this.lineBlocks.length === 0) return;
    if (now) this.pool!.give(this.lineBlocks);
    else this.lent.push(...this.lineBlocks);
    this.lineBlocks = [];
    this.blockUsed = 0;
  }

  private giveBackLent(): void {
    if (this.lent.length === 0) return;
    this.pool!.give(this.lent);
    this.lent = [];
  }

  private complete(chunk: Uint8Array, start: number, nl: number): Frame {
    const length = nl - start;
    if (this.oversizedHead) return this.finishOversized(length, chunk.subarray(start, nl));
    if (this.partsLength + length > this.maxMessageBytes) {
      this.startDiscarding(chunk.subarray(start, nl), length);
      return this.finishOversized(0, new Uint8Array(0));
    }
    if (this.partsLength === 0) {
      return { kind: "line", bytes: chunk.subarray(start, nl), withNewline: chunk.subarray(start, nl + 1) };
    }
    this.parts.push(chunk.subarray(start, nl + 1));
    this.partsLength += length + 1;
    this.releaseLine(false);
    if (this.partsLength >= this.partsAtOrAbove) {
      const frame: Frame = { kind: "parts", parts: this.parts, length: this.partsLength - 1 };
      this.parts = [];
      this.partsLength = 0;
      return frame;
    }
    const withNewline = this.take();
    return { kind: "line", bytes: withNewline.subarray(0, withNewline.length - 1), withNewline };
  }

  /** Switches to discard mode, keeping a bounded head of what was buffered plus `more`. */
  private startDiscarding(more: Uint8Array, moreLength: number): void {
    const head = new Uint8Array(Math.min(this.headBytes, this.partsLength + more.length));
    let off = 0;
    for (const part of [...this.parts, more]) {
      if (off >= head.length) break;
      const n = Math.min(part.length, head.length - off);
      head.set(part.subarray(0, n), off);
      off += n;
    }
    this.oversizedLength = this.partsLength + moreLength;
    this.oversizedHead = head;
    this.oversizedTail = new Uint8Array(0);
    for (const part of [...this.parts, more]) this.keepTail(part);
    this.parts = [];
    this.partsLength = 0;
    // Head and tail are copies: nothing reads the blocks of the discarded line any more.
    this.releaseLine(true);
  }

  private finishOversized(extraLength: number, extra: Uint8Array): Frame {
    this.keepTail(extra);
    const frame: Frame = {
      kind: "oversized",
      head: this.oversizedHead!,
      tail: this.oversizedTail,
      length: this.oversizedLength + extraLength,
    };
    this.oversizedHead = null;
    this.oversizedLength = 0;
    this.oversizedTail = new Uint8Array(0);
    return frame;
  }

  private keepTail(piece: Uint8Array): void {
    if (piece.length >= OVERSIZED_TAIL_BYTES) {
      this.oversizedTail = piece.slice(piece.length - OVERSIZED_TAIL_BYTES);
      return;
    }
    const keep = Math.min(this.oversizedTail.length, OVERSIZED_TAIL_BYTES - piece.length);
    const tail = new Uint8Array(keep + piece.length);
    tail.set(this.oversizedTail.subarray(this.oversizedTail.length - keep));
    tail.set(piece, keep);
    this.oversizedTail = tail;
  }

  private take(): Uint8Array {
    const joined = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partsLength);
    this.parts = [];
    this.partsLength = 0;
    return joined;
  }
}

/** Joins a "parts" frame into an ordinary line (one copy), for readers that need it contiguous. */
export function joinParts(frame: Extract<Frame, { kind: "parts" }>): Extract<Frame, { kind: "line" }> {
  const withNewline = Buffer.concat(frame.parts, frame.length + 1);
  return { kind: "line", bytes: withNewline.subarray(0, frame.length), withNewline };
}
