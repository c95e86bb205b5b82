/**
 * The wiring of `vigil serve` (serve.md §1–§5, §6 item 9): config, tuning, state dir, policy, model
 * and the MCP server pool, loaded once per process, and one `Session` per name built on top of them.
 *
 * - Everything that can be refused (config, tuning knobs, state dir, policy, API key) is checked
 *   before any MCP server is started, so a refusal (exit 2) never leaves a process behind.
 * - The pool is shared by every session; each session gets its own tool gateway (policy sessions
 *   per server) and, with `evidence.decision_log`, its own `sessions/<name>/decisions.ndjson`
 *   (append mode, so a reopened session continues its log).
 * - `shutdown()` closes sessions (each bounded by its close timeout), then the pool and every stdio
 *   transport still open (stdin EOF, grace, group sweep), bounded by grace + 2 s; a process `exit`
 *   hook SIGKILLs whatever group is left, whichever way the process ends.
 */
import { join } from "node:path";
import { DecisionRecorder } from "../evidence/decision-recorder.ts";
import { EvidenceLog } from "../evidence/evidence-log.ts";
import { McpServerPool } from "../mcp/server-pool.ts";
import { closeAllStdioTransports, killAllStdioTransportGroups } from "../mcp/stdio-transport.ts";
import { type LoadedPolicy, loadPolicyFile } from "../policy/load.ts";
import { VERSION } from "../shared/build-info.ts";
import { VigilError, errorMessage, usageError } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { within } from "../shared/process-group.ts";
import { type Env, loadServeConfig, resolveConfigPath } from "./config/load.ts";
import { describeConfig } from "./config/redact.ts";
import type { ServeConfig } from "./config/schema.ts";
import { type ServeTuning, loadServeTuning } from "./config/tuning.ts";
import { createOpenAiModel } from "./models/openai.ts";
import { type FrameBody, messageFrame } from "./protocol/frames.ts";
import { type RunModel, runConversation } from "./run/run-loop.ts";
import { createToolGateway } from "./run/tool-gateway.ts";
import { DEFAULT_EVENTS_SESSION, EventsService } from "./events-service.ts";
import { Session } from "./session/session.ts";
import type { FrameListener, Runner } from "./session/types.ts";
import { DECISIONS_FILE, ensureSessionDir, ensureStateDir, isValidSessionName, resolveStateDir } from "./state/paths.ts";

export interface ServeAppOptions {
  /** `--config` (undefined: `$VIGIL_CONFIG`, then ./vigil.json). */
  config?: string | undefined;
  /** `--state-dir` (undefined: XDG default). */
  stateDir?: string | undefined;
  env?: Env;
  /** The session that owns the configured event subscriptions, and whether the reaper may end live subscriptions. */
  events?: { owner: string; reapable: boolean };
}

export interface OpenOptions {
  /**
   * Subscribed to the session's frames before anything else can emit one (its event
   * subscriptions start when it opens), so a client that is the session's only reader misses none.
   * Applies when this call opens the session.
   */
  subscribe?: FrameListener;
}

export interface ServeApp {
  readonly config: ServeConfig;
  readonly stateDir: string;
  readonly tuning: ServeTuning;
  readonly version: string;
  /** The MCP Events client (hubs per session, configured-subscription owner, boot sessions). */
  readonly events: EventsService;
  /** The idle reaper must leave this session alone (live subscriptions or pending events). */
  keepsAlive(name: string): boolean;
  /** Names of the sessions currently open. */
  sessionNames(): string[];
  /** The open session of that name, or a new one (one Session per name; concurrent callers share it). */
  openSession(name: string, options?: OpenOptions): Promise<Session>;
  /** Closes one session and its decision log (the idle reaper). */
  closeSession(name: string): Promise<void>;
  /** Closes every session, the pool and every stdio group; bounded; idempotent; never rejects. */
  shutdown(): Promise<void>;
}

/** Extra time a session close may take on top of its own timeout (transcript sync and close). */
const SESSION_CLOSE_SLACK_MS = 2000;

interface Entry {
  opening: Promise<Session>;
  log: EvidenceLog | null;
}

export async function startServeApp(options: ServeAppOptions = {}): Promise<ServeApp> {
  const env = options.env ?? process.env;
  const configPath = resolveConfigPath(options.config, env);
  const config = await loadServeConfig(configPath, env);
  const tuning = loadServeTuning(env);
  const stateDir = ensureStateDir(resolveStateDir(options.stateDir, env));
  const policy: LoadedPolicy | null = config.policy === undefined ? null : await loadPolicyFile(config.policy);
  const model = buildModel(config, env);
  logLine(`serve: ${describeConfig(config)} state=${stateDir}`);

  // From here on MCP server processes may exist: every way out must end them.
  process.on("exit", killAllStdioTransportGroups);
  const pool = await McpServerPool.connect(config.mcp_servers, {
    clientInfo: { name: "vigil", version: VERSION },
    maxMessageBytes: tuning.mcpMaxMessageBytes,
    graceMs: tuning.shutdownGraceMs,
  });
  for (const name of pool.serverNames) {
    const status = pool.status(name);
    if (status?.state === "failed") logLine(`serve: MCP server ${JSON.stringify(name)} is unavailable: ${status.reason}`);
  }

  const events = new EventsService({
    pool,
    config,
    tuning,
    stateDir,
    owner: options.events?.owner ?? DEFAULT_EVENTS_SESSION,
    reapable: options.events?.reapable ?? false,
  });
  const sessions = new Map<string, Entry>();
  let shuttingDown: Promise<void> | null = null;

  async function open(name: string, entry: Entry, options: OpenOptions): Promise<Session> {
    const dir = ensureSessionDir(stateDir, name);
    let decisions: DecisionRecorder | null = null;
    if (config.evidence !== undefined && config.evidence.decision_log) {
      const path = join(dir, DECISIONS_FILE);
      try {
        entry.log = EvidenceLog.openAppend(path);
      } catch (e) {
        throw new VigilError("evidence_write_failed", `cannot open decision log ${path}: ${errorMessage(e)}`, { cause: e });
      }
      decisions = new DecisionRecorder(entry.log, config.evidence.event_source, policy?.digest ?? null, false);
    }
    const tools = config.mcp_servers.length === 0 ? null : createToolGateway({ pool, policy, decisions, sessionId: name });
    const runner: Runner = (request, emit, signal) => {
      // The prompt is announced right after run_start: clients see what the run answers, and a
      // reopened session rebuilds its history from these user message frames.
      const announcing = async (frame: FrameBody) => {
        await emit(frame);
        if (frame.type !== "run_start") return;
        for (const m of request.prompt) if (m.role === "user") await emit(messageFrame("user", m.text));
      };
      const systemPrompt = config.system_prompt === undefined ? {} : { systemPrompt: config.system_prompt };
      return runConversation(request, { model, tools, ...systemPrompt, emit: announcing }, signal);
    };
    let session: Session;
    try {
      session = await Session.open({ name, dir, runner });
    } catch (e) {
      entry.log?.close();
      throw e;
    }
    if (options.subscribe !== undefined) session.subscribe(options.subscribe);
    try {
      await events.attach(session, dir);
    } catch (e) {
      await session.close().catch(() => {});
      entry.log?.close();
      throw new Error(`session ${JSON.stringify(name)}: its MCP Events state cannot be used: ${errorMessage(e)}`, { cause: e });
    }
    return session;
  }

  async function closeEntry(name: string, entry: Entry): Promise<void> {
    try {
      const session = await entry.opening;
      // Subscriptions stop first (nothing new arrives), then the run in flight settles (its
      // batches are marked delivered or returned), then the events state is written.
      await events.beforeClose(name);
      await session.close();
      await events.detach(name);
    } catch (e) {
      logLine(`serve: session ${JSON.stringify(name)}: close failed: ${errorMessage(e)}`);
    } finally {
      entry.log?.close();
    }
  }

  const app: ServeApp = {
    config,
    stateDir,
    tuning,
    version: VERSION,
    events,
    keepsAlive: (name) => events.keepsAlive(name),
    sessionNames: () => [...sessions.keys()],
    openSession(name, options = {}) {
      if (shuttingDown !== null) return Promise.reject(new Error("serve is shutting down"));
      const existing = sessions.get(name);
      if (existing !== undefined) return existing.opening;
      const entry: Entry = { opening: Promise.resolve(null as unknown as Session), log: null };
      entry.opening = open(name, entry, options);
      sessions.set(name, entry);
      // A session that failed to open is forgotten, so the next request tries again.
      entry.opening.catch(() => {
        if (sessions.get(name) === entry) sessions.delete(name);
      });
      return entry.opening;
    },
    async closeSession(name) {
      const entry = sessions.get(name);
      if (entry === undefined) return;
      sessions.delete(name);
      await closeEntry(name, entry);
    },
    shutdown() {
      shuttingDown ??= (async () => {
        const entries = [...sessions.entries()];
        sessions.clear();
        await within(Promise.allSettled(entries.map(([name, e]) => closeEntry(name, e))), 5000 + SESSION_CLOSE_SLACK_MS);
        await within(pool.close(), tuning.shutdownGraceMs + 4000);
        await closeAllStdioTransports();
        killAllStdioTransportGroups();
      })();
      return shuttingDown;
    },
  };
  return app;
}

function buildModel(config: ServeConfig, env: Env): RunModel {
  const m = config.model;
  if (m.provider === "openai") {
    return { kind: "chat", chat: createOpenAiModel(m, { env }), maxTurns: m.max_turns, timeoutMs: m.timeout_ms };
  }
  return { kind: "command", config: m, timeoutMs: m.timeout_ms };
}

/** How long a run may take at most (the EOF drain bound in stdio mode). */
export function runBoundMs(config: ServeConfig): number {
  return config.model.timeout_ms;
}

/** The flags of `vigil serve`, as citty hands them over (strings, unvalidated). */
export interface ServeFlags {
  config?: string | undefined;
  "state-dir"?: string | undefined;
  session?: string | undefined;
  listen?: string | undefined;
  "session-idle-timeout"?: string | undefined;
  "mcp-events-callback-url"?: string | undefined;
  "mcp-events-session"?: string | undefined;
  "mcp-events-reapable"?: boolean | undefined;
}

const MAX_IDLE_TIMEOUT_SECS = 365 * 24 * 3600;
export const DEFAULT_IDLE_TIMEOUT_SECS = 3600;

/**
 * Validates the flags (usage errors, exit 2, before anything is loaded), starts the app and runs
 * the mode. `--mcp-events-callback-url` is validated here; webhook delivery is not part of this
 * version, so it turns nothing on yet.
 */
export async function runServe(flags: ServeFlags): Promise<number> {
  const { parseListen } = await import("./daemon/listen.ts");
  const listen = flags.listen === undefined ? null : parseListen(flags.listen);
  if (listen !== null && flags.session !== undefined) {
    throw usageError("--session names the stdio session; with --listen, clients name sessions in the URL");
  }
  const session = flags.session ?? "default";
  if (!isValidSessionName(session)) throw usageError(`--session: ${validateNameMessage(session)}`);
  const idle = flags["session-idle-timeout"];
  if (idle !== undefined && (!/^[0-9]{1,10}$/.test(idle) || Number(idle) > MAX_IDLE_TIMEOUT_SECS)) {
    throw usageError(`--session-idle-timeout: expected whole seconds from 0 to ${MAX_IDLE_TIMEOUT_SECS} (0 = never)`);
  }
  const callback = flags["mcp-events-callback-url"];
  if (callback !== undefined) {
    if (listen === null) throw usageError("--mcp-events-callback-url requires --listen");
    if (!URL.canParse(callback) || !/^https?:$/.test(new URL(callback).protocol)) {
      throw usageError("--mcp-events-callback-url: expected an http(s) URL (the public base that routes to the listener)");
    }
  }
  const eventsSession = flags["mcp-events-session"];
  if (eventsSession !== undefined && !isValidSessionName(eventsSession)) {
    throw usageError(`--mcp-events-session: ${validateNameMessage(eventsSession)}`);
  }

  const { runStdioMode } = await import("./stdio-mode.ts");
  const { runDaemonMode } = await import("./daemon/run.ts");
  // A signal while the servers are still connecting must not kill us before they can be swept.
  let early: number | null = null;
  const offs = Object.entries(EARLY_SIGNALS).map(([name, signo]) => {
    const handler = () => void (early ??= signo);
    process.on(name, handler);
    return () => process.off(name, handler);
  });
  let app: ServeApp;
  try {
    app = await startServeApp({
      config: flags.config,
      stateDir: flags["state-dir"],
      events: {
        // In stdio mode the only session owns the configured subscriptions.
        owner: listen === null ? session : (eventsSession ?? DEFAULT_EVENTS_SESSION),
        reapable: flags["mcp-events-reapable"] === true,
      },
    });
  } finally {
    for (const off of offs) off();
  }
  if (early !== null) {
    await app.shutdown();
    return 128 + early;
  }
  if (listen === null) return runStdioMode(app, { session });
  return runDaemonMode(app, { listen, idleTimeoutSecs: idle === undefined ? DEFAULT_IDLE_TIMEOUT_SECS : Number(idle) });
}

const EARLY_SIGNALS = { SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as const;

function validateNameMessage(name: string): string {
  const shown = name.length <= 80 && /^[\x20-\x7e]*$/.test(name) ? JSON.stringify(name) : `(${name.length} characters)`;
  return `invalid session name ${shown}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'`;
}
