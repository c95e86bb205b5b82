/**
 * Every metric vigil exports, declared once (issue 15 item 1), in the process's one registry.
 * Names follow the Prometheus conventions: the `vigil_` prefix, the unit in the name, base units
 * (seconds, bytes), `_total` on counters. Labels are bounded: session, server, event name, mode,
 * state, outcome and reason codes — never an event id, a tool argument or a payload.
 *
 * Families whose values live elsewhere (queue lengths, subscription states, sessions open, open
 * fds) are registered by their owners as collectors (`METRICS.collect`), read at scrape time;
 * their names are declared here too, so the whole catalog reads in one place.
 */
import { MetricsRegistry } from "./registry.ts";

export const METRICS = new MetricsRegistry();

/** Delivery modes of MCP Events, as a label; "restored": queued by an earlier process, "none": no mode chosen yet (events/metrics.ts). */
export type EventMode = "poll" | "push" | "webhook" | "restored" | "none";

const EVENT_LABELS = ["server", "event", "mode"] as const;

export const EVENTS = {
  received: METRICS.counter("vigil_events_received_total", "Event occurrences received from MCP servers, before deduplication", EVENT_LABELS),
  acknowledged: METRICS.counter("vigil_events_acknowledged_total", "Event occurrences stored durably (fdatasync'd) and acknowledged", EVENT_LABELS),
  duplicates: METRICS.counter("vigil_events_duplicates_total", "Event occurrences discarded as duplicates of one already stored", EVENT_LABELS),
  delivered: METRICS.counter("vigil_events_delivered_total", "Events handed to a session's model", EVENT_LABELS),
  dropped: METRICS.counter("vigil_events_dropped_total", "Events dropped after the model could not take them", EVENT_LABELS),
  gaps: METRICS.counter("vigil_events_gaps_total", "Gaps reported in an event stream (lost, invalid or truncated occurrences)", [...EVENT_LABELS, "reason"]),
  ackLatency: METRICS.histogram("vigil_events_ack_latency_seconds", "From an occurrence's receipt to its fdatasync (acknowledgement)", ["mode"]),
  deliveryLatency: METRICS.histogram("vigil_events_delivery_latency_seconds", "From an event's acknowledgement to the model having received it", ["mode"]),
  webhookDeliveries: METRICS.counter("vigil_webhook_deliveries_total", "Webhook delivery requests answered, by HTTP status", ["status"]),
} as const;

/** Collected at scrape time by the events side (names declared here, values read there). */
export const EVENTS_COLLECTED = {
  pending: "vigil_events_pending",
  pendingBytes: "vigil_events_pending_bytes",
  subscriptions: "vigil_events_subscriptions",
} as const;

export const MODEL = {
  requests: METRICS.counter("vigil_model_requests_total", "Model requests, by outcome", ["outcome"]),
  latency: METRICS.histogram("vigil_model_request_duration_seconds", "Model request duration", ["outcome"]),
  tokens: METRICS.counter("vigil_model_tokens_total", "Tokens the model API reported, by type (input or output)", ["type"]),
  compactions: METRICS.counter("vigil_model_compactions_total", "Context compactions before a model request, by who wrote the summary (model, or trim when the model gave none)", ["by"]),
} as const;

/** Collected at scrape time (serve/models/outage-clock.ts), so an outage still going on counts up to the scrape. */
export const MODEL_COLLECTED = {
  unavailableSeconds: "vigil_model_unavailable_seconds_total",
} as const;

export const RUNS = {
  runs: METRICS.counter("vigil_runs_total", "Agent runs ended, by outcome", ["outcome"]),
} as const;

export const TOOLS = {
  calls: METRICS.counter("vigil_tool_calls_total", "Tool calls decided, by server, tool, decision and reason code", ["server", "tool", "decision", "code"]),
  latency: METRICS.histogram("vigil_tool_call_duration_seconds", "Duration of tool calls forwarded to MCP servers", ["server", "tool"]),
} as const;

/** SIGHUP reloads (serve/reload.ts): an alert on `vigil_config_last_reload_successful == 0` catches a refused one. */
export const CONFIG = {
  reloads: METRICS.counter("vigil_config_reloads_total", "Reloads asked for (SIGHUP), by outcome: applied, refused (invalid config or policy) or failed", ["outcome"]),
  lastReloadSuccessful: METRICS.gauge("vigil_config_last_reload_successful", "1 when the last reload was applied (or none was asked for), 0 when it was refused or failed", []),
  lastReloadSuccessTime: METRICS.gauge("vigil_config_last_reload_success_timestamp_seconds", "When the config in force was loaded: the start, or the last applied reload (Unix seconds)", []),
} as const;
CONFIG.lastReloadSuccessful.at().set(1);
CONFIG.lastReloadSuccessTime.at().set(Date.now() / 1000);

export const MCP = {
  reconnects: METRICS.counter("vigil_mcp_server_reconnects_total", "Reconnects of HTTP MCP servers and restarts of stdio ones", ["server"]),
} as const;

export const MCP_COLLECTED = {
  state: "vigil_mcp_server_state",
} as const;

export const PROCESS_COLLECTED = {
  sessionsOpen: "vigil_sessions_open",
  sseClients: "vigil_sse_clients",
  openFds: "vigil_process_open_fds",
  residentMemory: "vigil_process_resident_memory_bytes",
  eventLoopLag: "vigil_event_loop_lag_seconds",
  buildInfo: "vigil_build_info",
  startTime: "vigil_process_start_time_seconds",
} as const;
