/**
 * The events state of a session: two files in its session directory (serve.md §3, §6 item 5) —
 * the snapshot (subscriptions: cursor, dedup window, runtime spec) and the pending log.
 */
import { logLine } from "../../shared/log.ts";
import { removeStaleTemps } from "../../shared/durable/temp-files.ts";

export const EVENTS_SNAPSHOT_FILE = "mcp-events.json";
export const EVENTS_LOG_FILE = "mcp-events.log";

/**
 * Both files are replaced atomically (the snapshot on every write, the log when compacted), so a
 * kill -9 mid-write leaves a temp file of theirs behind: removed when the store opens.
 */
export async function sweepTemps(dir: string): Promise<void> {
  const swept = await removeStaleTemps(dir, [EVENTS_SNAPSHOT_FILE, EVENTS_LOG_FILE]);
  if (swept.removed.length > 0) logLine(`events state in ${dir}: removed ${swept.removed.length} temporary file(s) an interrupted write left behind`, { code: "events_state_temps_removed" });
  if (swept.failed.length > 0) logLine(`events state in ${dir}: cannot remove stale temporary files: ${swept.failed.slice(0, 5).join(", ")}`, { level: "warn", code: "events_state_temps_kept" });
}
