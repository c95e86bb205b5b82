/**
 * NDJSON over stdio: commands in (one per line), frames out (one JSON line each).
 *
 * The reader is incremental and bounded per line (serve.md §4: 1 MiB). It reuses wrap's
 * LineSplitter, so an over-long line is never buffered whole: only a bounded head is kept (to
 * recover the command's `id`), and a `too_large` response comes out once its newline arrives.
 * Blank lines (and a trailing "\r") are skipped.
 */
import { type Frame as Line, joinParts, LineSplitter } from "../../shared/ndjson/line-splitter.ts";
import { PROTOCOL_LIMITS } from "./commands.ts";
import type { FrameBody } from "./frames.ts";
import { type ParseCommandResult, parseCommand, tooLarge } from "./parse-command.ts";

export interface NdjsonCommandReaderOptions {
  /** Per-line cap in bytes (excluding the newline). Default 1 MiB. */
  maxLineBytes?: number;
}

export class NdjsonCommandReader {
  private readonly splitter: LineSplitter;
  private readonly maxLineBytes: number;

  constructor(options: NdjsonCommandReaderOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? PROTOCOL_LIMITS.commandBytes;
    this.splitter = new LineSplitter(this.maxLineBytes);
  }

  /** Feeds a chunk; returns the results of the lines it completes, in order. */
  push(chunk: Uint8Array | string): ParseCommandResult[] {
    const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
    return this.handle(this.splitter.push(bytes));
  }

  /** At EOF: an unterminated final line still counts. */
  end(): ParseCommandResult[] {
    return this.handle(this.splitter.end());
  }

  /** Bytes held for an incomplete line (bounded by the cap plus one chunk). */
  get buffered(): number {
    return this.splitter.buffered;
  }

  private handle(lines: Line[]): ParseCommandResult[] {
    const out: ParseCommandResult[] = [];
    for (const line of lines) {
      const result = this.one(line);
      if (result) out.push(result);
    }
    return out;
  }

  private one(line: Line): ParseCommandResult | null {
    if (line.kind === "oversized") return tooLarge(line.head, line.length, this.maxLineBytes);
    let bytes = line.kind === "parts" ? joinParts(line).bytes : line.bytes;
    if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
    if (isBlank(bytes)) return null;
    return parseCommand(bytes, { maxBytes: this.maxLineBytes });
  }
}

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** One frame as one NDJSON line (newline included; JSON.stringify never emits a raw newline). */
export function encodeFrame(frame: FrameBody | (FrameBody & { seq: number })): string {
  return `${JSON.stringify(frame)}\n`;
}
