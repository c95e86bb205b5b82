/**
 * daemon mode of `vigil serve` (serve.md §1): the HTTP API on one Bun.serve listener, many sessions,
 * idle reaping. Prints one readiness line on stderr, `vigil serve listening http://HOST:PORT`
 * (the port actually bound, so `--listen 127.0.0.1:0` works; under `--log-format json` the `msg`
 * of a JSON line), and runs until SIGTERM or SIGINT:
 * then it stops accepting, ends the SSE streams, closes every session (runs in flight are aborted
 * and recorded), the pool and every stdio server group, and exits 0 (an orderly stop is the
 * daemon's normal end). SIGHUP reloads the policy, `mcp_servers` and configured subscriptions
 * without dropping a session or a stream (reload-signal.ts, ../reload.ts).
 *
 * A session that fails (an unexpected exception, session-faults.ts) is closed by the app; here its
 * SSE streams end once they carried its `error` frame, and the sessions that must keep running
 * come back with backoff (restarts.ts). `/v1/health` is judged by health.ts.
 */
import { errorMessage } from "../../shared/errors.ts";
import { announce, logLine } from "../../shared/log.ts";
import { DAEMON_ENDING_SIGNALS, onSignals } from "../../shared/signals.ts";
import { within } from "../../shared/time.ts";
import type { ServeApp } from "../types.ts";
import { METRICS } from "../../shared/metrics/catalog.ts";
import { LISTENER_BODY_CAP, createDaemonHandler, jsonError } from "./http.ts";
import { healthReport } from "./health.ts";
import { type ListenAddress, bindRefusal, listenUrl } from "./listen.ts";
import { registerDaemonMetrics } from "./metrics-process.ts";
import { type MetricsListener, metricsResponse, startMetricsListener } from "./metrics-route.ts";
import { SessionRegistry } from "./registry.ts";
import { reloadOnSignal } from "./reload-signal.ts";
import { SessionRestarts } from "./restarts.ts";
import { daemonWebhook } from "./webhook-wiring.ts";

const STOP_MS = 2000;

export interface DaemonOptions {
  listen: ListenAddress;
  /** Seconds; 0 = never reap. */
  idleTimeoutSecs: number;
  /** `--max-sessions`. */
  maxSessions: number;
  /** A SIGHUP arrived while serve was starting: reload once up (main.ts). */
  reloadAtStart?: boolean;
  /** `--metrics-listen`: `/metrics` there, not on `listen`. Undefined or null: on `listen` (unless metrics are off). */
  metricsListen?: ListenAddress | null;
}

/**
 * Opens the sessions that must run without a client: the owner of the configured event
 * subscriptions, and sessions whose runtime subscriptions are restored (serve.md §6 items 6, 7).
 * Each is opened and released at once, so the reaper judges it like any other.
 */
async function wakeBootSessions(app: ServeApp, registry: SessionRegistry): Promise<void> {
  let names: string[];
  try {
    names = await app.events.bootSessions();
  } catch (e) {
    logLine(`serve: events: cannot list the sessions to restore: ${errorMessage(e)}`, { level: "warn", code: "boot_sessions_unlisted" });
    return;
  }
  for (const name of names) {
    try {
      const lease = await registry.acquire(name, { uncapped: true });
      lease.release();
    } catch (e) {
      logLine(`serve: events: session ${JSON.stringify(name)} could not be started: ${errorMessage(e)}`, { level: "warn", session: name, code: "session_start_failed" });
    }
  }
}

export async function runDaemonMode(app: ServeApp, o: DaemonOptions): Promise<number> {
  const registry = new SessionRegistry(app, o.idleTimeoutSecs * 1000, Date.now, o.maxSessions);
  const restarts = new SessionRestarts(async (name) => {
    (await registry.acquire(name, { uncapped: true })).release();
  });
  // A reload may give the events session its first configured subscriptions (reload-signal.ts).
  let eventsSession = app.events.hasConfigured ? app.events.owner : null;
  const webhook = daemonWebhook(app);
  const health = () =>
    healthReport({
      servers: app.serverStates(),
      sessions: registry.held,
      maxSessions: o.maxSessions,
      eventsSession,
      eventsSessionRunning: eventsSession !== null && app.sessionNames().includes(eventsSession),
      eventsRestartInMs: eventsSession === null ? undefined : restarts.restartInMs(eventsSession),
      webhook: webhook?.routes.counters,
    });
  const metricsHere = METRICS.enabled && (o.metricsListen ?? null) === null;
  const handler = createDaemonHandler(app, registry, health, webhook?.receiver ?? null, metricsHere ? metricsResponse : null);
  const offEnded = app.onSessionEnded((name, restart) => {
    registry.forget(name);
    handler.endStreamsOf(name);
    if (restart) restarts.failed(name);
  });
  let server;
  try {
    server = Bun.serve({
      hostname: o.listen.hostname,
      port: o.listen.port,
      development: false,
      // Bun would otherwise let a second daemon bind the same address (SO_REUSEPORT) and share
      // the traffic — and a state directory. One listener per address, refused with exit 2.
      reusePort: false,
      maxRequestBodySize: LISTENER_BODY_CAP,
      idleTimeout: 30,
      fetch: handler.fetch,
      error: () => jsonError(500, "internal", "internal error"),
    });
  } catch (e) {
    registry.stop();
    await app.shutdown();
    throw bindRefusal("--listen", o.listen, e);
  }
  let metricsListener: MetricsListener | null = null;
  if (METRICS.enabled && o.metricsListen != null) {
    try {
      metricsListener = startMetricsListener(o.metricsListen);
    } catch (e) {
      void server.stop(true);
      registry.stop();
      await app.shutdown();
      throw e;
    }
    // Before the main readiness line, so whoever waits for that one finds this one printed.
    announce(`vigil serve metrics ${metricsListener.url}`, { code: "metrics_listening" });
  }
  const offMetrics = registerDaemonMetrics({
    serverStates: () => app.serverStates(),
    sessionsOpen: () => registry.size,
    sseClients: () => handler.sseClients,
  });
  const signalled = new Promise<string>((resolve) => {
    // Never removed: a second signal during shutdown must not fall back to the default (death
    // without sweeping the server groups).
    onSignals(DAEMON_ENDING_SIGNALS, (_signo, name) => resolve(name));
  });
  const reloads = reloadOnSignal(app, registry, { atStart: o.reloadAtStart === true, reloaded: () => void (eventsSession = app.events.hasConfigured ? app.events.owner : null) });
  const port = server.port ?? o.listen.port;
  // Through the logger (--log-format json makes it a JSON line with this same msg).
  announce(`vigil serve listening ${listenUrl(o.listen.hostname, port)}`, { code: "listening" });
  const wake = () => wakeBootSessions(app, registry);
  void (webhook === null ? wake() : webhook.restoring(wake));

  await signalled;
  reloads.stop();
  offEnded();
  restarts.stop();
  registry.stop();
  handler.closeStreams();
  await within(server.stop(), STOP_MS);
  void server.stop(true);
  if (metricsListener !== null) await within(metricsListener.stop(), STOP_MS);
  offMetrics();
  await app.shutdown();
  return 0;
}
