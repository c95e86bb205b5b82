/**
 * A per-event size cap for `text/event-stream` bodies, enforced while streaming.
 *
 * Events within the cap pass through byte for byte. An event that outgrows it is never held whole:
 * its bytes are dropped as they arrive, keeping only the first few KiB of its `data` payload, and
 * where it ends a small stand-in event takes its place (see oversized.ts) or nothing at all.
 *
 * Memory stays within the cap plus the head, whatever the input, and every byte is looked at a
 * bounded number of times: lines are found with indexOf from the current position (cached per
 * chunk), never by rescanning what was already buffered.
 */
import { STAND_IN_HEAD_BYTES, judgeHead } from "./oversized.ts";

export interface CappedSseOptions {
  /**
   * Sent in place of an over-cap event whose head proves it is a response. The stream answering a
   * POST carries the answer to the request in it, so without a replacement that call would wait
   * forever; once per stream, since a POST holds one request.
   */
  replaceResponse?: unknown;
}

/** SSE framing (`data: `, line ends, an `id:` line) on top of a message: within the cap, a message is delivered whole. */
export const SSE_FRAMING_ALLOWANCE = 4096;

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
/** Field values kept for the stand-in (`id:`, `event:`); longer ones are left out. */
const SMALL_FIELD_BYTES = 256;

/** Where the current line is: in its field name, just after the colon, or in the value. */
const Field = { Name: 0, ValueStart: 1, Value: 2 } as const;
type FieldState = (typeof Field)[keyof typeof Field];
type FieldKind = "data" | "id" | "event" | "other";

const LF_BYTE = Uint8Array.of(LF);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class SseCapFilter {
  private readonly max: number;
  private replacement: unknown;

  // The current event.
  private parts: Uint8Array[] = [];
  private partsBytes = 0;
  private eventBytes = 0;
  private discarding = false;
  private readonly head = new Uint8Array(STAND_IN_HEAD_BYTES);
  private headLength = 0;
  private dataLines = 0;
  private id: number[] | null = null;
  private eventType: number[] | null = null;

  // The current line.
  private lineLength = 0;
  private field: FieldState = Field.Name;
  private kind: FieldKind = "other";
  private name: number[] = [];
  /** The previous chunk ended with a CR; an LF starting this one belongs to that line end. */
  private afterCr = false;
  /**
   * What that CR ended: a line inside the current event (the LF counts toward it), an event passed
   * on (the LF follows it out), or an event replaced (the LF goes with the rest of it).
   */
  private crEnded: "line" | "passed" | "replaced" = "line";

  constructor(maxEventBytes: number, options: CappedSseOptions = {}) {
    this.max = Math.max(1, Math.floor(maxEventBytes));
    this.replacement = options.replaceResponse;
  }

  /** Bytes of an unfinished event held back (always ≤ the cap). */
  get bufferedBytes(): number {
    return this.partsBytes;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    const n = chunk.length;
    if (n === 0) return out;
    let pos = 0;
    // Complete events in this chunk not yet handed on: [rangeStart, rangeEnd).
    let rangeStart = -1;
    let rangeEnd = -1;
    if (this.afterCr && chunk[0] === LF) {
      pos = 1;
      if (this.crEnded === "line") this.eventBytes++;
      else if (this.crEnded === "passed") [rangeStart, rangeEnd] = [0, 1];
    }
    this.afterCr = false;
    let eventStart = pos > 0 && this.crEnded !== "line" ? pos : 0;
    let nextLf = -1;
    let nextCr = -1;
    while (pos < n) {
      if (nextLf < pos) nextLf = indexOr(chunk, LF, pos, n);
      if (nextCr < pos) nextCr = indexOr(chunk, CR, pos, n);
      const t = Math.min(nextLf, nextCr);
      this.lineContent(chunk, pos, t);
      if (t === n) {
        this.eventBytes += n - pos;
        this.checkCap();
        break;
      }
      let end = t + 1;
      if (chunk[t] === CR) {
        if (end < n && chunk[end] === LF) end++;
        else if (end === n) {
          this.afterCr = true;
          this.crEnded = "line";
        }
      }
      this.eventBytes += end - pos;
      pos = end;
      this.checkCap();
      if (this.lineLength > 0) {
        this.endLine();
        continue;
      }
      // A blank line: the event is complete.
      if (this.discarding) {
        if (rangeStart >= 0) out.push(chunk.subarray(rangeStart, rangeEnd));
        rangeStart = -1;
        const standIn = this.standIn();
        if (standIn !== null) out.push(standIn);
        if (this.afterCr) this.crEnded = "replaced";
      } else {
        if (this.afterCr) this.crEnded = "passed";
        if (this.parts.length > 0) {
          if (rangeStart >= 0) out.push(chunk.subarray(rangeStart, rangeEnd));
          out.push(...this.parts);
          rangeStart = 0;
        } else if (rangeStart < 0) {
          rangeStart = eventStart;
        }
        rangeEnd = pos;
      }
      this.resetEvent();
      eventStart = pos;
    }
    if (rangeStart >= 0) out.push(chunk.subarray(rangeStart, rangeEnd));
    if (!this.discarding && eventStart < n) {
      // Copied, not viewed: a view would pin the whole chunk's buffer in memory.
      this.parts.push(chunk.slice(eventStart, n));
      this.partsBytes += n - eventStart;
    }
    return out;
  }

  /** At the end of the body. An unfinished event is passed on as it was (a reader drops it anyway). */
  end(): Uint8Array[] {
    const out = this.discarding ? [] : this.parts;
    this.resetEvent();
    this.afterCr = false;
    return out;
  }

  private checkCap(): void {
    if (this.discarding || this.eventBytes <= this.max) return;
    this.discarding = true;
    this.parts = [];
    this.partsBytes = 0;
  }

  private resetEvent(): void {
    this.parts = [];
    this.partsBytes = 0;
    this.eventBytes = 0;
    this.discarding = false;
    this.headLength = 0;
    this.dataLines = 0;
    this.id = null;
    this.eventType = null;
    this.resetLine();
  }

  private resetLine(): void {
    this.lineLength = 0;
    this.field = Field.Name;
    this.kind = "other";
    this.name.length = 0;
  }

  /** Follows the field structure of one line's bytes [from, to), collecting what a stand-in needs. */
  private lineContent(chunk: Uint8Array, from: number, to: number): void {
    if (from >= to) return;
    this.lineLength += to - from;
    let i = from;
    if (this.field === Field.Name) {
      // Only short names matter ("data", "id", "event"); a longer one is some other field.
      while (i < to && this.field === Field.Name) {
        const b = chunk[i++]!;
        if (b === COLON) this.startValue(this.nameKind());
        else if (this.name.length < 6) this.name.push(b);
        else this.field = Field.Value; // kind stays "other": the rest of the line is ignored
      }
    }
    if (i < to && this.field === Field.ValueStart) {
      if (chunk[i] === SPACE) i++;
      this.field = Field.Value;
    }
    if (i < to) this.value(chunk, i, to);
  }

  /** Compared byte by byte: this runs for every line of every event. */
  private nameKind(): FieldKind {
    const n = this.name;
    if (n.length === 4 && n[0] === 0x64 && n[1] === 0x61 && n[2] === 0x74 && n[3] === 0x61) return "data";
    if (n.length === 2 && n[0] === 0x69 && n[1] === 0x64) return "id";
    if (n.length === 5 && n[0] === 0x65 && n[1] === 0x76 && n[2] === 0x65 && n[3] === 0x6e && n[4] === 0x74) return "event";
    return "other";
  }

  private startValue(kind: FieldKind): void {
    this.field = Field.ValueStart;
    this.kind = kind;
    // Data lines join with a line feed between them, as an SSE reader joins them.
    if (kind === "data" && this.dataLines++ > 0) this.appendHead(LF_BYTE, 0, 1);
    if (kind === "id") this.id = [];
    if (kind === "event") this.eventType = [];
  }

  private value(chunk: Uint8Array, from: number, to: number): void {
    if (this.kind === "data") this.appendHead(chunk, from, to);
    else if (this.kind === "id") this.id = appendSmall(this.id, chunk.subarray(from, to));
    else if (this.kind === "event") this.eventType = appendSmall(this.eventType, chunk.subarray(from, to));
  }

  private endLine(): void {
    // A line that is only a field name ("data") is that field with an empty value.
    if (this.field === Field.Name) this.startValue(this.nameKind());
    this.resetLine();
  }

  private appendHead(chunk: Uint8Array, from: number, to: number): void {
    const n = Math.min(to - from, this.head.length - this.headLength);
    if (n <= 0) return;
    this.head.set(chunk.subarray(from, from + n), this.headLength);
    this.headLength += n;
  }

  /** The bytes that replace the over-cap event just ended, or null to drop it silently. */
  private standIn(): Uint8Array | null {
    if (this.dataLines === 0) return null; // an SSE reader dispatches nothing without data
    // A typed event other than "message" is skipped by the reader, so it needs no stand-in.
    const type = this.eventType === null ? "" : text(this.eventType);
    if (type !== "" && type !== "message") return null;
    const verdict = judgeHead(this.head.subarray(0, this.headLength));
    let message: unknown = null;
    if (verdict.kind === "event") message = verdict.standIn;
    else if (verdict.kind === "response" && this.replacement !== undefined) {
      message = this.replacement;
      this.replacement = undefined;
    }
    if (message === null) return null;
    // Keeping the event id keeps a resumed stream from replaying the same over-cap event.
    const id = this.id !== null && !this.id.includes(0) ? `id: ${text(this.id)}\n` : "";
    return encoder.encode(`${id}data: ${JSON.stringify(message)}\n\n`);
  }
}

/** Field values past the bound are dropped entirely (null), not cut: a cut id would be wrong. */
function appendSmall(current: number[] | null, bytes: Uint8Array): number[] | null {
  if (current === null || current.length + bytes.length > SMALL_FIELD_BYTES) return null;
  for (const b of bytes) current.push(b);
  return current;
}

function text(bytes: number[]): string {
  return decoder.decode(Uint8Array.from(bytes));
}

function indexOr(chunk: Uint8Array, byte: number, from: number, fallback: number): number {
  const i = chunk.indexOf(byte, from);
  return i < 0 ? fallback : i;
}

/**
 * The filter as a stream stage: `body.pipeThrough(cappedSseStream(cap))`. `bufferedBytes` reports
 * what the stage holds back right now (for tests and diagnostics).
 */
export function cappedSseStream(
  maxEventBytes: number,
  options: CappedSseOptions = {},
): TransformStream<Uint8Array, Uint8Array> & { readonly bufferedBytes: number } {
  const filter = new SseCapFilter(maxEventBytes, options);
  const stream = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      for (const piece of filter.push(chunk)) controller.enqueue(piece);
    },
    flush(controller) {
      for (const piece of filter.end()) controller.enqueue(piece);
    },
  });
  Object.defineProperty(stream, "bufferedBytes", { get: () => filter.bufferedBytes });
  return stream as TransformStream<Uint8Array, Uint8Array> & { readonly bufferedBytes: number };
}
