/**
 * What `GET /v1/health` answers (serve.md "Operations"; issue 12 item F): always HTTP 200, so a
 * probe can read the body, and `ok:false` with one reason per problem while something is wrong —
 * a configured MCP server is not connected, the sessions are at `--max-sessions`, or the events
 * session (the owner of the configured subscriptions) is not running. Pure: the daemon gathers the
 * facts (server states from the pool's supervision, the session count, the open session names).
 */
import type { ServerStateReport } from "../../mcp/server-pool.ts";
import type { WebhookRefusal, WebhookRoutes } from "../../events/webhook/types.ts";

/** One MCP server as the pool's supervision reports it (McpServerPool.serverStates()). */
export type ServerState = ServerStateReport;

export interface HealthFacts {
  servers: readonly ServerState[];
  sessions: number;
  maxSessions: number;
  /** The owner of the configured subscriptions, when any are configured; null otherwise. */
  eventsSession: string | null;
  /** Whether that session is open now. */
  eventsSessionRunning: boolean;
  /** Milliseconds until the events session is restarted, when a restart is scheduled. */
  eventsRestartInMs?: number | undefined;
  /** The webhook receiver's counters, when a callback URL is configured. */
  webhook?: WebhookRoutes["counters"] | undefined;
}

/** What the receiver answered so far: informational, never a reason for `ok:false` (a refused sender is not our fault). */
export interface WebhookHealth {
  accepted: number;
  duplicates: number;
  verifications: number;
  refused: Record<WebhookRefusal, number>;
}

export interface HealthReport {
  ok: boolean;
  reasons: string[];
  webhook?: WebhookHealth;
}

export function healthReport(f: HealthFacts): HealthReport {
  const reasons: string[] = [];
  for (const s of f.servers) {
    if (s.state === "connected") continue;
    const why = s.error === undefined ? "" : `: ${s.error}`;
    const retry = s.retry_in_ms === undefined ? "" : ` (retry in ${Math.ceil(s.retry_in_ms / 1000)} s)`;
    reasons.push(`MCP server ${JSON.stringify(s.name)} is ${s.state}${why}${retry}`);
  }
  if (f.sessions >= f.maxSessions) {
    reasons.push(`sessions at the cap: ${f.sessions} of --max-sessions ${f.maxSessions} (new sessions get 503 too_many_sessions)`);
  }
  if (f.eventsSession !== null && !f.eventsSessionRunning) {
    const restart = f.eventsRestartInMs === undefined ? "" : ` (restarting in ${Math.ceil(f.eventsRestartInMs / 1000)} s)`;
    reasons.push(`the events session ${JSON.stringify(f.eventsSession)} is not running${restart}`);
  }
  const report: HealthReport = { ok: reasons.length === 0, reasons };
  if (f.webhook !== undefined) report.webhook = webhookHealth(f.webhook);
  return report;
}

function webhookHealth(counters: WebhookRoutes["counters"]): WebhookHealth {
  const { accepted, duplicates, verifications, ...refused } = counters;
  return { accepted, duplicates, verifications, refused };
}
