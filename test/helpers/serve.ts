/**
 * Helpers for end-to-end tests of `vigil serve` against the compiled binary: the serve config with
 * the mock model and the stdio fixture server, the daemon (`--listen 127.0.0.1:0`), commands over
 * POST, and a minimal SSE reader. Every wait is bounded. (`Cleanups` lives in cleanups.ts.)
 *
 * Shared by every test/e2e/serve-*.test.ts file.
 */
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { type MockModel, type RecordedRequest, startMockModel } from "../fixtures/mock-model.ts";
import { VIGIL_BIN, vigilEnv } from "./bin.ts";
import { Cleanups } from "./cleanups.ts";
import { LineClient, fixtureArgv, procStat, tmpDir } from "./fixture.ts";
import { waitFor } from "./wait.ts";

export type Frame = Record<string, unknown> & { type: string; seq: number };

export { Cleanups };

/** afterEach safety net: the fixture server's group (found through its grandchild) is SIGKILLed. */
export function killServerGroup(grandchildFile: string): void {
  if (!existsSync(grandchildFile)) return;
  const pgrp = procStat(Number(readFileSync(grandchildFile, "utf8").trim()))?.pgrp;
  if (pgrp !== undefined && pgrp > 1) {
    try {
      process.kill(-pgrp, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

export interface ServeEnv {
  dir: string;
  configFile: string;
  stateDir: string;
  grandchildFile: string;
  model: MockModel;
}

export interface ServeEnvOptions {
  /** The `model` entry (default: openai against the mock model, timeout 20 s). */
  model?: (mock: MockModel) => Record<string, unknown>;
  /** Start the stdio fixture server as MCP server `fx` (default true). */
  fixture?: boolean;
  systemPrompt?: string;
  prefix?: string;
}

/** A temp dir, the mock model, and a serve config (openai → mock model, MCP server `fx` = the stdio fixture). */
export async function serveEnvironment(cleanups: Cleanups, o: ServeEnvOptions = {}): Promise<ServeEnv> {
  const tmp = tmpDir(o.prefix ?? "vigil-serve-e2e");
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.add(() => model.close());
  const grandchildFile = tmp.file("grandchild.pid");
  const config: Record<string, unknown> = {
    model: o.model?.(model) ?? { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 20_000 },
  };
  if (o.systemPrompt !== undefined) config.system_prompt = o.systemPrompt;
  if (o.fixture ?? true) {
    const [command, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: grandchildFile });
    config.mcp_servers = [{ name: "fx", transport: "stdio", command, args }];
    cleanups.add(() => killServerGroup(grandchildFile));
  }
  const configFile = tmp.file("vigil.json");
  writeFileSync(configFile, JSON.stringify(config));
  return { dir: tmp.path, configFile, stateDir: tmp.file("state"), grandchildFile, model };
}

export interface Daemon {
  client: LineClient;
  base: string;
}

/**
 * The daemon's readiness line, in either log format: `vigil serve listening http://HOST:PORT` as a
 * text line, or that same text as the `msg` of a JSON line (`--log-format json`), where the URL
 * ends at the closing quote. Group 1 is the URL.
 */
export const LISTENING_LINE = /vigil serve listening (http:\/\/[^\s"]+)/;

/** Waits (bounded) for a daemon's readiness line on its stderr; resolves with the URL it names. */
export async function listeningUrl(client: LineClient, timeoutMs = 20_000): Promise<string> {
  await client.waitForStderr("vigil serve listening http://", timeoutMs);
  return LISTENING_LINE.exec(client.stderrText())![1]!;
}

/** `vigil serve --listen 127.0.0.1:0` with `processEnv` (default `vigilEnv()`); resolves once it printed its listening line. */
export async function startDaemon(
  cleanups: Cleanups,
  env: Pick<ServeEnv, "configFile" | "stateDir">,
  extra: string[] = [],
  processEnv: Record<string, string | undefined> = vigilEnv(),
): Promise<Daemon> {
  const client = new LineClient(
    [VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0", ...extra],
    { env: processEnv },
  );
  cleanups.add(() => client.dispose());
  return { client, base: await listeningUrl(client) };
}

/** SIGTERM, and waits (bounded) for the exit status. */
export async function stopDaemon(d: Daemon, timeoutMs = 15_000) {
  process.kill(d.client.pid, "SIGTERM");
  return d.client.exited(timeoutMs);
}

export const post = (d: Daemon, session: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${d.base}/v1/sessions/${session}/commands`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });

export interface ResponseFrame extends Frame {
  id: string | number;
  command: string | null;
  success: boolean;
  data?: Record<string, unknown>;
  error?: { code: string; message: string };
}

/** POSTs one command; resolves with the HTTP status and the parsed JSON body. */
export async function command(d: Daemon, session: string, cmd: Record<string, unknown>): Promise<{ status: number; body: ResponseFrame }> {
  const res = await post(d, session, cmd);
  return { status: res.status, body: (await res.json()) as ResponseFrame };
}

export interface HealthBody {
  ok: boolean;
  reasons: string[];
  sessions: number;
  max_sessions: number;
  version: string;
}

export async function health(d: Daemon): Promise<{ status: number; body: HealthBody }> {
  const res = await fetch(`${d.base}/v1/health`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as HealthBody };
}

/** A minimal SSE reader: frames (`event: frame`) and comments, each wait bounded. */
export class SseReader {
  readonly frames: Frame[] = [];
  /** Problems seen while parsing (an `id:` that is not the frame's seq, bad JSON). */
  readonly problems: string[] = [];
  comments = 0;
  closed = false;
  private readonly controller = new AbortController();
  private buffer = "";

  static async open(cleanups: Cleanups, url: string): Promise<SseReader> {
    const r = new SseReader();
    const res = await fetch(url, { signal: r.controller.signal });
    if (res.status !== 200) throw new Error(`SSE ${url}: HTTP ${res.status} ${await res.text()}`);
    if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) throw new Error(`SSE ${url}: not an event stream`);
    void r.pump(res.body!);
    cleanups.add(() => r.close());
    await waitFor(() => r.comments > 0 || r.frames.length > 0, { timeoutMs: 10_000, label: `SSE ${url}: a first comment or frame` });
    return r;
  }

  /** Frames up to and including the first that matches. */
  async until(done: (f: Frame) => boolean, ms = 15_000): Promise<Frame[]> {
    await waitFor(() => this.frames.some(done), { timeoutMs: ms, label: "SSE: a matching frame", show: () => `got ${this.frameTypes()}` });
    return this.frames.slice(0, this.frames.findIndex(done) + 1);
  }

  /** Frames up to and including the n-th that matches. */
  async untilNth(done: (f: Frame) => boolean, n: number, ms = 15_000): Promise<Frame[]> {
    await waitFor(() => this.frames.filter(done).length, {
      until: (seen) => seen >= n,
      timeoutMs: ms,
      label: `SSE: ${n} matching frames`,
      show: (seen) => `${seen} matching; got ${this.frameTypes()}`,
    });
    let seen = 0;
    return this.frames.slice(0, this.frames.findIndex((f) => done(f) && ++seen === n) + 1);
  }

  close(): void {
    this.controller.abort();
  }

  private frameTypes(): string {
    return JSON.stringify(this.frames.map((f) => f.type));
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buffer += decoder.decode(chunk, { stream: true });
        for (let end = this.buffer.indexOf("\n\n"); end !== -1; end = this.buffer.indexOf("\n\n")) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          if (block.startsWith(":")) this.comments++;
          const lines = block.split("\n").filter((l) => !l.startsWith(":"));
          const fields = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]));
          if (fields.event !== "frame") continue;
          try {
            const frame = JSON.parse(fields.data!) as Frame;
            if (Number(fields.id) !== frame.seq) this.problems.push(`id ${fields.id} != seq ${frame.seq}`);
            this.frames.push(frame);
          } catch (e) {
            this.problems.push(`bad frame data: ${String(e)}`);
          }
        }
      }
    } catch {
      // aborted
    } finally {
      this.closed = true;
    }
  }
}

/** The SSE frames URL of a session, optionally replaying from `since`. */
export const framesUrl = (base: string, session: string, since?: number) =>
  `${base}/v1/sessions/${session}/frames${since === undefined ? "" : `?since=${since}`}`;

export const isRunEnd = (f: Frame) => f.type === "run_end";
export const isRunStart = (f: Frame) => f.type === "run_start";

let prompts = 0;
/** POSTs a prompt to `session` and waits (bounded) for its run to end ok on `sse`, that session's stream. */
export async function promptAndWait(d: Daemon, sse: SseReader, session: string, message: string, ms = 15_000): Promise<void> {
  const ends = sse.frames.filter(isRunEnd).length;
  const r = await command(d, session, { type: "prompt", id: `p${++prompts}`, message });
  expect(r.body.success).toBe(true);
  const frames = await sse.untilNth(isRunEnd, ends + 1, ms);
  expect(frames.at(-1)).toMatchObject({ type: "run_end", status: "ok", run_id: r.body.data!.run_id });
}

/** The chat messages of a recorded mock-model request. */
export function messagesOf(req: RecordedRequest | undefined): { role: string; content: unknown }[] {
  if (req === undefined) throw new Error("no such model request");
  return (req.body as { messages: { role: string; content: unknown }[] }).messages;
}

/** `[role, content]` of the user and assistant text messages of a request (system, tool calls and tool results left out). */
export function conversationOf(req: RecordedRequest | undefined): [string, unknown][] {
  return messagesOf(req)
    .filter((m) => (m.role === "user" || m.role === "assistant") && typeof m.content === "string")
    .map((m) => [m.role, m.content]);
}

/** The content of the last user message of a request (what the step functions decide on). */
export function lastUserText(req: RecordedRequest): string {
  const users = messagesOf(req).filter((m) => m.role === "user");
  const c = users.at(-1)?.content;
  return typeof c === "string" ? c : JSON.stringify(c ?? "");
}

/** A promise with its resolver, for steps that hold a model request until the test says so. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
