/**
 * The MCP client transport serve uses for streamable-HTTP servers: the SDK's
 * StreamableHTTPClientTransport, decorated (ObservedTransport) so that
 *
 * - the configured headers go with every request (they are secrets: never logged, and scrubbed from
 *   the reasons this module's callers report — see `scrubSecrets`);
 * - every incoming message is held to the per-message cap (serve.md §6 item 8, env
 *   `VIGIL_MCP_MAX_MESSAGE_BYTES`, default 32 MiB), measured as its serialized UTF-8 size: an over-cap
 *   answer to a request in flight fails that request with `-32000 response larger than N bytes`,
 *   anything else over the cap is dropped;
 * - a plain JSON answer that announces an over-cap Content-Length is not even read: it is replaced
 *   by the same error for each request of that POST, so memory stays bounded for those. (An SSE
 *   stream's events are only measured after the SDK parsed them.)
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { checkedMaxMessageBytes, envMaxMessageBytes } from "./stdio-config.ts";
import { OVERSIZED_RESPONSE_CODE } from "./stdio-framing.ts";
import { ObservedTransport } from "./observed-transport.ts";

export interface HttpConnectionOptions {
  name: string;
  url: string;
  headers?: Record<string, string>;
  /** Default: VIGIL_MCP_MAX_MESSAGE_BYTES, else 32 MiB. */
  maxMessageBytes?: number;
  /** For tests: the fetch underneath the cap guard. */
  fetch?: FetchLike;
}

/** Throws VigilError("config_invalid") for a malformed cap; opens nothing until start(). */
export function createHttpTransport(options: HttpConnectionOptions): ObservedTransport {
  const maxMessageBytes = checkedMaxMessageBytes(options.maxMessageBytes ?? envMaxMessageBytes());
  const inner = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: { ...(options.headers ?? {}) } },
    fetch: cappedFetch(options.fetch ?? ((url, init) => fetch(url, init)), maxMessageBytes),
  });
  return new ObservedTransport(inner, { name: options.name, maxMessageBytes });
}

/**
 * A fetch that answers an over-cap `application/json` response (by Content-Length) to a POST with
 * JSON-RPC errors for the requests in that POST, without reading the body.
 */
export function cappedFetch(base: FetchLike, maxMessageBytes: number): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (init?.method !== "POST" || !response.ok) return response;
    const type = response.headers.get("content-type") ?? "";
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
  };
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

/**
 * Replaces every occurrence of a secret (header values, the URL when it carries credentials or a
 * `${VAR}` expansion, stdio env values) in a text about to be reported. Values shorter than 4
 * characters are left alone: replacing them would garble the text without protecting anything.
 */
export function scrubSecrets(text: string, secrets: Iterable<string>): string {
  let out = text;
  const sorted = [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  for (const secret of sorted) out = out.split(secret).join("<redacted>");
  return out;
}
