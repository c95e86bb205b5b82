/**
 * Server stdout frames → JSON-RPC messages for the SDK (pure: no I/O, no clock).
 *
 * A stdio server's stdout is shared with whatever it (or a library it loads) prints, so a line that
 * is not a JSON-RPC message is skipped, not fatal. An over-cap line is never parsed: when it answers
 * a request we sent, that request gets a JSON-RPC error instead, so the one call fails and the
 * connection survives (serve.md §6 item 8).
 */
import { type JSONRPCMessage, JSONRPCMessageSchema, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { standInFromHead } from "./caps/oversized.ts";
import { asEventsNotification } from "./events-notification-shape.ts";
import { preview } from "../shared/log.ts";
import { recoverIdFromHead, recoverIdFromTail } from "../shared/ndjson/message-head.ts";
import { type Frame, joinParts } from "../shared/ndjson/line-splitter.ts";

/** JSON-RPC code of the SDK's own transport-level failures (ErrorCode.ConnectionClosed). */
export const OVERSIZED_RESPONSE_CODE = -32000;

export type Decoded =
  | { kind: "message"; message: JSONRPCMessage }
  /**
   * An over-cap message in a small form: a response becomes an error response for the same id, an
   * events notification a `$oversized` stand-in (the push loop reports the gap).
   */
  | { kind: "replaced"; message: JSONRPCMessage; note: string }
  | { kind: "skipped"; reason: "not_json" | "not_jsonrpc" | "oversized"; note: string }
  /** A blank line: nothing to deliver and nothing worth a note. */
  | { kind: "blank" };

/**
 * Ids of requests we sent that are still unanswered. An over-cap line is only taken for a response
 * when its id is one of these: a server's own request may carry the same id value, and answering
 * the wrong call would be worse than dropping the line.
 */
export class OutstandingRequests {
  private readonly ids = new Set<string>();

  add(id: RequestId): void {
    this.ids.add(key(id));
  }

  settle(id: RequestId): void {
    this.ids.delete(key(id));
  }

  has(id: RequestId): boolean {
    return this.ids.has(key(id));
  }

  get size(): number {
    return this.ids.size;
  }

  clear(): void {
    this.ids.clear();
  }

  /** Keeps the set in step with what we send: requests open an entry, cancellations close it. */
  noteOutgoing(message: JSONRPCMessage): void {
    if ("method" in message && "id" in message) this.add(message.id);
    else if ("method" in message && message.method === "notifications/cancelled") {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") this.settle(requestId);
    }
  }

  /** A response settles its request, whatever its outcome. */
  noteIncoming(message: JSONRPCMessage): void {
    if (!("method" in message) && "id" in message && message.id !== undefined) this.settle(message.id);
  }
}

/** String and number ids are distinct in JSON-RPC (1 ≠ "1"), so the key keeps the JSON type. */
const key = (id: RequestId) => JSON.stringify(id);

export function decodeServerFrame(frame: Frame, maxMessageBytes: number, outstanding: OutstandingRequests): Decoded {
  if (frame.kind === "oversized") return decodeOversized(frame, maxMessageBytes, outstanding);
  const line = frame.kind === "parts" ? joinParts(frame) : frame;
  let bytes = line.bytes;
  // CRLF-writing servers exist (Windows-built tools); the CR is framing, not content.
  if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
  if (isBlank(bytes)) return { kind: "blank" };
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  } catch {
    return { kind: "skipped", reason: "not_json", note: `skipped a non-JSON line on stdout: "${preview(bytes)}"` };
  }
  // A push burst's lines: decided by a light check that accepts only what the schema accepts.
  const event = asEventsNotification(value);
  if (event !== null) return { kind: "message", message: event };
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) {
    // No content in the note: a malformed message may still carry tool arguments or results.
    return { kind: "skipped", reason: "not_jsonrpc", note: `skipped a ${bytes.length}-byte JSON line that is not a JSON-RPC 2.0 message` };
  }
  return { kind: "message", message: parsed.data };
}

function decodeOversized(frame: Extract<Frame, { kind: "oversized" }>, maxMessageBytes: number, outstanding: OutstandingRequests): Decoded {
  const id = recoverIdFromTail(frame.tail) ?? recoverIdFromHead(frame.head);
  const what = `a ${frame.length}-byte message (cap ${maxMessageBytes} bytes)`;
  if (id === null || !outstanding.has(id)) {
    const standIn = standInFromHead(frame.head);
    if (standIn !== null) {
      return { kind: "replaced", message: standIn, note: `${what} may be an event notification: delivering a stand-in in its place` };
    }
    return { kind: "skipped", reason: "oversized", note: `dropped ${what}: it answers no request in flight` };
  }
  const message: JSONRPCMessage = {
    jsonrpc: "2.0",
    id,
    error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${maxMessageBytes} bytes` },
  };
  return { kind: "replaced", message, note: `${what} answered request ${JSON.stringify(id)}: failing that call` };
}

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}
