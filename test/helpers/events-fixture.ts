/**
 * Helpers for tests that use the MCP Events fixture server (test/fixtures/servers/events-fixture.ts):
 *
 *   - `startEventsFixture()` spawns it in HTTP mode in its own process group and returns its URLs
 *     and a control client;
 *   - `eventsFixtureStdio()` prepares a stdio server entry (command, args, env) for a vigil serve
 *     config, since vigil itself starts stdio servers; `waitControl()` then finds its control API.
 *
 * Every wait is bounded. Everything started is killed by the given `Cleanups` and, as a last
 * resort, when the test process exits.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Cleanups } from "./serve.ts";
import { tmpDir, waitForFile } from "./fixture.ts";

export const EVENTS_FIXTURE = resolve(import.meta.dir, "../fixtures/servers/events-fixture.ts");

/** The fixture's switches (see the header of events-fixture.ts); `true` becomes "1", `false` is left out. */
export interface EventsFixtureEnv {
  MCP_FIXTURE_CAPABILITY?: "top" | "extensions" | "both" | "none";
  MCP_FIXTURE_NO_EVENTS?: boolean;
  MCP_FIXTURE_ERRORS?: "sketch" | "sep";
  MCP_FIXTURE_RESULT_TYPE?: boolean;
  MCP_FIXTURE_SESSION?: boolean;
  MCP_FIXTURE_PORT?: number;
  MCP_FIXTURE_NEXT_POLL_MS?: number;
  MCP_FIXTURE_HEARTBEAT_MS?: number;
  MCP_FIXTURE_LIST_PAGE_SIZE?: number;
  MCP_FIXTURE_LIST_LOOP?: boolean;
  MCP_FIXTURE_LIST_DELAY_MS?: number;
  MCP_FIXTURE_HASMORE_EMPTY?: boolean;
  MCP_FIXTURE_HASMORE_DUPS?: boolean;
  MCP_FIXTURE_LONG_POLL?: boolean;
  MCP_FIXTURE_REPLAY_INCLUSIVE?: boolean;
  MCP_FIXTURE_KEY_ORDER?: "params_first";
  MCP_FIXTURE_FORBID_FIRST?: number;
  MCP_FIXTURE_NESTED_DURING?: "poll" | "stream";
  MCP_FIXTURE_EVENTS_DOWN?: boolean;
  MCP_FIXTURE_GARBAGE_STDOUT?: boolean;
  MCP_FIXTURE_IGNORE_CANCEL?: boolean;
  MCP_FIXTURE_LOG_FILE?: string;
  /** Webhook switches (HTTP only). */
  MCP_FIXTURE_ALLOW_HTTP_CALLBACK?: boolean;
  MCP_FIXTURE_MAX_TTL_MS?: number;
  MCP_FIXTURE_ALLOW_NO_EXPIRY?: boolean;
  MCP_FIXTURE_VERIFY_VIA_WELL_KNOWN?: boolean;
  MCP_FIXTURE_UNSUBSCRIBE_IDEMPOTENT?: boolean;
  MCP_FIXTURE_CURSORLESS?: boolean;
  /** 64 hex characters: the Ed25519 seed of the published JWKS and the `v1a,` signatures. */
  MCP_FIXTURE_ED25519_SEED?: string;
  /** Comma-separated waits between attempts in ms (default "200,400,800"; "" = no retry). */
  MCP_FIXTURE_WEBHOOK_RETRY_MS?: string;
}

/** One webhook subscription the fixture holds (removed once unsubscribed, deleted by a 410, or terminated). */
export interface FixtureHook {
  id: string;
  principal: string;
  url: string;
  name: string;
  project: string | null;
  refreshes: number;
  /** Every `whsec_` secret seen, oldest first (the last one is current). */
  secrets: string[];
  /** null: no expiry. */
  ttl_granted_ms: number | null;
  refresh_before: string | null;
  expired: boolean;
}

/** One delivery attempt (events, redeliveries, backlog, gap and terminated envelopes). */
export interface FixtureDelivery {
  /** The webhook-id: the eventId, or msg_<type>_<random> for an envelope. */
  event_id: string;
  url: string;
  /** 0: no HTTP answer (network error, timeout, or a stalled attempt the receiver closed without answering). */
  status: number;
  attempt: number;
  /** A /control/redeliver or a backlog replay after a fresh subscribe. */
  replay: boolean;
}

export interface FixtureState {
  pid: number;
  methods: string[];
  requests: { method: string; params: Record<string, unknown>; id: string | number }[];
  streams_open: number;
  streams_total: number;
  /** Every events/stream request in order (capped), with the heartbeats each one wrote. */
  streams: { id: string | number; name: string; project: string | null; cursor: unknown; end: string | null; heartbeats: number }[];
  cancelled: (string | number)[];
  /** notifications/cancelled received in all (`cancelled` keeps only the first 10,000 ids). */
  cancels: number;
  /** Of those (events-fixture/answers.ts): naming a request whose answer the client had provably read (a stray cancel), one still in flight (not answered, or its answer maybe on the way), one never seen. */
  cancels_after_answer: number;
  cancels_in_flight: number;
  cancels_unmatched: number;
  /** The id of the newest request received (any method; `requests` stops at 10,000). */
  last_request_id: string | number | null;
  /** /control/list_changed_on_poll was asked for and no poll has carried it yet. */
  list_changed_pending: boolean;
  /** list_changed notifications sent before poll answers. */
  list_changed_sent: number;
  disconnects: number;
  polls: number;
  /** Arrival time of each events/poll (the fixture's monotonic clock, ms), in order. */
  poll_times: number[];
  poll_cursors: (string | null)[];
  /** Heartbeats written on all streams so far. */
  heartbeats: number;
  log_size: number;
  last_seq: number;
  nested_answers: { id: string | number | null; result?: unknown; error?: unknown }[];
  list_calls: number;
  forbidden: number;
  down: boolean;
  silent: boolean;
  heartbeats_stopped: boolean;
  /** MCP sessions forgotten by /control/expire_sessions so far. */
  sessions_expired: number;
  hooks: FixtureHook[];
  /** The params of every events/unsubscribe received (capped). */
  unsubscribes: Record<string, unknown>[];
  /** Endpoint verifications, in order (a well-known miss falls back to a challenge). */
  verifications: { url: string; via: "challenge" | "well-known"; ok: boolean }[];
  /** Every webhook attempt, in order (capped at 10,000). */
  deliveries: FixtureDelivery[];
  jwks_requests: number;
  /** JWKS answers that stalled after the headers (/control/jwks {stall: true}). */
  jwks_stalled: number;
  /** Of those, the ones whose connection the client closed (the fixture's stall cut short). */
  jwks_stalls_closed: number;
}

/** What /control/emit and /control/redeliver answer once each hook's first attempt is done. */
export interface EmitAnswer {
  event_id: string;
  seq: number;
  deliveries: { url: string; status: number }[];
}

export interface ControlClient {
  /** http://127.0.0.1:<port> */
  controlUrl: string;
  /** POSTs to /control/<path> ("emit" or "/control/emit"); resolves with the JSON body, rejects on non-2xx. */
  control<T = Record<string, unknown>>(path: string, body?: unknown): Promise<T>;
  /** GET /control/state */
  state(): Promise<FixtureState>;
}

export interface EventsFixture extends ControlClient {
  /** http://127.0.0.1:<port>/mcp */
  mcpUrl: string;
  pid: number;
  /** What the fixture wrote on stderr so far. */
  stderr(): string;
  /** SIGKILLs the fixture's process group and waits (bounded) for it; idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: EventsFixtureEnv;
  /** Only HTTP mode is started here; for stdio see `eventsFixtureStdio`. */
  stdio?: false;
  cleanups?: Cleanups;
  /** Bound on the wait for the first stdout line (default 10 s). */
  timeoutMs?: number;
}

const CONTROL_TIMEOUT_MS = 10_000;
const STDERR_KEEP = 256 * 1024;

/** pgids (HTTP mode) and pids (stdio mode, started by someone else) still to kill on exit. */
const liveGroups = new Set<number>();
const livePids = new Set<number>();
process.on("exit", () => {
  for (const pgid of liveGroups) signal(-pgid);
  for (const pid of livePids) if (isEventsFixture(pid)) signal(pid);
});

function signal(target: number): void {
  try {
    process.kill(target, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Guards a pid-based kill against pid reuse: only a process running the fixture is killed. */
function isEventsFixture(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("events-fixture");
  } catch {
    return false;
  }
}

export function fixtureEnvStrings(env: EventsFixtureEnv = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || value === false) continue;
    out[key] = value === true ? "1" : String(value);
  }
  return out;
}

export function controlClient(controlUrl: string): ControlClient {
  const call = async <T>(path: string, init: RequestInit): Promise<T> => {
    const route = path.startsWith("/control/") ? path : `/control/${path.replace(/^\//, "")}`;
    const res = await fetch(`${controlUrl}${route}`, { ...init, signal: AbortSignal.timeout(CONTROL_TIMEOUT_MS) });
    const text = await res.text();
    if (!res.ok) throw new Error(`events-fixture ${route}: HTTP ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
  return {
    controlUrl,
    control: (path, body = {}) =>
      call(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    state: () => call<FixtureState>("state", { method: "GET" }),
  };
}

/** Starts the fixture in HTTP mode; resolves once it printed its URLs. */
export async function startEventsFixture(o: StartOptions = {}): Promise<EventsFixture> {
  const timeoutMs = o.timeoutMs ?? 10_000;
  const proc = Bun.spawn([process.execPath, EVENTS_FIXTURE], {
    // stdin stays open for the fixture's lifetime: if this process dies, EOF makes the fixture exit.
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    env: { ...process.env, ...fixtureEnvStrings(o.env), MCP_FIXTURE_EXIT_ON_STDIN_EOF: "1" },
  });
  liveGroups.add(proc.pid);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    signal(-proc.pid);
    liveGroups.delete(proc.pid);
    await Promise.race([proc.exited, Bun.sleep(5_000)]);
  };
  o.cleanups?.add(stop);

  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) {
      stderr = (stderr + decoder.decode(chunk, { stream: true })).slice(-STDERR_KEEP);
    }
  })().catch(() => {});

  let urls: { mcp: string; control: string };
  try {
    urls = JSON.parse(await firstLine(proc.stdout, proc.exited, timeoutMs));
  } catch (e) {
    await stop();
    throw new Error(`events-fixture did not start: ${e instanceof Error ? e.message : String(e)}\nstderr:\n${stderr}`);
  }
  return { ...controlClient(urls.control), mcpUrl: urls.mcp, pid: proc.pid, stderr: () => stderr, stop };
}

/** The first "\n"-terminated line of `stream`; rejects if the process exits or `ms` pass first. */
async function firstLine(stream: ReadableStream<Uint8Array>, exited: Promise<number>, ms: number): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no stdout line within ${ms} ms`)), ms);
  });
  const died = exited.then((code) => Promise.reject(new Error(`exited with code ${code} before printing its URLs`)));
  died.catch(() => {});
  try {
    for (;;) {
      const { value, done } = await Promise.race([reader.read(), deadline, died]);
      if (done) throw new Error("stdout closed before the first line");
      text += decoder.decode(value, { stream: true });
      const nl = text.indexOf("\n");
      if (nl !== -1) return text.slice(0, nl);
    }
  } finally {
    clearTimeout(timer);
    // Later stdout is not needed; keep draining so the fixture never blocks on a full pipe.
    reader.releaseLock();
    void stream.pipeTo(new WritableStream()).catch(() => {});
  }
}

export interface StdioFixtureEntry {
  /** For a vigil serve `mcp_servers` entry: `{name, transport: "stdio", command, args, env}`. */
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the fixture will write its control URL once vigil started it. */
  controlFile: string;
}

export interface StdioOptions {
  env?: Omit<EventsFixtureEnv, "MCP_FIXTURE_PORT" | "MCP_FIXTURE_SESSION">;
  /** Default: a file in a fresh temp dir, removed by `cleanups`. */
  controlFile?: string;
  cleanups?: Cleanups;
}

/** A stdio server entry that starts the fixture with `--stdio`; nothing is started here. */
export function eventsFixtureStdio(o: StdioOptions = {}): StdioFixtureEntry {
  let controlFile = o.controlFile;
  if (controlFile === undefined) {
    const dir = tmpDir("vigil-events-fixture");
    o.cleanups?.add(() => dir.cleanup());
    controlFile = dir.file("control-url");
  }
  return {
    command: process.execPath,
    args: [EVENTS_FIXTURE, "--stdio"],
    env: { ...fixtureEnvStrings(o.env), MCP_FIXTURE_CONTROL_FILE: controlFile },
    controlFile,
  };
}

/**
 * Waits (bounded) for a stdio fixture started by someone else to write its control file, then
 * returns a control client. Its pid is SIGKILLed by `cleanups` (and on exit) in case the process
 * that started it did not end it.
 */
export async function waitControl(
  controlFile: string,
  o: { timeoutMs?: number; cleanups?: Cleanups } = {},
): Promise<ControlClient & { pid: number }> {
  const url = (await waitForFile(controlFile, o.timeoutMs ?? 10_000)).trim();
  const client = controlClient(url);
  const { pid } = await client.state();
  livePids.add(pid);
  o.cleanups?.add(() => {
    livePids.delete(pid);
    if (isEventsFixture(pid)) signal(pid);
  });
  return { ...client, pid };
}
