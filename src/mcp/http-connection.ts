/**
 * The MCP client transport serve uses for streamable-HTTP servers: the SDK's
 * StreamableHTTPClientTransport, decorated (ObservedTransport) so that
 *
 * - the configured headers go with every request (they are secrets: never logged, and scrubbed from
 *   what the server pool reports — see server-pool.ts and shared/scrub.ts);
 * - every incoming message is held to the per-message cap (serve.md §6 item 8, env
 *   `VIGIL_MCP_MAX_MESSAGE_BYTES`, default 32 MiB), measured as its serialized UTF-8 size: an over-cap
 *   answer to a request in flight fails that request with `-32000 response larger than N bytes`,
 *   anything else over the cap is dropped;
 * - a plain JSON answer that announces an over-cap Content-Length is not even read: it is replaced
 *   by the same error for each request of that POST, so memory stays bounded for those. An SSE
 *   body is filtered event by event (`cappedSseStream`): an over-cap event is dropped as it streams
 *   and a small stand-in (an event notification) or an error response (the POST's answer) follows;
 * - the SSE answer to an `events/stream` POST is read by vigil itself (events-stream-reader.ts): the
 *   same cap and stand-ins, the read gate asked before every message (backpressure), one parse per
 *   message and no zod for the stream's own notifications; the SDK's transport gets an empty body;
 * - the supervisor hears when the connection is lost (`onConnectionLost`, serve.md §6 item 10): a
 *   request whose fetch fails (not one vigil aborted), or a 404 to a request that carried
 *   `Mcp-Session-Id` (the server forgot the session: streamable HTTP says to initialize anew).
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { errorMessage } from "../shared/errors.ts";
import { isRecord } from "../shared/guards.ts";
import { SSE_FRAMING_ALLOWANCE, cappedSseStream } from "./caps/sse-cap.ts";
import { type DecodedSink, readEventsStream } from "./events-stream-reader.ts";
import { checkedMaxMessageBytes, envMaxMessageBytes } from "./stdio-config.ts";
import { OVERSIZED_RESPONSE_CODE } from "./stdio-framing.ts";
import { ObservedTransport } from "./observed-transport.ts";
import { ReadGate } from "./read-gate.ts";

export interface HttpConnectionOptions {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** Default: VIGIL_MCP_MAX_MESSAGE_BYTES, else 32 MiB. */
  maxMessageBytes?: number;
  /** For tests: the fetch underneath the cap guard. */
  fetch?: FetchLike;
  /** Told (with a one-line reason) when the connection is lost; see `watchedFetch`. */
  onConnectionLost?: (reason: string) => void;
}

/** Throws VigilError("config_invalid") for a malformed cap; opens nothing until start(). */
export function createHttpTransport(options: HttpConnectionOptions): ObservedTransport {
  const maxMessageBytes = checkedMaxMessageBytes(options.maxMessageBytes ?? envMaxMessageBytes());
  const readGate = new ReadGate();
  // The reader hands messages to the ObservedTransport built around the transport it serves.
  let observed: ObservedTransport | undefined;
  const network = watchedFetch(options.fetch ?? ((url, init) => fetch(url, init)), options.onConnectionLost);
  const inner = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: { ...(options.headers ?? {}) } },
    fetch: cancellableStreams(eventStreamsReadByVigil(network, maxMessageBytes, readGate, () => observed)),
  });
  observed = new ObservedTransport(inner, { name: options.name, maxMessageBytes, readGate });
  return observed;
}

/**
 * A fetch that reads the SSE answer to an `events/stream` POST itself (events-stream-reader.ts),
 * handing its messages to `sink()`, and gives every other response the cap (`capResponse`).
 */
export function eventStreamsReadByVigil(base: FetchLike, maxMessageBytes: number, gate: ReadGate, sink: () => DecodedSink | undefined): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    const message = init?.method === "POST" ? singleMessage(init.body) : null;
    const id = message?.method === "events/stream" ? message.id : undefined;
    const to = sink();
    if ((typeof id !== "string" && typeof id !== "number") || to === undefined || !response.ok || !isEventStream(response)) {
      return capResponse(response, init, maxMessageBytes);
    }
    return readEventsStream(response, { maxMessageBytes, gate, sink: to, requestId: id, signal: init?.signal });
  };
}

/** The media type, as the SDK decides it (the part before any parameters). */
function isEventStream(response: Response): boolean {
  const type = response.headers.get("content-type") ?? "";
  return type.split(";", 1)[0]!.trim().toLowerCase() === "text/event-stream";
}

/**
 * A fetch that tells `lost` when the connection is gone: the request could not be made (refused,
 * reset, DNS) although nobody aborted it, or the server answered 404 to a request that carried
 * `Mcp-Session-Id` (an expired session). The request itself fails as before.
 */
export function watchedFetch(base: FetchLike, lost: ((reason: string) => void) | undefined): FetchLike {
  if (lost === undefined) return base;
  return async (url, init) => {
    let response: Response;
    try {
      response = await base(url, init);
    } catch (e) {
      if (init?.signal?.aborted !== true) lost(`the connection failed: ${errorMessage(e)}`);
      throw e;
    }
    if (response.status === 404 && new Headers(init?.headers).has("mcp-session-id")) {
      lost("the MCP session expired (HTTP 404 to a request with Mcp-Session-Id)");
    }
    return response;
  };
}

/**
 * A fetch that answers an over-cap `application/json` response (by Content-Length) to a POST with
 * JSON-RPC errors for the requests in that POST, without reading the body.
 */
export function cappedFetch(base: FetchLike, maxMessageBytes: number): FetchLike {
  return async (url, init) => capResponse(await base(url, init), init, maxMessageBytes);
}

/** `cappedFetch`'s work on one response. */
async function capResponse(response: Response, init: RequestInit | undefined, maxMessageBytes: number): Promise<Response> {
  if (!response.ok) return response;
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("text/event-stream") && response.body !== null) {
    const ids = init?.method === "POST" ? requestIds(init.body) : [];
    return cappedSseResponse(response, response.body, ids, maxMessageBytes);
  }
  if (init?.method !== "POST") return response;
  const length = Number(response.headers.get("content-length") ?? Number.NaN);
  if (!type.includes("application/json") || !Number.isFinite(length) || length <= maxMessageBytes) return response;
  const ids = requestIds(init.body);
  if (ids.length === 0) return response; // not ours to judge: the message-level cap still applies
  await response.body?.cancel().catch(() => {});
  const errors = ids.map((id) => ({
    jsonrpc: "2.0" as const,
    id,
    error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${maxMessageBytes} bytes` },
  }));
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(errors.length === 1 ? errors[0] : errors), { status: response.status, headers });
}

/** Open `events/stream` POSTs remembered for cancellation (the oldest are forgotten past this). */
const MAX_CANCELLABLE = 10_000;

/**
 * Cancelling an `events/stream` over streamable HTTP means dropping its response (the draft's
 * signal); the SDK only POSTs `notifications/cancelled` and keeps reading the stream. This fetch
 * remembers each `events/stream` POST by request id and aborts it when that cancellation goes out,
 * so a cancelled stream's connection really closes.
 */
export function cancellableStreams(base: FetchLike): FetchLike {
  const open = new Map<string, AbortController>();
  return async (url, init) => {
    const message = init?.method === "POST" ? singleMessage(init.body) : null;
    if (message?.method === "notifications/cancelled") {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      const key = JSON.stringify(requestId);
      open.get(key)?.abort(new Error("events/stream cancelled"));
      open.delete(key);
    }
    if (message?.method !== "events/stream" || (typeof message.id !== "string" && typeof message.id !== "number")) return base(url, init);
    const key = JSON.stringify(message.id);
    const controller = new AbortController();
    open.set(key, controller);
    if (open.size > MAX_CANCELLABLE) open.delete(open.keys().next().value as string);
    const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
    try {
      return await base(url, { ...init, signal });
    } catch (e) {
      open.delete(key);
      throw e;
    }
  };
}

function singleMessage(body: unknown): { method?: unknown; id?: unknown; params?: unknown } | null {
  if (typeof body !== "string" || body.length > 64 * 1024) return null;
  try {
    const parsed = JSON.parse(body) as unknown;
    return isRecord(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * The same response with its event stream filtered, so that no single event is buffered past the
 * cap. A POST carrying one request is answered on this stream, so an over-cap answer becomes the
 * usual error for that request instead of leaving the call waiting.
 */
function cappedSseResponse(response: Response, body: ReadableStream<Uint8Array>, ids: (string | number)[], maxMessageBytes: number): Response {
  const replaceResponse =
    ids.length === 1
      ? { jsonrpc: "2.0", id: ids[0], error: { code: OVERSIZED_RESPONSE_CODE, message: `response larger than ${maxMessageBytes} bytes` } }
      : undefined;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  const filtered = body.pipeThrough(cappedSseStream(maxMessageBytes + SSE_FRAMING_ALLOWANCE, { replaceResponse }));
  return new Response(filtered, { status: response.status, statusText: response.statusText, headers });
}

function requestIds(body: unknown): (string | number)[] {
  if (typeof body !== "string") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  const ids: (string | number)[] = [];
  for (const m of messages) {
    if (typeof m !== "object" || m === null || !("method" in m) || !("id" in m)) continue;
    const id = (m as { id: unknown }).id;
    if (typeof id === "string" || typeof id === "number") ids.push(id);
  }
  return ids;
}
