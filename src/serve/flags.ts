/**
 * The flags of `vigil serve` (serve.md, synopsis and §1): SERVE_FLAGS is their one declaration
 * (commands/serve.ts hands it to citty, which renders `--help` from it), `parseServeArgs` scans the
 * argv strictly against it and `planServe` turns the values into what main.ts runs. Pure: nothing
 * is read or started here, so every refusal is a usage error (exit 2) before anything is loaded.
 *
 * Decision (issue 11 item 12): serve scans like wrap and verify (shared/flags.ts). An unknown
 * flag, a stray argument and a value flag given twice are refused — before, citty's lenient parse
 * let a typo such as `--lisen 8080` start stdio mode. `--no-mcp-events-reapable` stays accepted
 * (citty's negation of a switch); `--no-listen` and the like are unknown flags.
 */
import { usageError } from "../shared/errors.ts";
import { type FlagTable, type FlagValues, flagRefusal, scanFlags } from "../shared/flags.ts";
import type { Env } from "./config/env.ts";
import { METRICS_ENV, metricsSetting } from "./config/tuning.ts";
import { type ListenAddress, isLoopbackHost, parseListen } from "./daemon/listen.ts";
import { isValidSessionName } from "./state/paths.ts";
import { parseRetainBytes } from "./state/transcript-retain.ts";

export const SERVE_FLAGS = {
  config: { type: "string", description: "Config file (default $VIGIL_CONFIG, then ./vigil.json)", valueHint: "FILE" },
  "state-dir": { type: "string", description: "State directory (default $XDG_STATE_HOME/vigil)", valueHint: "DIR" },
  session: { type: "string", description: "stdio mode: the session name (default: default)", valueHint: "NAME" },
  listen: { type: "string", description: "Daemon mode: serve HTTP on HOST:PORT (a bare PORT binds 127.0.0.1); SIGHUP reloads policy and mcp_servers", valueHint: "HOST:PORT" },
  "metrics-listen": { type: "string", description: "Daemon: serve /metrics on this loopback HOST:PORT instead of on --listen", valueHint: "HOST:PORT" },
  "session-idle-timeout": { type: "string", description: "Daemon: reap sessions idle this long (default 3600, 0 = never)", valueHint: "SECS" },
  "max-sessions": { type: "string", description: "Daemon: open sessions at most; past it a new one gets 503 (default 1000)", valueHint: "N" },
  "transcript-retain-bytes": { type: "string", description: "Keep at most this much of each session's transcript; older segments are deleted (default 1 GiB)", valueHint: "BYTES" },
  "mcp-events-callback-url": { type: "string", description: "MCP Events: public base URL routing to the listener (needs --listen)", valueHint: "URL" },
  "mcp-events-session": { type: "string", description: "MCP Events: the daemon session owning configured subscriptions", valueHint: "NAME" },
  "mcp-events-reapable": { type: "boolean", description: "MCP Events: let the idle reaper end sessions with live subscriptions" },
  "check-config": { type: "boolean", description: "Check config, knobs, policy, keys and state dir with the other flags, print a summary, exit 0 (valid) or 2; starts nothing" },
  json: { type: "boolean", description: "With --check-config: print the summary as one JSON object" },
  "log-format": { type: "string", description: "stderr lines: text (default) or json, one object a line (default $VIGIL_LOG_FORMAT)", valueHint: "text|json" },
} as const satisfies FlagTable;

/** The flags as the scan found them (strings and switch states, not yet validated), typed from SERVE_FLAGS. */
export type ServeFlags = FlagValues<typeof SERVE_FLAGS>;

/** Scans the arguments that follow `serve`: serve takes flags only, so every other argument is refused. */
export function parseServeArgs(rawArgs: readonly string[]): ServeFlags {
  return scanFlags(SERVE_FLAGS, rawArgs, {
    positional: (arg) => {
      throw usageError(`serve: unexpected argument ${JSON.stringify(arg)} (serve takes flags only; see vigil serve --help)`);
    },
    refuse: (problem) => usageError(flagRefusal("serve", problem)),
  });
}


const MAX_IDLE_TIMEOUT_SECS = 365 * 24 * 3600;
export const DEFAULT_IDLE_TIMEOUT_SECS = 3600;
export const DEFAULT_MAX_SESSIONS = 1000;
const MAX_MAX_SESSIONS = 1_000_000;

export type ServeMode =
  | { kind: "stdio"; session: string }
  | { kind: "daemon"; listen: ListenAddress; idleTimeoutSecs: number; maxSessions: number; metricsListen: ListenAddress | null };

/** What `vigil serve` runs: where its config and state are, who owns the configured subscriptions, and the mode. */
export interface ServePlan {
  /** `--config` (undefined: `$VIGIL_CONFIG`, then ./vigil.json; the loader refuses an empty one). */
  config: string | undefined;
  /** `--state-dir` (undefined: XDG default). */
  stateDir: string | undefined;
  /** The session owning the configured event subscriptions; undefined: the events service's default. */
  eventsOwner: string | undefined;
  /** Whether the idle reaper may end sessions with live subscriptions. */
  eventsReapable: boolean;
  /** `--transcript-retain-bytes` (default 1 GiB). */
  transcriptRetainBytes: number;
  /** `--mcp-events-callback-url` (daemon mode only): the public base routing to the listener; null turns webhook delivery off. */
  callbackUrl: URL | null;
  /** `--check-config` (check-config.ts): judge everything, print the summary (`--json`: as JSON), start nothing; null: run. */
  check: { json: boolean } | null;
  /** Whether the metrics registry is kept and served: daemon mode, unless `VIGIL_METRICS=off`. */
  metrics: boolean;
  mode: ServeMode;
}

/**
 * Validates the flags, in a fixed order (the first refusal wins). `--mcp-events-callback-url` may
 * carry a path (the receiver then serves `<path>/_vigil/mcp-events/<token>`); `http://` stays
 * accepted (loopback tests, private networks). A query or fragment is refused: the token is
 * appended to the path.
 */
export function planServe(flags: ServeFlags, env: Env = process.env): ServePlan {
  const listen = flags.listen === undefined ? null : parseListen(flags.listen);
  const metricsListen = parseMetricsListen(flags["metrics-listen"], listen !== null, env);
  if (listen !== null && flags.session !== undefined) {
    throw usageError("--session names the stdio session; with --listen, clients name sessions in the URL");
  }
  const session = flags.session ?? "default";
  if (!isValidSessionName(session)) throw usageError(`--session: ${invalidNameMessage(session)}`);
  const idle = flags["session-idle-timeout"];
  if (idle !== undefined && (!/^[0-9]{1,10}$/.test(idle) || Number(idle) > MAX_IDLE_TIMEOUT_SECS)) {
    throw usageError(`--session-idle-timeout: expected whole seconds from 0 to ${MAX_IDLE_TIMEOUT_SECS} (0 = never)`);
  }
  const maxSessions = parseMaxSessions(flags["max-sessions"], listen !== null);
  const transcriptRetainBytes = parseRetainBytes(flags["transcript-retain-bytes"]);
  const callback = flags["mcp-events-callback-url"];
  if (callback !== undefined) {
    if (listen === null) throw usageError("--mcp-events-callback-url requires --listen");
    if (!URL.canParse(callback) || !/^https?:$/.test(new URL(callback).protocol)) {
      throw usageError("--mcp-events-callback-url: expected an http(s) URL (the public base that routes to the listener)");
    }
    const url = new URL(callback);
    if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
      throw usageError("--mcp-events-callback-url: expected a base URL without user info, query or fragment (the callback token is appended to its path)");
    }
  }
  const eventsSession = flags["mcp-events-session"];
  if (eventsSession !== undefined && !isValidSessionName(eventsSession)) {
    throw usageError(`--mcp-events-session: ${invalidNameMessage(eventsSession)}`);
  }
  // --json is the check's output format; serve's own stdout carries frames (stdio) or nothing (daemon).
  if (flags.json === true && flags["check-config"] !== true) throw usageError("--json formats the --check-config summary: it requires --check-config");
  return {
    config: flags.config,
    stateDir: flags["state-dir"],
    // In stdio mode the only session owns the configured subscriptions.
    eventsOwner: listen === null ? session : eventsSession,
    eventsReapable: flags["mcp-events-reapable"] === true,
    transcriptRetainBytes,
    callbackUrl: callback === undefined ? null : new URL(callback),
    check: flags["check-config"] === true ? { json: flags.json === true } : null,
    // stdio mode has no listener to serve them on, so it keeps none.
    metrics: listen !== null && metricsSetting(env) !== false,
    mode: listen === null
      ? { kind: "stdio", session }
      : { kind: "daemon", listen, idleTimeoutSecs: idle === undefined ? DEFAULT_IDLE_TIMEOUT_SECS : Number(idle), maxSessions, metricsListen },
  };
}

/**
 * `--metrics-listen HOST:PORT` (issue 15 item 1): daemon mode only, a loopback host only — it is
 * the listener kept off the public front door, so a public address there is a mistake, refused.
 */
function parseMetricsListen(raw: string | undefined, daemon: boolean, env: Env): ListenAddress | null {
  if (raw === undefined) return null;
  if (!daemon) throw usageError("--metrics-listen moves the daemon's /metrics: it requires --listen");
  if (metricsSetting(env) === false) throw usageError(`--metrics-listen: metrics are off (${METRICS_ENV}=off); drop one or the other`);
  const address = parseListen(raw, "--metrics-listen");
  if (!isLoopbackHost(address.hostname)) {
    throw usageError(`--metrics-listen ${JSON.stringify(raw.slice(0, 80))}: not a loopback address`, "use 127.0.0.1:PORT, [::1]:PORT or localhost:PORT (put a proxy in front to expose it)");
  }
  return address;
}

/** `--max-sessions N` (issue 12 item F): daemon mode only; 1 to 1,000,000. */
function parseMaxSessions(raw: string | undefined, daemon: boolean): number {
  if (raw === undefined) return DEFAULT_MAX_SESSIONS;
  if (!daemon) throw usageError("--max-sessions caps the daemon's sessions: it requires --listen");
  if (!/^[0-9]{1,7}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_MAX_SESSIONS) {
    throw usageError(`--max-sessions: expected a whole number from 1 to ${MAX_MAX_SESSIONS}`);
  }
  return Number(raw);
}

function invalidNameMessage(name: string): string {
  const shown = name.length <= 80 && /^[\x20-\x7e]*$/.test(name) ? JSON.stringify(name) : `(${name.length} characters)`;
  return `invalid session name ${shown}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'`;
}
