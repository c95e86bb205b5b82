/**
 * What the modes of `vigil serve` (stdio-mode.ts, daemon/) see of the app: the `ServeApp`
 * interface. The modes depend on this, not on the wiring in app.ts, so app.ts imports no mode and
 * no mode imports app.ts (issue 10: the circle between them is gone).
 */
import type { Env } from "./config/env.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { ServeTuning } from "./config/tuning.ts";
import type { ServerState } from "./daemon/health.ts";
import type { EventsService } from "./events-service.ts";
import type { ServeStopReason } from "./session-evidence.ts";
import type { SessionEndedListener } from "./session-faults.ts";
import type { Session } from "./session/session.ts";
import type { FrameListener } from "./session/types.ts";

export interface ServeAppOptions {
  /** `--config` (undefined: `$VIGIL_CONFIG`, then ./vigil.json). */
  config?: string | undefined;
  /** `--state-dir` (undefined: XDG default). */
  stateDir?: string | undefined;
  env?: Env;
  /**
   * stdio mode's session: its state (transcript, events state, decision log) is opened before any
   * MCP server starts, so a refusal starts nothing; `openSession` of this name then takes it over.
   */
  firstSession?: string | undefined;
  /**
   * The session that owns the configured event subscriptions (default: the events service's),
   * whether the reaper may end live subscriptions, and `--mcp-events-callback-url` (daemon mode:
   * webhook delivery).
   */
  events?: { owner?: string | undefined; reapable: boolean; callbackUrl?: URL | null };
  /** `--transcript-retain-bytes` (default 1 GiB). */
  transcriptRetainBytes?: number;
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
  /** The config in force (a reload replaces its policy path and `mcp_servers`). */
  readonly config: ServeConfig;
  readonly stateDir: string;
  readonly tuning: ServeTuning;
  readonly version: string;
  /** How long a run may take at most (the model's `timeout_ms`; the EOF drain bound in stdio mode). */
  readonly runBoundMs: number;
  /** The MCP Events client (hubs per session, configured-subscription owner, boot sessions). */
  readonly events: EventsService;
  /** The idle reaper must leave this session alone (live subscriptions or pending events). */
  keepsAlive(name: string): boolean;
  /** Each configured MCP server's state (for `/v1/health`). */
  serverStates(): ServerState[];
  /** A session that failed (an unexpected exception) was closed; `restart`: it must come back (session-faults.ts). */
  onSessionEnded(listener: SessionEndedListener): () => void;
  /** Names of the sessions currently open. */
  sessionNames(): string[];
  /** The open session of that name, or a new one (one Session per name; concurrent callers share it). */
  openSession(name: string, options?: OpenOptions): Promise<Session>;
  /** Closes one session and its evidence; `reason` is what its stop statement names (default "closed"; the idle reaper: "reaped"). */
  closeSession(name: string, reason?: ServeStopReason): Promise<void>;
  /**
   * Reloads the policy, `mcp_servers` and configured subscriptions from the config file (SIGHUP in
   * daemon mode; reload.ts): refused with one log line when invalid. Serialized: resolves once a
   * reload that started after this call ended. Never rejects; does nothing once shutdown began.
   */
  reload(): Promise<void>;
  /** Closes every session, the pool and every stdio group; bounded; idempotent; never rejects. */
  shutdown(): Promise<void>;
}
