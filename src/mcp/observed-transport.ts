/**
 * A Transport decorator that sits between an SDK Client and the transport that talks to a server.
 *
 * - It keeps the **raw** `initialize` result. The SDK 1.x Client parses it with a schema that strips
 *   keys it does not know, so `getServerCapabilities()` loses a top-level `events` capability
 *   (serve.md §6 item 1); the raw result is what events discovery reads.
 * - Optionally it holds a per-message cap (serve.md §6 item 8) for transports that do not hold one
 *   themselves (streamable HTTP): an incoming message over the cap is never handed to the Client; if
 *   it answers a request in flight, that request gets a JSON-RPC error instead (the one call fails,
 *   the connection survives), otherwise it is dropped with a note.
 * - Over streamable HTTP, vigil reads the answer to an `events/stream` POST itself and hands its
 *   messages in through `receiveDecoded` (events-stream-reader.ts), past the inner transport.
 */
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema, type MessageExtraInfo, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { standInFromMessage } from "./caps/oversized.ts";
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { isStreamNotificationShape } from "./events-notification-shape.ts";
import { OVERSIZED_RESPONSE_CODE, OutstandingRequests } from "./stdio-framing.ts";
import { ReadGate } from "./read-gate.ts";

export interface ObservedTransportOptions {
  /** The configured server name, for notes. */
  name: string;
  /** Enforce this cap on incoming messages (serialized UTF-8 size); omit when the inner transport holds one. */
  maxMessageBytes?: number;
  /** The inner transport's read gate (backpressure, read-gate.ts); omitted: a gate nothing reads. */
  readGate?: ReadGate;
}

export class ObservedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  readonly inner: Transport;
  private readonly name: string;
  private readonly maxMessageBytes: number | undefined;
  private readonly outstanding = new OutstandingRequests();
  private initializeId: RequestId | undefined;
  private rawInitialize: Record<string, unknown> | undefined;
  private oversized = 0;
  private readonly outgoingListeners = new Set<(message: JSONRPCMessage) => void>();
  private readonly incomingListeners = new Set<(message: JSONRPCMessage) => void>();
  private claimer: ((message: JSONRPCMessage) => boolean) | null = null;
  /** Push streams hold it while full: the inner transport stops reading (read-gate.ts). */
  readonly readGate: ReadGate;

  constructor(inner: Transport, options: ObservedTransportOptions) {
    this.inner = inner;
    this.name = options.name;
    this.maxMessageBytes = options.maxMessageBytes;
    this.readGate = options.readGate ?? new ReadGate();
    inner.onmessage = (message, extra) => this.incoming(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.onclose?.();
  }

  /** The server's `initialize` result exactly as received (a deep copy), once it arrived. */
  get rawInitializeResult(): Record<string, unknown> | undefined {
    return this.rawInitialize === undefined ? undefined : structuredClone(this.rawInitialize);
  }

  /** How many over-cap messages were replaced or dropped. */
  get oversizedCount(): number {
    return this.oversized;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  /**
   * Sees every outgoing message before it is sent. The events client uses it to learn the JSON-RPC
   * id the SDK gave an `events/stream` request: that id is the stream's routing handle.
   */
  onOutgoing(listener: (message: JSONRPCMessage) => void): () => void {
    this.outgoingListeners.add(listener);
    return () => void this.outgoingListeners.delete(listener);
  }

  /**
   * Sees every incoming message as the Client gets it (after the cap). The server pool uses it to
   * hear `notifications/tools/list_changed` and `notifications/events/list_changed`, whichever
   * handlers the Client has.
   */
  onIncoming(listener: (message: JSONRPCMessage) => void): () => void {
    this.incomingListeners.add(listener);
    return () => void this.incomingListeners.delete(listener);
  }

  /**
   * Takes incoming messages before the Client: a message `claim` returns true for is consumed
   * there, synchronously, and never reaches the Client. The events client claims its stream
   * notifications, so each is routed as it is read (the read gate sees a full stream at once) and
   * skips the SDK's per-message schema checks and microtask. One claimer; null removes it.
   */
  setClaimer(claim: ((message: JSONRPCMessage) => boolean) | null): void {
    this.claimer = claim;
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    for (const listener of this.outgoingListeners) listener(message);
    if ("method" in message && message.method === "initialize" && "id" in message) this.initializeId = message.id;
    this.outstanding.noteOutgoing(message);
    try {
      await this.inner.send(message, options);
    } catch (e) {
      // No answer will come for a request that never left.
      if ("method" in message && "id" in message) this.outstanding.settle(message.id);
      throw e;
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /**
   * A message vigil's own reader decoded from an `events/stream` response (events-stream-reader.ts),
   * which the inner transport never sees. It takes the path the inner transport's `onmessage`
   * takes, less the work the reader made redundant:
   *
   * - a value shaped like a stream notification (isStreamNotificationShape) is offered to the
   *   claimer without the SDK's schema: the events client decides on its fields itself. Anything
   *   else, and a notification the claimer declines, is held to the SDK's `JSONRPCMessageSchema`
   *   as the SDK would have held it: one it refuses is reported through `onerror` and not delivered;
   * - `surelyWithinCap`: the reader knows from the size of the message's SSE event that it cannot
   *   be over the cap, so it is not serialized again to be measured.
   *
   * Returns whether the message was delivered.
   */
  receiveDecoded(value: unknown, surelyWithinCap: boolean): boolean {
    const shaped = this.claimer !== null && isStreamNotificationShape(value);
    if (shaped) {
      const message = this.capped(value, surelyWithinCap);
      if (message === null) return false;
      if (this.claimedUnchecked(message)) return true;
      if (message !== value) {
        this.deliver(message); // a stand-in: valid as built
        return true;
      }
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      this.onerror?.(parsed.error);
      return false;
    }
    const message = shaped ? (parsed.data as JSONRPCMessage) : this.capped(parsed.data as JSONRPCMessage, surelyWithinCap);
    if (message === null) return false;
    this.deliver(message);
    return true;
  }

  private incoming(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const delivered = this.capped(message, false);
    if (delivered !== null) this.deliver(delivered, extra);
  }

  /** The message as it may be handed on under the cap: itself, its stand-in or error, or null (dropped). */
  private capped(message: JSONRPCMessage, surelyWithinCap: boolean): JSONRPCMessage | null {
    if (this.maxMessageBytes === undefined || surelyWithinCap) return message;
    const size = serializedBytes(message);
    if (size <= this.maxMessageBytes) return message;
    this.oversized++;
    const id = isResponse(message) ? message.id : undefined;
    if (id === undefined || !this.outstanding.has(id)) {
      // An event too large to hand over still reaches the push loop, as a stand-in (a gap).
      const standIn = standInFromMessage(message);
      if (standIn === null) {
        this.note(`dropped a ${size}-byte message (cap ${this.maxMessageBytes} bytes): it answers no request in flight`);
        return null;
      }
      this.note(`a ${size}-byte event notification (cap ${this.maxMessageBytes} bytes): delivering a stand-in in its place`);
      return standIn;
    }
    this.note(`a ${size}-byte message (cap ${this.maxMessageBytes} bytes) answered request ${JSON.stringify(id)}: failing that call`);
    return { jsonrpc: "2.0", id, error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${this.maxMessageBytes} bytes` } };
  }

  private deliver(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    if (isResponse(message)) {
      if (this.initializeId !== undefined && message.id === this.initializeId && "result" in message) {
        this.rawInitialize = structuredClone(message.result as Record<string, unknown>);
        this.initializeId = undefined;
      }
      this.outstanding.settle(message.id);
    }
    for (const listener of this.incomingListeners) listener(message);
    try {
      if (this.claimer?.(message) === true) return;
      this.onmessage?.(message, extra);
    } catch (e) {
      this.handlerFailed(e);
    }
  }

  /**
   * The claimer's look at a notification no schema checked: taken, the listeners hear of it as of
   * any message; declined, nobody has seen it yet (it is checked first).
   */
  private claimedUnchecked(message: JSONRPCMessage): boolean {
    try {
      if (this.claimer?.(message) !== true) return false;
    } catch (e) {
      this.handlerFailed(e);
      return true;
    }
    for (const listener of this.incomingListeners) listener(message);
    return true;
  }

  private handlerFailed(e: unknown): void {
    this.onerror?.(new Error(`MCP server ${JSON.stringify(this.name)}: message handler failed: ${errorMessage(e)}`));
  }

  private note(text: string): void {
    const line = `MCP server ${JSON.stringify(this.name)}: ${text}`;
    logLine(line, { level: "warn", server: this.name, code: "message_oversized" });
    this.onerror?.(new Error(line));
  }
}

type Response = JSONRPCMessage & { id: RequestId };

function isResponse(message: JSONRPCMessage): message is Response {
  return !("method" in message) && "id" in message && message.id !== undefined && message.id !== null;
}

/**
 * UTF-8 size of the message as JSON: what it took (give or take whitespace) on the wire. A message
 * nested too deep for JSON.stringify (RangeError) counts as within the cap: its bytes were already
 * bounded by the transport's framing, and its consumer refuses the nesting (events:
 * rules/occurrence.ts) — failing here would fail its request on every retry, for good.
 */
function serializedBytes(message: JSONRPCMessage): number {
  try {
    return Buffer.byteLength(JSON.stringify(message), "utf8");
  } catch {
    return 0;
  }
}
