/**
 * `vigil serve` from flags to exit status (serve.md §1): the flags are validated (flags.ts; usage
 * errors, exit 2, before anything is loaded), the app is started (app.ts), and the mode runs —
 * stdio mode without `--listen`, daemon mode with it.
 *
 * A signal that arrives while the MCP servers are still connecting is held, not obeyed at once:
 * dying then would leave their process groups behind. Once the app is up, serve shuts it down
 * (sweeping the groups) and exits 128+signo.
 *
 * While a mode runs, an error that escaped every containment boundary shuts serve down in order
 * and exits 70 (last-resort.ts says why).
 */
import { EXIT } from "../shared/errors.ts";
import { ENDING_SIGNALS, onSignals } from "../shared/signals.ts";
import { startServeApp } from "./app.ts";
import { type ServeFlags, type ServeMode, planServe } from "./flags.ts";
import { onLastResort } from "./last-resort.ts";
import type { ServeApp } from "./types.ts";

export type { ServeFlags } from "./flags.ts";

/** Runs `vigil serve` to its end; resolves with the exit status. */
export async function runServe(flags: ServeFlags): Promise<number> {
  const plan = planServe(flags);
  // Loaded before the app starts: between the early handlers' removal and the mode's own there
  // must be no await, or a signal in that gap would kill serve without sweeping the groups.
  const run = await modeRunner(plan.mode);
  let early: number | null = null;
  const offSignals = onSignals(ENDING_SIGNALS, (signo) => void (early ??= signo));
  let app: ServeApp;
  try {
    app = await startServeApp({
      config: plan.config,
      stateDir: plan.stateDir,
      firstSession: plan.mode.kind === "stdio" ? plan.mode.session : undefined,
      events: { owner: plan.eventsOwner, reapable: plan.eventsReapable, callbackUrl: plan.callbackUrl },
      transcriptRetainBytes: plan.transcriptRetainBytes,
    });
  } finally {
    offSignals();
  }
  if (early !== null) {
    await app.shutdown();
    return 128 + early;
  }
  // Left installed until the process exits: a second escaped error is logged, never fatal on its own.
  const escaped = new Promise<void>((resolve) => onLastResort(() => resolve()));
  return Promise.race([run(app), escaped.then(() => app.shutdown()).then(() => EXIT.internal)]);
}

/** Loads the chosen mode only. */
async function modeRunner(mode: ServeMode): Promise<(app: ServeApp) => Promise<number>> {
  if (mode.kind === "stdio") {
    const { runStdioMode } = await import("./stdio-mode.ts");
    return (app) => runStdioMode(app, { session: mode.session });
  }
  const { runDaemonMode } = await import("./daemon/run.ts");
  return (app) => runDaemonMode(app, { listen: mode.listen, idleTimeoutSecs: mode.idleTimeoutSecs, maxSessions: mode.maxSessions });
}
