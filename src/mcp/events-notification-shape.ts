/**
 * A cheap structural check for the one message shape a push burst is made of: an MCP Events
 * notification (`notifications/events/*`) as decoded JSON. stdio-framing.ts runs it before the
 * SDK's JSONRPCMessageSchema (a zod union of four strict objects: the full `safeParse` per line was
 * 12 % of the push-over-stdio profile).
 *
 * It only ever says "valid": exactly when the SDK's schema accepts the value AND the schema's
 * output carries the same content (the schema's copy moves `_meta` first in `params`, nothing
 * else; the events client reads fields, never the order). Every case it is not sure of — another
 * method, an id, an unknown top-level key, `params` not a plain object, a `_meta` with the keys the
 * schema types (`progressToken`, related-task), an own `__proto__` key the schema would drop —
 * returns null, and the caller falls back to the schema. Pure.
 *
 * `isStreamNotificationShape` is the looser check of vigil's own SSE reader for `events/stream`
 * responses (events-stream-reader.ts): only what the events client's claimer routes on.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const EVENTS_PREFIX = "notifications/events/";
const RELATED_TASK = "io.modelcontextprotocol/related-task";

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The value as a JSON-RPC events notification when it surely is one (as the schema decides); else null. */
export function asEventsNotification(value: unknown): JSONRPCMessage | null {
  if (!isPlainObject(value)) return null;
  let keys = 0;
  for (const k in value) {
    if (k !== "jsonrpc" && k !== "method" && k !== "params") return null;
    keys++;
  }
  if (keys < 2 || value.jsonrpc !== "2.0") return null;
  const method = value.method;
  if (typeof method !== "string" || !method.startsWith(EVENTS_PREFIX)) return null;
  if (Object.hasOwn(value, "__proto__")) return null;
  if (!("params" in value)) return value as JSONRPCMessage;
  const params = value.params;
  if (!isPlainObject(params) || Object.hasOwn(params, "__proto__")) return null;
  if ("_meta" in params) {
    const meta = params._meta;
    if (!isPlainObject(meta) || Object.hasOwn(meta, "__proto__") || "progressToken" in meta || RELATED_TASK in meta) return null;
  }
  return value as JSONRPCMessage;
}

/**
 * Whether the value has the shape the events client's claimer routes on: a JSON-RPC 2.0
 * notification (no `id`) whose method is `notifications/events/*` and whose `params`, if any, is a
 * plain object. Nothing else is looked at: what a claimed notification carries is decided later,
 * field by field, on the decoded JSON (events/rules/occurrence.ts). A value the claimer declines is
 * still held to the SDK's schema before the Client sees it (observed-transport.ts). Pure.
 */
export function isStreamNotificationShape(value: unknown): value is JSONRPCMessage {
  if (!isPlainObject(value) || value.jsonrpc !== "2.0" || "id" in value) return false;
  const method = value.method;
  if (typeof method !== "string" || !method.startsWith(EVENTS_PREFIX)) return false;
  return value.params === undefined || isPlainObject(value.params);
}
