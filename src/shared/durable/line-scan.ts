/**
 * Reading newline-delimited records from a file descriptor in bounded chunks, between two byte
 * offsets. Memory is bounded by the chunk size plus one line of at most `maxLine` bytes: a longer
 * line is reported without its bytes and skipped.
 */
import { read } from "node:fs";

export interface ScannedLine {
  /** Byte offset of the line's first byte. */
  offset: number;
  /** Length in bytes, without the newline. */
  length: number;
  /**
   * The line's bytes, without the newline; null when it is over maxLine. Only valid during the
   * callback (it may be a view of the reused chunk buffer): copy it to keep it.
   */
  bytes: Buffer | null;
  /** False for trailing bytes with no newline after them (a torn tail). */
  complete: boolean;
}

export type ReadAt = (buf: Buffer, length: number, position: number) => Promise<number>;

export function fdReader(fd: number): ReadAt {
  return (buf, length, position) =>
    new Promise((done, fail) => read(fd, buf, 0, length, position, (e, n) => (e ? fail(e) : done(n))));
}

export interface ScanOptions {
  maxLine: number;
  chunkBytes: number;
  /** Told the size of every read (for accounting). */
  onRead?: (bytes: number) => void;
}

/**
 * Calls onLine for each line starting at `start`, up to `end` (exclusive). onLine returns false to
 * stop early. Returns the offset just after the last line handed out (complete or not).
 */
export async function scanLines(
  readAt: ReadAt,
  start: number,
  end: number,
  options: ScanOptions,
  onLine: (line: ScannedLine) => boolean,
): Promise<number> {
  const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(options.chunkBytes, Math.max(1, end - start))));
  let carry: Buffer[] = [];
  let carryLen = 0;
  let overlong = false;
  let lineStart = start;
  let pos = start;
  const emit = (piece: Buffer, complete: boolean): boolean => {
    const length = carryLen + piece.length;
    let bytes: Buffer | null = null;
    if (!overlong && length <= options.maxLine) bytes = carryLen === 0 ? piece : Buffer.concat([...carry, piece], length);
    const line: ScannedLine = { offset: lineStart, length, bytes, complete };
    carry = [];
    carryLen = 0;
    overlong = false;
    lineStart += length + (complete ? 1 : 0);
    return onLine(line);
  };
  while (pos < end) {
    const n = await readAt(chunk, Math.min(chunk.length, end - pos), pos);
    if (n === 0) break; // the file is shorter than we were told; report what we have as a tail
    options.onRead?.(n);
    const view = chunk.subarray(0, n);
    let i = 0;
    while (i < n) {
      const nl = view.indexOf(0x0a, i);
      if (nl === -1) {
        const rest = view.subarray(i);
        if (!overlong && carryLen + rest.length <= options.maxLine) carry.push(Buffer.from(rest));
        else {
          overlong = true;
          carry = [];
        }
        carryLen += rest.length;
        break;
      }
      const keepGoing = emit(view.subarray(i, nl), true);
      i = nl + 1;
      if (!keepGoing) return lineStart;
    }
    pos += n;
  }
  if (carryLen > 0) emit(Buffer.alloc(0), false);
  return lineStart;
}
