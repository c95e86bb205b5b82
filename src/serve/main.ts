/**
 * `vigil serve` from flags to exit status (serve.md §1): the flags are validated (flags.ts; usage
 * errors, exit 2, before anything is loaded), the app is started (app.ts), and the mode runs —
 * stdio mode without `--listen`, daemon mode with it.
 *
 * A signal that arrives while the MCP servers are still connecting is held, not obeyed at once:
 * dying then would leave their process groups behind. Once the app is up, serve shuts it down
 * (sweeping the groups) and exits 128+signo. In daemon mode SIGHUP asks for a reload instead: one
 * while starting is held too, and done once the daemon is up (the config may have changed after
 * it was read).
 *
 * While a mode runs, an error that escaped every containment boundary shuts serve down in order
 * and exits 70 (last-resort.ts says why).
 */
import { EXIT } from "../shared/errors.ts";
import { startIdleCollector } from "../shared/idle-collector.ts";
import { startLoopBlockProbe } from "../shared/loop-block-probe.ts";
import { METRICS } from "../shared/metrics/catalog.ts";
import { DAEMON_ENDING_SIGNALS, ENDING_SIGNALS, RELOAD_SIGNALS, onSignals } from "../shared/signals.ts";
import { startServeApp } from "./app.ts";
import { type ServeFlags, type ServeMode, planServe } from "./flags.ts";
import { onLastResort } from "./last-resort.ts";
import { planLogFormat, useLogFormat } from "./log-format.ts";
import { tracingSettings } from "./telemetry/otel-env.ts";
import type { Tracing } from "./telemetry/tracing.ts";
import type { ServeApp } from "./types.ts";

export type { ServeFlags } from "./flags.ts";

/** Runs `vigil serve` to its end; resolves with the exit status. */
export async function runServe(flags: ServeFlags): Promise<number> {
  // `--log-format` first, so every refusal from here on (flags, config, state) is in its format.
  useLogFormat(planLogFormat(flags["log-format"]));
  // A debug knob (off by default): the bench's measure of event-loop blocking.
  startLoopBlockProbe(process.env);
  const plan = planServe(flags);
  // OTEL_* (issue 15 item 2): refused like a flag (exit 2), before anything starts; traces are off unless set.
  const otel = tracingSettings(process.env);
  // --check-config: the same flags judged with the start's own loader, nothing started (check-config.ts).
  if (plan.check !== null) return (await import("./check-config.ts")).runCheckConfig(plan);
  // Before the app starts, so nothing registers a collector or keeps label sets for nobody.
  if (!plan.metrics) METRICS.disable();
  // Held from here, before the first await: `systemctl reload` may send SIGHUP the moment the
  // unit is started (Type=simple), and the default action would kill the daemon (not restarted:
  // a signal death is not a failure to Restart=on-failure).
  let early: number | null = null;
  let reloadEarly = false;
  const daemon = plan.mode.kind === "daemon";
  const offSignals = onSignals(daemon ? DAEMON_ENDING_SIGNALS : ENDING_SIGNALS, (signo) => void (early ??= signo));
  const offReload = daemon ? onSignals(RELOAD_SIGNALS, () => void (reloadEarly = true)) : () => {};
  let app: ServeApp;
  let tracing: Tracing | null = null;
  let run: Awaited<ReturnType<typeof modeRunner>>;
  try {
    tracing = otel === null ? null : (await import("./telemetry/tracing.ts")).startTracing(otel);
    // Loaded before the app starts: between the early handlers' removal and the mode's own there
    // must be no await, or a signal in that gap would kill serve without sweeping the groups.
    run = await modeRunner(plan.mode);
    app = await startServeApp({
      config: plan.config,
      stateDir: plan.stateDir,
      firstSession: plan.mode.kind === "stdio" ? plan.mode.session : undefined,
      events: { owner: plan.eventsOwner, reapable: plan.eventsReapable, callbackUrl: plan.callbackUrl },
      transcriptRetainBytes: plan.transcriptRetainBytes,
    });
  } finally {
    offSignals();
    offReload();
  }
  if (early !== null) {
    await app.shutdown();
    await tracing?.shutdown();
    return 128 + early;
  }
  // Left installed until the process exits: a second escaped error is logged, never fatal on its own.
  const escaped = new Promise<void>((resolve) => onLastResort(() => resolve()));
  // A burst's garbage is given back once serve goes quiet, not kept until the next burst.
  const stopCollector = startIdleCollector();
  const status = Promise.race([run(app, { reloadAtStart: reloadEarly }), escaped.then(() => app.shutdown()).then(() => EXIT.internal)]);
  return flushed(tracing, status.finally(stopCollector));
}

/** The exit status, once the spans still queued went out (bounded: telemetry/tracing.ts FLUSH_MS). */
async function flushed(tracing: Tracing | null, status: Promise<number>): Promise<number> {
  const code = await status;
  await tracing?.shutdown();
  return code;
}

/** Loads the chosen mode only. */
async function modeRunner(mode: ServeMode): Promise<(app: ServeApp, o: { reloadAtStart: boolean }) => Promise<number>> {
  if (mode.kind === "stdio") {
    const { runStdioMode } = await import("./stdio-mode.ts");
    return (app) => runStdioMode(app, { session: mode.session });
  }
  const { runDaemonMode } = await import("./daemon/run.ts");
  return (app, o) => runDaemonMode(app, { listen: mode.listen, idleTimeoutSecs: mode.idleTimeoutSecs, maxSessions: mode.maxSessions, metricsListen: mode.metricsListen, reloadAtStart: o.reloadAtStart });
}
