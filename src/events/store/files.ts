/**
 * The events state of a session: two files in its session directory (serve.md §3, §6 item 5) —
 * the snapshot (subscriptions: cursor, dedup window, runtime spec) and the pending log.
 */
export const EVENTS_SNAPSHOT_FILE = "mcp-events.json";
export const EVENTS_LOG_FILE = "mcp-events.log";
