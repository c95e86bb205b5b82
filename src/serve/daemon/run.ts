/**
 * daemon mode of `vigil serve` (serve.md §1): the HTTP API on one Bun.serve listener, many sessions,
 * idle reaping. Prints one readiness line on stderr, `vigil serve listening http://HOST:PORT`
 * (the port actually bound, so `--listen 127.0.0.1:0` works), and runs until SIGTERM, SIGINT or
 * SIGHUP: then it stops accepting, ends the SSE streams, closes every session (runs in flight are
 * aborted and recorded), the pool and every stdio server group, and exits 0 (an orderly stop is
 * the daemon's normal end).
 *
 * A session that fails (an unexpected exception, session-faults.ts) is closed by the app; here its
 * SSE streams end once they carried its `error` frame, and the sessions that must keep running
 * come back with backoff (restarts.ts). `/v1/health` is judged by health.ts.
 */
import { writeSync } from "node:fs";
import { errnoCode, errorMessage, usageError } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { ENDING_SIGNALS, onSignals } from "../../shared/signals.ts";
import { within } from "../../shared/time.ts";
import type { ServeApp } from "../types.ts";
import { LISTENER_BODY_CAP, createDaemonHandler, jsonError } from "./http.ts";
import { healthReport } from "./health.ts";
import { type ListenAddress, listenUrl } from "./listen.ts";
import { SessionRegistry } from "./registry.ts";
import { SessionRestarts } from "./restarts.ts";
import { daemonWebhook } from "./webhook-wiring.ts";

const STOP_MS = 2000;

export interface DaemonOptions {
  listen: ListenAddress;
  /** Seconds; 0 = never reap. */
  idleTimeoutSecs: number;
  /** `--max-sessions`. */
  maxSessions: number;
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
    logLine(`serve: events: cannot list the sessions to restore: ${errorMessage(e)}`);
    return;
  }
  for (const name of names) {
    try {
      const lease = await registry.acquire(name, { uncapped: true });
      lease.release();
    } catch (e) {
      logLine(`serve: events: session ${JSON.stringify(name)} could not be started: ${errorMessage(e)}`);
    }
  }
}

export async function runDaemonMode(app: ServeApp, o: DaemonOptions): Promise<number> {
  const registry = new SessionRegistry(app, o.idleTimeoutSecs * 1000, Date.now, o.maxSessions);
  const restarts = new SessionRestarts(async (name) => {
    (await registry.acquire(name, { uncapped: true })).release();
  });
  const eventsSession = app.events.hasConfigured ? app.events.owner : null;
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
  const handler = createDaemonHandler(app, registry, health, webhook?.receiver ?? null);
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
    const why = errnoCode(e) === "EADDRINUSE" ? "address in use" : errorMessage(e);
    throw usageError(`--listen ${o.listen.hostname}:${o.listen.port}: cannot listen: ${why}`);
  }
  const signalled = new Promise<string>((resolve) => {
    // Never removed: a second signal during shutdown must not fall back to the default (death
    // without sweeping the server groups).
    onSignals(ENDING_SIGNALS, (_signo, name) => resolve(name));
  });
  const port = server.port ?? o.listen.port;
  writeSync(2, `vigil serve listening ${listenUrl(o.listen.hostname, port)}\n`);
  const wake = () => wakeBootSessions(app, registry);
  void (webhook === null ? wake() : webhook.restoring(wake));

  await signalled;
  offEnded();
  restarts.stop();
  registry.stop();
  handler.closeStreams();
  await within(server.stop(), STOP_MS);
  void server.stop(true);
  await app.shutdown();
  return 0;
}
