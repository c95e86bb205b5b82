/**
 * End-to-end helpers for the MCP Events tests of `vigil serve` (test/e2e/events-*.test.ts): the
 * events fixture (HTTP, or stdio started by vigil), the in-process mock model, a serve config,
 * the daemon or a stdio serve with fast knobs, and readers of the events state on disk.
 * Every wait is bounded; everything started is ended by the given `Cleanups`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { E2E_KNOBS, VIGIL_BIN, vigilEnv } from "./bin.ts";
import {
  type EventsFixture,
  type EventsFixtureEnv,
  type StdioFixtureEntry,
  eventsFixtureStdio,
  startEventsFixture,
} from "./events-fixture.ts";
import { LineClient, tmpDir } from "./fixture.ts";
import { type Cleanups, type Daemon, type Frame, lastUserText, listeningUrl } from "./serve.ts";
import { waitFor } from "./wait.ts";

/** Knobs that make the events timings test-sized (each test may override). */
export const FAST_KNOBS: Record<string, string> = {
  ...E2E_KNOBS,
  VIGIL_EVENTS_POLL_FLOOR_MS: "100",
  VIGIL_EVENTS_COALESCE_MS: "300",
  VIGIL_EVENTS_RETRY_CAP_MS: "500",
};

export interface EventsEnv {
  dir: string;
  configFile: string;
  stateDir: string;
  model: MockModel;
  /** The HTTP fixture (null when only a stdio fixture is configured). */
  fixture: EventsFixture | null;
  /** The environment vigil runs with (process env + FAST_KNOBS + the test's knobs). */
  env: Record<string, string | undefined>;
  /** Rewrites the config (e.g. before a restart). */
  writeConfig(servers: Record<string, unknown>[]): void;
}

export interface EventsEnvOptions {
  /** Start the HTTP fixture with these switches (default: started with none); false = no HTTP fixture. */
  fixtureEnv?: EventsFixtureEnv | false;
  /** `mcp_servers` of the config, built once the fixture is up. */
  servers: (fixture: EventsFixture | null) => Record<string, unknown>[];
  /** Extra environment for vigil (knobs). */
  knobs?: Record<string, string>;
  /** The model entry (default: openai → the mock model, timeout 20 s). */
  modelTimeoutMs?: number;
  /** More top-level config members (e.g. `evidence`). */
  config?: Record<string, unknown>;
}

export async function eventsEnvironment(cleanups: Cleanups, o: EventsEnvOptions): Promise<EventsEnv> {
  const tmp = tmpDir("vigil-events-e2e");
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.add(() => model.close());
  const fixture = o.fixtureEnv === false ? null : await startEventsFixture({ env: o.fixtureEnv ?? {}, cleanups });
  const configFile = tmp.file("vigil.json");
  const writeConfig = (servers: Record<string, unknown>[]) => {
    const config = {
      model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: o.modelTimeoutMs ?? 20_000 },
      mcp_servers: servers,
      ...(o.config ?? {}),
    };
    writeFileSync(configFile, JSON.stringify(config));
  };
  writeConfig(o.servers(fixture));
  return {
    dir: tmp.path,
    configFile,
    stateDir: tmp.file("state"),
    model,
    fixture,
    env: vigilEnv({ ...FAST_KNOBS, ...(o.knobs ?? {}) }),
    writeConfig,
  };
}

/** A config entry for the HTTP fixture. */
export function httpServer(fixture: EventsFixture, name: string, events?: Record<string, unknown>[]): Record<string, unknown> {
  return { name, transport: "http", url: fixture.mcpUrl, ...(events !== undefined ? { events } : {}) };
}

/** A config entry that makes vigil start the fixture over stdio. */
export function stdioServer(entry: StdioFixtureEntry, name: string, events?: Record<string, unknown>[]): Record<string, unknown> {
  return { name, transport: "stdio", command: entry.command, args: entry.args, env: entry.env, ...(events !== undefined ? { events } : {}) };
}

export { eventsFixtureStdio };

/**
 * An events environment whose one MCP server is the events fixture over stdio, started by vigil as
 * `name`; the fixture keeps its event log in a file, so a fixture vigil restarts serves the same cursors.
 */
export async function stdioFixtureEnvironment(
  cleanups: Cleanups,
  name: string,
  events: Record<string, unknown>[],
  knobs?: Record<string, string>,
): Promise<{ env: EventsEnv; entry: StdioFixtureEntry }> {
  const tmp = tmpDir("vigil-events-stdio-e2e");
  cleanups.add(() => tmp.cleanup());
  const entry = eventsFixtureStdio({ env: { MCP_FIXTURE_LOG_FILE: tmp.file("events.log") }, cleanups });
  const env = await eventsEnvironment(cleanups, { fixtureEnv: false, servers: () => [stdioServer(entry, name, events)], ...(knobs ? { knobs } : {}) });
  return { env, entry };
}

/**
 * `vigil serve --listen <listen>` (default 127.0.0.1:0) with the environment's knobs; resolves once listening.
 * `vigil` is the argv prefix (default the binary; SERVE_FROM_SOURCE for a test-only seam).
 */
export async function startEventsDaemon(
  cleanups: Cleanups,
  env: EventsEnv,
  extra: string[] = [],
  vigil: readonly string[] = [VIGIL_BIN],
  listen = "127.0.0.1:0",
): Promise<Daemon> {
  const client = new LineClient(
    [...vigil, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", listen, ...extra],
    { env: env.env },
  );
  cleanups.add(() => client.dispose());
  // From source, serve takes longer to start than the binary.
  return { client, base: await listeningUrl(client, 30_000) };
}

/** `vigil serve` in stdio mode: NDJSON commands in, frames out. */
export class StdioServe {
  readonly frames: Frame[] = [];
  /** Settles once serve's stdout has ended and every frame on it is in `frames`. */
  readonly ended: Promise<void>;
  private constructor(readonly client: LineClient) {
    this.ended = this.pump();
  }

  /** `vigil` is the argv prefix (default the binary; SERVE_FROM_SOURCE for a test-only seam). */
  static start(cleanups: Cleanups, env: EventsEnv, session = "s", extra: string[] = [], vigil: readonly string[] = [VIGIL_BIN]): StdioServe {
    const client = new LineClient(
      [...vigil, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--session", session, ...extra],
      { env: env.env },
    );
    cleanups.add(() => client.dispose());
    return new StdioServe(client);
  }

  send(command: Record<string, unknown>): void {
    this.client.send(command);
  }

  /** Waits (bounded) for a frame matching `done`; returns it. */
  async until(done: (f: Frame) => boolean, ms = 15_000): Promise<Frame> {
    await waitFor(() => this.frames.some(done), {
      timeoutMs: ms,
      label: "stdio serve: a matching frame",
      show: () => `got ${JSON.stringify(this.frames.map((f) => f.type + (f.kind ? `:${f.kind}` : "")))}\nstderr:\n${this.client.stderrText()}`,
    });
    return this.frames.find(done)!;
  }

  /** Sends a command and waits for its response. */
  async command(cmd: Record<string, unknown>, ms = 25_000): Promise<Frame & { success: boolean; data?: any; error?: { code: string; message: string } }> {
    this.send(cmd);
    return (await this.until((f) => f.type === "response" && f.id === cmd.id, ms)) as never;
  }

  count(done: (f: Frame) => boolean): number {
    return this.frames.filter(done).length;
  }

  private async pump(): Promise<void> {
    for (;;) {
      const line = await this.client.next(3_600_000);
      if (line === null) return;
      try {
        this.frames.push(JSON.parse(line) as Frame);
      } catch {
        // not a frame: the tests look at frames only
      }
    }
  }
}

const sessionDir = (stateDir: string, session: string) => join(stateDir, "sessions", session);

/** Live pending entries on disk (adds minus dones), in seq order. */
export function pendingOnDisk(stateDir: string, session: string): { seq: number; event: Record<string, unknown> }[] {
  const file = join(sessionDir(stateDir, session), "mcp-events.log");
  if (!existsSync(file)) return [];
  const live = new Map<number, { seq: number; event: Record<string, unknown> }>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    let record: { add?: { seq: number; event: Record<string, unknown> }; done?: number[] };
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    if (record.add) live.set(record.add.seq, record.add);
    for (const seq of record.done ?? []) live.delete(seq);
  }
  return [...live.values()].sort((a, b) => a.seq - b.seq);
}

/** The snapshot on disk, or null. */
export function snapshotOnDisk(stateDir: string, session: string): { subscriptions: Record<string, { cursor: string | null; recent: string[]; runtime?: unknown }>; last_client_ms: number | null } | null {
  const file = join(sessionDir(stateDir, session), "mcp-events.json");
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
}

/**
 * Each subscription's cursor and dedup window as a restart would start from them: the snapshot, then
 * the pending log's `position` records above the one it covers, in file order (serve's positions;
 * written here from the documented format, not with vigil's code). Ledger gating is not modelled:
 * for sessions without evidence.
 */
export function durableSubscriptions(stateDir: string, session: string): Record<string, { cursor: string | null; recent: string[] }> {
  const snapshot = snapshotOnDisk(stateDir, session) as { position?: number; subscriptions: Record<string, { cursor: string | null; recent: string[] }> } | null;
  const subs = structuredClone(snapshot?.subscriptions ?? {});
  const file = join(sessionDir(stateDir, session), "mcp-events.log");
  if (!existsSync(file)) return subs;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    let record: { position?: { n: number; key: string; cursor: string | null; seen: string[]; whole?: boolean } };
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    const p = record.position;
    if (p === undefined || p.n <= (snapshot?.position ?? 0) || subs[p.key] === undefined) continue;
    const sub = subs[p.key]!;
    sub.cursor = p.cursor;
    sub.recent = (p.whole === true ? p.seen : [...sub.recent, ...p.seen]).slice(-1024);
  }
  return subs;
}

export function eventsFilesExist(stateDir: string, session: string): boolean {
  const dir = sessionDir(stateDir, session);
  return existsSync(join(dir, "mcp-events.json")) || existsSync(join(dir, "mcp-events.log"));
}

/** How many model requests carried `needle` in their last user message (one per run that saw it first). */
export function runsFor(model: MockModel, needle: string): number {
  return model.requests.filter((r) => r.path.endsWith("/chat/completions") && lastUserText(r).includes(needle)).length;
}

/** Waits (bounded) until `runsFor(model, needle) >= n`. */
export async function waitRuns(model: MockModel, needle: string, n = 1, ms = 15_000): Promise<void> {
  await waitFor(() => runsFor(model, needle), {
    until: (runs) => runs >= n,
    timeoutMs: ms,
    label: `${n} model requests with ${JSON.stringify(needle)}`,
    show: (runs) => `${runs} requests`,
  });
}

/** The daemon's session that owns the configured subscriptions (default `--mcp-events-session`). */
export const EVENTS_SESSION = "mcp-events";

/** What identifies one event in the model-visible batch text (exact: "e-1" is not "e-10"). */
export const inBatch = (eventId: string) => `event_id="${eventId}"`;

export const isEventFrame = (id: string) => (f: Frame) => f.type === "mcp_event" && (f.event as { eventId?: string } | undefined)?.eventId === id;
export const isStatus = (kind: string) => (f: Frame) => f.type === "mcp_event_status" && f.kind === kind;
