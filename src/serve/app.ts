/**
 * The composition root of `vigil serve` (serve.md §1–§5, §6 item 9): config, tuning, state dir,
 * policy, model and the MCP server pool, loaded once per process, and one `Session` per name built
 * on top of them (session-wiring.ts, session-table.ts). Wiring only: the flags are validated in
 * flags.ts and the mode is chosen in main.ts.
 *
 * - Everything that can be refused (config, tuning knobs, signing key, state dir, policy, API key,
 *   and in stdio mode the session's state files and decision log) is checked before any MCP server is started,
 *   so a refusal (exit 2 or 3) never leaves a process behind and never started one.
 * - `shutdown()` closes sessions (each bounded by its close timeout), then the pool and every stdio
 *   transport still open (stdin EOF, grace, group sweep), bounded by grace + 2 s; a process `exit`
 *   hook SIGKILLs whatever group is left, whichever way the process ends.
 * - `reload()` (SIGHUP in daemon mode) re-reads the config and policy and applies the policy,
 *   `mcp_servers` and configured subscriptions in place, without reopening a session (reload.ts).
 */
import { McpServerPool } from "../mcp/server-pool.ts";
import { closeAllStdioTransports, killAllStdioTransportGroups } from "../mcp/stdio-transport.ts";
import { VERSION } from "../shared/build-info.ts";
import { logLine } from "../shared/log.ts";
import { within } from "../shared/time.ts";
import { describeConfig } from "./config/redact.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { ServeTuning } from "./config/tuning.ts";
import { DEFAULT_EVENTS_SESSION, EventsService } from "./events-service.ts";
import { PolicyHolder } from "./policy-holder.ts";
import { loadRefusables } from "./refusables.ts";
import { ServeReloader } from "./reload.ts";
import type { EvidenceSetup } from "./session-evidence.ts";
import { SessionFaults } from "./session-faults.ts";
import { SessionTable } from "./session-table.ts";
import type { Session } from "./session/session.ts";
import { type SessionParts, closeServeSession, openServeSession, openSessionState } from "./session-wiring.ts";
import { TRANSCRIPT_DEFAULTS } from "./state/transcript-types.ts";
import type { ServeApp, ServeAppOptions } from "./types.ts";

export type { OpenOptions, ServeApp, ServeAppOptions } from "./types.ts";

export async function startServeApp(options: ServeAppOptions = {}): Promise<ServeApp> {
  const env = options.env ?? process.env;
  // Shared with --check-config (refusables.ts): everything that can be refused, before anything starts.
  const { configPath, config, tuning, stateDir, policy, model, signer } = await loadRefusables(options, env);
  const transcript = { segmentBytes: tuning.transcriptSegmentBytes, retainBytes: options.transcriptRetainBytes ?? TRANSCRIPT_DEFAULTS.retainBytes };
  logLine(`serve: ${describeConfig(config, signer?.keyid)} state=${stateDir}`, { code: "config_loaded" });
  // The policy in force; a reload replaces it (reload.ts), decisions and stop statements read it as they are written.
  const policyHolder = new PolicyHolder(policy);
  const evidence: EvidenceSetup = { signer, get policyDigest() { return policyHolder.digest; }, version: VERSION };
  // The containment boundary (session-faults.ts): called only once sessions run, so after the
  // table and the events service below exist.
  const faults = new SessionFaults({ close: (n) => sessions.close(n), restartsAfterFailure: (n) => events.restartsAfterFailure(n) });
  const contain = (name: string, session: Session, error: unknown) => void faults.contain(name, session, error);
  // get_state's `servers`: read only by commands, which no session answers before the pool exists.
  const serverStates = () => pool.serverStates();
  // stdio mode's session: its state is opened (or refused) while no MCP server runs yet.
  const first = options.firstSession === undefined ? null : await openSessionState({ config, stateDir, tuning, transcript, faults: contain, serverStates, evidence }, options.firstSession, { checkEvents: true });

  // From here on MCP server processes may exist: every way out must end them.
  process.on("exit", killAllStdioTransportGroups);
  let pool: McpServerPool;
  try {
    pool = await connectPool(config, tuning);
  } catch (e) {
    await first?.discard();
    throw e;
  }
  const events = new EventsService({
    pool,
    config,
    tuning,
    stateDir,
    owner: options.events?.owner ?? DEFAULT_EVENTS_SESSION,
    reapable: options.events?.reapable ?? false,
    callbackUrl: options.events?.callbackUrl ?? null,
    // Daemon mode has no first session: only a listener can receive webhook deliveries.
    daemon: options.firstSession === undefined,
  });
  const parts: SessionParts = { config, stateDir, tuning, transcript, policy: policyHolder, model, pool, events, faults: contain, serverStates, evidence };
  const reloader = new ServeReloader({ configPath, env, config, policy: policyHolder, pool, events });
  // Opened before the pool, taken into service by the first openSession of its name.
  let waiting = first;
  const sessions = new SessionTable({
    open: (name, o) => {
      const state = waiting?.name === name ? waiting : undefined;
      if (state !== undefined) waiting = null;
      return openServeSession(parts, name, o, state);
    },
    close: (name, session) => closeServeSession(events, name, session),
  });
  const closePool = async () => {
    await waiting?.discard();
    waiting = null;
    await within(pool.close(), tuning.shutdownGraceMs + 4000);
    await closeAllStdioTransports();
    killAllStdioTransportGroups();
  };

  return {
    get config() {
      return reloader.config;
    },
    stateDir,
    tuning,
    version: VERSION,
    runBoundMs: config.model.timeout_ms,
    events,
    keepsAlive: (name) => events.keepsAlive(name),
    serverStates: () => pool.serverStates(),
    onSessionEnded: (listener) => faults.onEnded(listener),
    sessionNames: () => sessions.names(),
    openSession: (name, o) => sessions.open(name, o),
    closeSession: (name, reason) => sessions.close(name, reason),
    reload: () => reloader.reload(),
    shutdown: () => {
      reloader.stop();
      return sessions.shutdown(closePool);
    },
  };
}

/** Connects every configured server; one that fails is logged and retried by the pool (serve goes on). */
async function connectPool(config: ServeConfig, tuning: ServeTuning): Promise<McpServerPool> {
  const pool = await McpServerPool.connect(config.mcp_servers, {
    clientInfo: { name: "vigil", version: VERSION },
    maxMessageBytes: tuning.mcpMaxMessageBytes,
    graceMs: tuning.shutdownGraceMs,
    backoff: { initialMs: tuning.mcpReconnectInitialMs, capMs: Math.max(tuning.mcpReconnectInitialMs, tuning.mcpReconnectCapMs) },
  });
  for (const s of pool.serverStates()) {
    // Not connected yet: the pool keeps trying with backoff (serve.md §6 item 10).
    if (s.state !== "connected") logLine(`serve: MCP server ${JSON.stringify(s.name)} is unavailable (${s.state}): ${s.error ?? "not connected"}`, { level: "warn", server: s.name, code: "server_unavailable" });
  }
  return pool;
}
