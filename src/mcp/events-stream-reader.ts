/**
 * vigil's own reader for the SSE answer to an `events/stream` POST over streamable HTTP (issue 16).
 *
 * A push stream is a long run of small notifications on one response. Through the SDK's transport
 * each went through a TextDecoderStream, an EventSourceParserStream, `JSON.parse`, zod (the message
 * schema, then again to classify it) and a stream stage per vigil guard, then was serialized once
 * more to be measured against the cap. Here the body is read once, in one loop:
 *
 *   bytes → SseCapFilter (the per-event cap, caps/sse-cap.ts) → TextDecoder → eventsource-parser →
 *   JSON.parse → ObservedTransport.receiveDecoded (claimer, or the SDK's schema, then the Client)
 *
 * and what the SDK's transport gets for this response is a body that carries nothing and ends as
 * this reading ends (closes, or errors with the same error): it parses nothing, sees no SSE id, so
 * it never tries to resume the stream, and it reports a failed read as it always did.
 *
 * Guarantees kept from the stages it replaces:
 * - the cap: no over-cap event is ever held whole (SseCapFilter drops it as it streams and puts
 *   its stand-in, or for the POST's own answer the `-32000 response larger than N bytes` error, in
 *   its place); a message that might still be over the cap once decoded is measured as before;
 * - backpressure: the read gate (read-gate.ts) is asked before every message is handed on and
 *   before every read of the body, so once a push stream is full nothing more is handed on and the
 *   body is not read further: the burst waits in the socket, on the server's side;
 * - order: one loop hands the stream's messages on one at a time, as they were sent;
 * - the end: the answer to the POST's request is the stream's last message. Once it was handed on
 *   (the SDK Client resolves the request from it) nothing after it is, and the body is let go.
 */
import { createParser } from "eventsource-parser";
import { isRecord } from "../shared/guards.ts";
import { SSE_FRAMING_ALLOWANCE, SseCapFilter } from "./caps/sse-cap.ts";
import type { ReadGate } from "./read-gate.ts";
import { OVERSIZED_RESPONSE_CODE } from "./stdio-framing.ts";

/** Where decoded messages go: the connection's ObservedTransport. */
export interface DecodedSink {
  receiveDecoded(value: unknown, surelyWithinCap: boolean): boolean;
  onerror?: (error: Error) => void;
}

export interface EventsStreamReading {
  maxMessageBytes: number;
  gate: ReadGate;
  sink: DecodedSink;
  /** The POST's request id: its answer ends the stream. */
  requestId: string | number;
  /** The request's signal: aborting it ends a reading paused on the gate too. */
  signal?: AbortSignal | null;
}

/**
 * JSON.parse then JSON.stringify (how ObservedTransport measures a message against the cap) makes
 * no JSON text longer than 5.25 times itself: strings, keys and structure never grow (an escape
 * comes back no longer, whitespace goes); a number does, at most from `1e20` (4 bytes) to its 21
 * digits. Text the decoder produced is well-formed, so its UTF-8 is at most 3 bytes per UTF-16 unit.
 * A message whose text is under the cap by this factor cannot be over it decoded: not measured.
 */
const WORST_GROWTH = 6;

/** Whether the message decoded from `data` surely serializes within `max` bytes (no false yes). */
export function surelyWithinCap(data: string, max: number): boolean {
  if (data.length * 3 * WORST_GROWTH <= max) return true;
  return Buffer.byteLength(data, "utf8") * WORST_GROWTH <= max;
}

/**
 * Starts reading `response`'s SSE body (an `events/stream` POST's answer) and returns the response
 * to give the SDK in its place: same status and headers, an empty body that ends with the reading.
 */
export function readEventsStream(response: Response, o: EventsStreamReading): Response {
  const body = response.body;
  if (body === null) return response;
  const reader = new EventsStreamReader(body as ReadableStream<Uint8Array>, o);
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(reader.sdkBody, { status: response.status, statusText: response.statusText, headers });
}

/** What is used of the body's reader (DOM and Node typings of it differ). */
interface ByteReader {
  read(): Promise<{ done: true; value?: Uint8Array } | { done: false; value: Uint8Array }>;
  cancel(reason?: unknown): Promise<void>;
}

class EventsStreamReader {
  readonly sdkBody: ReadableStream<Uint8Array>;
  private sdk!: ReadableStreamDefaultController<Uint8Array>;
  private sdkDone = false;
  private readonly filter: SseCapFilter;
  private readonly decoder = new TextDecoder();
  /** The data of the events parsed from the last chunk, not yet handed on. */
  private readonly pending: string[] = [];
  private readonly raw: ByteReader;

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly o: EventsStreamReading,
  ) {
    const raw = body.getReader();
    this.raw = raw;
    this.filter = new SseCapFilter(o.maxMessageBytes + SSE_FRAMING_ALLOWANCE, {
      replaceResponse: {
        jsonrpc: "2.0",
        id: o.requestId,
        error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${o.maxMessageBytes} bytes` },
      },
    });
    this.sdkBody = new ReadableStream<Uint8Array>({
      start: (controller) => void (this.sdk = controller),
      // The SDK let go of the response (its pipeline failed): nobody wants the rest.
      cancel: (reason) => {
        this.sdkDone = true;
        void raw.cancel(reason).catch(() => {});
      },
    });
    void this.run().then(
      () => this.endSdkBody(null),
      (e: unknown) => {
        void raw.cancel(e).catch(() => {});
        this.endSdkBody(e);
      },
    );
  }

  private async run(): Promise<void> {
    const parser = createParser({
      // As the SDK read them: an event without data carries nothing; a typed one is not a message.
      onEvent: (event) => {
        if (event.data !== "" && (event.event === undefined || event.event === "message")) this.pending.push(event.data);
      },
    });
    for (;;) {
      let paused = this.gateClosed();
      if (paused !== null) await paused;
      const { value, done } = await this.raw.read();
      // An event left unfinished at the end (no blank line after it) is dropped, as an SSE reader drops it.
      if (done) return;
      for (const piece of this.filter.push(value)) parser.feed(this.decoder.decode(piece, { stream: true }));
      for (let i = 0; i < this.pending.length; i++) {
        // Asked again for the first too: another stream of the connection may have filled meanwhile.
        paused = this.gateClosed();
        if (paused !== null) await paused;
        if (this.sdkDone) return; // the SDK let go of the response
        if (this.handOn(this.pending[i]!)) {
          // The answer came: the stream is over, whatever the server writes after it.
          this.pending.length = 0;
          void this.raw.cancel().catch(() => {});
          return;
        }
      }
      this.pending.length = 0;
    }
  }

  /** Hands one event's message on; true when it was the POST's answer, delivered. */
  private handOn(data: string): boolean {
    const sink = this.o.sink;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch (e) {
      sink.onerror?.(e as Error); // as the SDK reports an unparsable event, and reads on
      return false;
    }
    try {
      const delivered = sink.receiveDecoded(value, surelyWithinCap(data, this.o.maxMessageBytes));
      return delivered && isRecord(value) && value.id === this.o.requestId && !("method" in value);
    } catch (e) {
      sink.onerror?.(e instanceof Error ? e : new Error(String(e)));
      return false;
    }
  }

  /** Null while the gate is open (nothing to await); else a promise of its opening, rejected if the request is aborted first. */
  private gateClosed(): Promise<void> | null {
    const paused = this.o.gate.wait();
    if (paused === null) return null;
    const signal = this.o.signal;
    if (signal === undefined || signal === null) return paused;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const aborted = () => reject(signal.reason);
      signal.addEventListener("abort", aborted, { once: true });
      void paused.then(() => {
        signal.removeEventListener("abort", aborted);
        resolve();
      });
    });
  }

  private endSdkBody(error: unknown): void {
    if (this.sdkDone) return;
    this.sdkDone = true;
    try {
      if (error === null) this.sdk.close();
      else this.sdk.error(error);
    } catch {
      // already ended by the SDK's side
    }
  }
}
