/**
 * The `events` list of an MCP server entry (serve.md §2 and §6): which event types to subscribe
 * to, with what arguments, how they are delivered and what the session does with them. Serve's
 * config embeds it in each `mcp_servers[]` entry; the snapshot and runtime subscriptions use the
 * same limits and names.
 */
import * as v from "valibot";
import { canonicalJson } from "../shared/canonical-json.ts";
import type { McpServerConfig } from "../mcp/server-config.ts";
import { isRecord } from "../shared/guards.ts";
import { integer, mapping, text } from "../shared/schema-parts.ts";

export const EVENT_DELIVERIES = ["poll", "push", "webhook"] as const;
export const EVENT_ACTIONS = ["notify", "follow_up", "steer"] as const;

/** Bounds of an `events` list (characters are UTF-16 code units). */
export const EVENTS_CONFIG_LIMITS = {
  eventsPerServer: 256,
  eventNameChars: 256,
  instructionsChars: 4096,
} as const;

const L = EVENTS_CONFIG_LIMITS;

const EventEntry = mapping({
  name: text("an event name", L.eventNameChars, 1),
  /** Part of the subscription key, with the server and name. */
  arguments: v.optional(v.custom<Record<string, unknown>>(isRecord, "expected a mapping"), () => ({})),
  /** Absent: negotiated (webhook > push > poll). */
  delivery: v.optional(v.picklist(EVENT_DELIVERIES, 'expected "poll" | "push" | "webhook"')),
  action: v.optional(v.picklist(EVENT_ACTIONS, 'expected "notify" | "follow_up" | "steer"'), "follow_up"),
  instructions: v.optional(text("a string", L.instructionsChars)),
  max_age_ms: v.optional(integer(1, Number.MAX_SAFE_INTEGER)),
});

/** Events of one server; one entry per subscription key (name + canonical arguments). */
const EventList = v.array(EventEntry, "expected a list of event subscriptions");
export const EventsConfigSchema = v.pipe(
  EventList,
  v.maxLength(L.eventsPerServer, `expected at most ${L.eventsPerServer} entries`),
  v.rawCheck<v.InferOutput<typeof EventList>>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    dataset.value.forEach((entry, i) => {
      const key = `${entry.name}\0${canonicalJson(entry.arguments)}`;
      if (!seen.has(key)) return void seen.add(key);
      addIssue({
        message: "duplicate subscription (same name and arguments as an earlier entry)",
        path: [{ type: "array", origin: "value", input: dataset.value, key: i, value: entry }],
      });
    });
  }),
);

export type EventSubscriptionConfig = v.InferOutput<typeof EventEntry>;

/** An MCP server entry as the events client reads it: opted in to events by an `events` list. */
export type EventsServerConfig = McpServerConfig & { events?: readonly EventSubscriptionConfig[] };
