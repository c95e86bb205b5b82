/**
 * SIGHUP in daemon mode (issue 15 item 4): a reload of the policy, `mcp_servers` and configured
 * subscriptions (app.reload, serialized there: reload.ts), never a stop. Sessions, their runs and
 * their SSE streams are not touched. After a reload that left configured subscriptions while their
 * owner session is not running (there were none at boot, so it was never started), the owner is
 * started, as at boot.
 *
 * The handler stays installed until the process exits: a SIGHUP while serve stops is ignored,
 * never left to its default (death without sweeping the server groups).
 */
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { RELOAD_SIGNALS, onSignals } from "../../shared/signals.ts";
import type { ServeApp } from "../types.ts";
import type { SessionRegistry } from "./registry.ts";

export interface ReloadSignal {
  /** Shutdown began: later SIGHUPs do nothing. */
  stop(): void;
}

/** `atStart`: a SIGHUP arrived while serve was starting (main.ts held it): one reload now. `reloaded`: after each. */
export function reloadOnSignal(app: ServeApp, registry: SessionRegistry, o: { atStart: boolean; reloaded: () => void }): ReloadSignal {
  let stopped = false;
  const reload = async () => {
    if (stopped) return;
    await app.reload();
    if (stopped) return;
    o.reloaded();
    const owner = app.events.hasConfigured ? app.events.owner : null;
    if (owner === null || app.sessionNames().includes(owner)) return;
    try {
      (await registry.acquire(owner, { uncapped: true })).release();
    } catch (e) {
      logLine(`serve: events: session ${JSON.stringify(owner)} could not be started after the reload: ${errorMessage(e)}`, { level: "warn", session: owner, code: "session_start_failed" });
    }
  };
  onSignals(RELOAD_SIGNALS, () => void reload());
  if (o.atStart) void reload();
  return {
    stop() {
      stopped = true;
    },
  };
}
