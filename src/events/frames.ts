/**
 * The frames and answers of the MCP Events client (serve.md §4; `mcp_event` and `mcp_event_status`
 * per the events design notes §6.1–6.2; `mcp_events_list` data per notes §2.2), as types and small
 * builders. Field names and key order are the wire format: serve's frame union embeds these types
 * (serve/protocol/frames.ts) and the golden frame tests pin them.
 *
 * The builders leave `seq` out: the session numbers every frame when it emits it.
 */
import type { ModelStatusFrame } from "./model-status.ts";
import type { EventAction, EventDelivery } from "./types.ts";

/** One occurrence, verbatim (push and webhook occurrences carry their `cursor`). */
export interface McpEventOccurrence {
  eventId: string;
  name: string;
  timestamp?: string;
  data?: unknown;
  cursor?: string;
  [key: string]: unknown;
}

export interface McpEventFrame {
  type: "mcp_event";
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  delivery: EventDelivery;
  action: EventAction;
  event: McpEventOccurrence;
}

/** Subscription state in `mcp_events_list` and in a `subscribed` status frame (notes §2.2). */
export type SubscriptionState = "starting" | "active" | "retrying" | "terminated" | "stopped";

export interface SubscriptionStatus {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  delivery: EventDelivery;
  action: EventAction;
  state: SubscriptionState;
  cursor: string | null;
  delivered: number;
  duplicates: number;
  refreshes: number;
  last_error: string | null;
  refresh_before: string | null;
  subscription_id: string | null;
  delivery_status: unknown;
}

/** The subscription a status frame is about (the key: server, name, canonical arguments). */
export interface SubscriptionKey {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * A server's JSON-RPC error as a `terminated` frame carries it. `message` and every string inside
 * `data` were scrubbed of secrets where they entered (wire/server-events.ts, shared/scrub.ts).
 */
export interface JsonRpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** The kind-specific fields of an `mcp_event_status` frame (notes §6.2). */
export type McpEventStatusDetail =
  | { kind: "subscribed"; subscription: SubscriptionStatus }
  | { kind: "error"; error: string; retry_in_ms?: number }
  | { kind: "refused"; error: string; retry_in_ms: number }
  | { kind: "terminated"; error: JsonRpcErrorBody }
  | { kind: "gap"; cursor: string | null; reason: string; event_id: string | null; possibly_not_an_event?: boolean; problem?: string }
  | { kind: "resubscribed" }
  | { kind: "dropped"; event: McpEventOccurrence; error: string }
  | { kind: "delivery_status"; delivery_status: unknown };

export type McpEventStatusKind = McpEventStatusDetail["kind"];

export type McpEventStatusFrame = { type: "mcp_event_status" } & SubscriptionKey & McpEventStatusDetail;

/** The frames the events client emits into a session. */
export type EventsFrame = McpEventFrame | McpEventStatusFrame | ModelStatusFrame;

// ---- `response` data of the `mcp_events_*` commands ----

export interface UnestablishedSubscription extends SubscriptionKey {
  state: "starting" | "retrying" | "refused";
  last_error: string | null;
}

export type AvailableEvents =
  | { server: string; supported: true; events: unknown[] }
  | { server: string; supported: false; error: string };

/** `mcp_events_list` data (notes §2.2). */
export interface McpEventsListData {
  spec_commit: string;
  webhook: boolean;
  owns_configured: boolean;
  subscriptions: SubscriptionStatus[];
  unestablished: UnestablishedSubscription[];
  available: AvailableEvents[];
  pending: number;
}

/** `mcp_events_unsubscribe` data. */
export interface McpEventsUnsubscribeData {
  removed: boolean;
}

// ---- builders (no `seq`) ----

export function mcpEventFrame(f: Omit<McpEventFrame, "type">): McpEventFrame {
  return {
    type: "mcp_event",
    server: f.server,
    name: f.name,
    arguments: f.arguments,
    delivery: f.delivery,
    action: f.action,
    event: f.event,
  };
}

export function mcpEventStatusFrame(key: SubscriptionKey, detail: McpEventStatusDetail): McpEventStatusFrame {
  const { kind, ...extra } = detail;
  return { type: "mcp_event_status", kind, server: key.server, name: key.name, arguments: key.arguments, ...extra } as McpEventStatusFrame;
}
