/**
 * Types shared by the MCP Events client modules (serve.md §6): what a server sent, what a
 * subscription was asked with, and what the durable pending queue holds. Kept free of behaviour
 * (bar one type guard) so every module can import it without pulling in the others.
 */

import type { EVENT_ACTIONS, EVENT_DELIVERIES } from "./config.ts";

export type EventDelivery = (typeof EVENT_DELIVERIES)[number];
export type EventAction = (typeof EVENT_ACTIONS)[number];

/** One occurrence as the server sent it (unknown keys kept). */
export interface EventOccurrence {
  eventId?: string;
  name?: string;
  timestamp?: string;
  data?: unknown;
  cursor?: string | null;
  [k: string]: unknown;
}

/** A notice that events may have been missed (truncated page, gap, resubscribe, oversized). */
export interface GapNotice {
  gap: true;
  cursor: string | null;
  reason: string;
  eventId: string | null;
  possibly_not_an_event?: boolean;
  /** Why an `invalid_event` or `oversized` occurrence was skipped (one line, never the value). */
  problem?: string;
}

/** What a runtime subscription was asked with (the mcp_events_subscribe command, minus id/type). */
export interface SubscriptionSpec {
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  delivery?: EventDelivery;
  action: EventAction;
  instructions?: string;
  max_age_ms?: number;
}

/** One pending entry of the durable queue. */
export interface PendingEntry {
  seq: number;
  action: "follow_up" | "steer";
  server: string;
  name: string;
  arguments: Record<string, unknown>;
  instructions?: string;
  event: EventOccurrence | GapNotice;
}

export function isGap(e: EventOccurrence | GapNotice): e is GapNotice {
  return (e as GapNotice).gap === true;
}
