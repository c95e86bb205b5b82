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
 */
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { standInFromMessage } from "./caps/oversized.ts";
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
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

  private incoming(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    let delivered = message;
    if (this.maxMessageBytes !== undefined) {
      const size = serializedBytes(message);
      if (size > this.maxMessageBytes) {
        this.oversized++;
        const id = isResponse(message) ? message.id : undefined;
        if (id === undefined || !this.outstanding.has(id)) {
          // An event too large to hand over still reaches the push loop, as a stand-in (a gap).
          const standIn = standInFromMessage(message);
          if (standIn === null) {
            this.note(`dropped a ${size}-byte message (cap ${this.maxMessageBytes} bytes): it answers no request in flight`);
            return;
          }
          this.note(`a ${size}-byte event notification (cap ${this.maxMessageBytes} bytes): delivering a stand-in in its place`);
          delivered = standIn;
        } else {
          this.note(`a ${size}-byte message (cap ${this.maxMessageBytes} bytes) answered request ${JSON.stringify(id)}: failing that call`);
          delivered = {
            jsonrpc: "2.0",
            id,
            error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${this.maxMessageBytes} bytes` },
          };
        }
      }
    }
    if (isResponse(delivered)) {
      if (this.initializeId !== undefined && delivered.id === this.initializeId && "result" in delivered) {
        this.rawInitialize = structuredClone(delivered.result as Record<string, unknown>);
        this.initializeId = undefined;
      }
      this.outstanding.settle(delivered.id);
    }
    for (const listener of this.incomingListeners) listener(delivered);
    try {
      if (this.claimer?.(delivered) === true) return;
      this.onmessage?.(delivered, extra);
    } catch (e) {
      this.onerror?.(new Error(`MCP server ${JSON.stringify(this.name)}: message handler failed: ${errorMessage(e)}`));
    }
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
