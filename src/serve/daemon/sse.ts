/**
 * One SSE subscriber of a session's frames (serve.md §4): `GET /v1/sessions/<name>/frames[?since=N]`.
 *
 *   event: frame
 *   id: <seq>
 *   data: <frame JSON, with seq and time>
 *
 * - With `since`, stored frames after N are replayed from the transcript page by page, as the
 *   client reads them; live frames arriving meanwhile wait in the same bounded buffer and are sent
 *   after the replay, without duplicates (only seq > the last replayed). Without `since`, the
 *   stream starts with the next frame.
 * - A comment line is sent at once (so the client knows it is attached) and every 15 s.
 * - Slow clients: the stream is pulled (the socket asks for more when it drained); a client whose
 *   unsent bytes exceed `maxBufferBytes` is dropped, so it never holds up the session or the other
 *   clients, and memory stays bounded per client. Dropped means the connection ends: the stream is
 *   errored, which makes Bun.serve close the socket. A plain `controller.close()` is not enough —
 *   with the client's receive window full, Bun then holds the unsent tail and the response stalls
 *   mid-frame with no end (issue 11 item 6), so the client would never know to reconnect.
 */
import { logLine } from "../../shared/log.ts";
import type { Session } from "../session/session.ts";
import type { TranscriptRecord } from "../state/transcript.ts";

export const HEARTBEAT_MS = 15_000;
export const DEFAULT_CLIENT_BUFFER_BYTES = 4 * 1024 * 1024;
const REPLAY_PAGE = 256;
/** A replay page stays well under the client limit, so live frames held meanwhile fit beside it. */
const REPLAY_PAGE_BYTES = 1024 * 1024;

export interface SseOptions {
  since: number | null;
  maxBufferBytes?: number;
  heartbeatMs?: number;
  /** Called once when the stream ends, whichever side ended it. */
  onClose(): void;
}

const encoder = new TextEncoder();
const event = (seq: number, json: string) => `event: frame\nid: ${seq}\ndata: ${json}\n\n`;

/**
 * One live frame's SSE bytes, shared by every client of the session: the frame log hands each
 * listener the same `json` string for one frame, so the last frame's encoding is kept and reused
 * (the bytes are never written to, only queued and sent). `===` on the same string is a pointer
 * check; an equal text with the same seq encodes to the same bytes anyway.
 */
let lastFrame: { seq: number; json: string; bytes: Uint8Array } | null = null;

export function frameBytes(seq: number, json: string): Uint8Array {
  const last = lastFrame;
  if (last !== null && last.seq === seq && last.json === json) return last.bytes;
  const bytes = encoder.encode(event(seq, json));
  lastFrame = { seq, json, bytes };
  return bytes;
}

export class SseStream {
  readonly stream: ReadableStream<Uint8Array>;
  private queue: Uint8Array[] = [];
  private queued = 0;
  /**
   * The stream's pull found nothing to send: the next bytes are handed to it at once, by the push
   * that queues them (no promise parked per pull, no wake-up hop per frame). Only ever true with an
   * empty queue, outside a replay and before the end.
   */
  private wanted = false;
  private closed = false;
  /** Whether a read waits for the next bytes (`wanted`): what a test waits on before it sends them. */
  get pullWaiting(): boolean {
    return this.wanted;
  }
  /** `endAfterSent`: no new frames; the stream ends once what is queued is sent. */
  private ending = false;
  private replaying: boolean;
  private cursor: number;
  private held: { seq: number; json: string }[] = [];
  private readonly unsubscribe: () => void;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private readonly limit: number;
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;

  constructor(
    private readonly session: Session,
    private readonly o: SseOptions,
  ) {
    this.limit = o.maxBufferBytes ?? DEFAULT_CLIENT_BUFFER_BYTES;
    this.replaying = o.since !== null;
    this.cursor = o.since ?? session.lastSeq;
    this.unsubscribe = session.subscribe((record, json) => this.live(record, json));
    this.heartbeat = setInterval(() => this.push(": heartbeat\n\n"), o.heartbeatMs ?? HEARTBEAT_MS);
    this.push(`: attached to session ${session.name}\n\n`);
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: (controller) => this.pull(controller),
        cancel: () => this.close(),
      },
      { highWaterMark: 0 },
    );
  }

  /** Ends the stream (server shutdown, session gone, or the client left). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.heartbeat);
    this.queue = [];
    this.queued = 0;
    this.o.onClose();
    if (this.wanted) {
      this.wanted = false;
      this.closeController();
    }
  }

  /** Ends the stream once the frames already queued are sent (the session ended, session-faults.ts). */
  endAfterSent(): void {
    if (this.closed || this.ending) return;
    this.ending = true;
    // Nothing is queued when a pull waits: the stream ends now.
    if (this.wanted) this.close();
  }

  private live(record: TranscriptRecord, json: string): void {
    if (this.ending) return;
    if (this.replaying) {
      if (this.behind()) return;
      this.held.push({ seq: record.seq, json });
      this.queued += json.length;
      return;
    }
    if (record.seq <= this.cursor) return;
    this.cursor = record.seq;
    this.pushBytes(frameBytes(record.seq, json));
  }

  private push(text: string): void {
    this.pushBytes(encoder.encode(text));
  }

  private pushBytes(bytes: Uint8Array): void {
    if (this.closed || this.behind()) return;
    this.queue.push(bytes);
    this.queued += bytes.byteLength;
    if (this.wanted && this.controller !== null) {
      this.wanted = false;
      try {
        this.send(this.controller);
      } catch {
        this.close(); // the stream is gone (the client left)
      }
    }
  }

  /**
   * Judged before the next frame is queued, so a client that keeps up always gets that frame,
   * however large it is (up to the transcript's record cap); one that is still more than the limit
   * behind is cut off. Per client, memory stays within the limit plus one frame.
   */
  private behind(): boolean {
    if (this.queued <= this.limit) return false;
    this.cutOff();
    return true;
  }

  /** Drops a client that fell too far behind: the connection is closed, not merely the body ended. */
  private cutOff(): void {
    if (this.closed) return;
    logLine(`serve: session ${JSON.stringify(this.session.name)}: an SSE client fell more than ${this.limit} bytes behind and was disconnected`, { level: "warn", session: this.session.name, code: "sse_client_behind" });
    this.wanted = false; // errored below, not closed
    this.close();
    try {
      this.controller?.error(new Error("the client fell too far behind"));
    } catch {
      // the client already went away
    }
  }

  /** The stream wants more: what is queued, else (live, nothing queued) the next push's bytes. */
  private pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> | undefined {
    if (this.queue.length === 0 && !this.closed && !this.ending && !this.replaying) {
      this.wanted = true;
      return undefined;
    }
    return this.drain(controller);
  }

  private async drain(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.closed && this.queue.length === 0) {
      if (this.ending) {
        this.close();
        break;
      }
      if (this.replaying) {
        await this.replayPage();
        continue;
      }
      this.wanted = true;
      return;
    }
    if (this.closed) {
      this.closeController();
      return;
    }
    this.send(controller);
  }

  private closeController(): void {
    try {
      this.controller?.close();
    } catch {
      // already closed by a cancel
    }
  }

  /** Hands everything queued to the stream as one chunk. */
  private send(controller: ReadableStreamDefaultController<Uint8Array>): void {
    const chunks = this.queue;
    this.queue = [];
    this.queued -= chunks.reduce((n, c) => n + c.byteLength, 0);
    controller.enqueue(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  }

  private async replayPage(): Promise<void> {
    let page;
    try {
      page = await this.session.replay(this.cursor, { limit: REPLAY_PAGE, maxBytes: REPLAY_PAGE_BYTES });
    } catch {
      // The transcript went away (session closed): end the stream; the client reconnects with since.
      this.close();
      return;
    }
    for (const record of page.records) {
      this.cursor = record.seq;
      this.push(event(record.seq, JSON.stringify(record)));
    }
    if (page.more && page.records.length > 0) return;
    this.replaying = false;
    const held = this.held;
    this.held = [];
    for (const h of held) {
      this.queued -= h.json.length;
      if (h.seq > this.cursor) {
        this.cursor = h.seq;
        this.push(event(h.seq, h.json));
      }
    }
  }
}
