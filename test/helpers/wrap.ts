/**
 * Helpers for end-to-end tests of `vigil wrap`: spawn the compiled binary (or the source) in front of
 * the fixture server, usually with a fresh capture directory, and read back what it wrote.
 *
 * Every session is registered so `disposeWrapSessions()` (call it from afterEach) kills vigil's group,
 * the server's group (the server leads its own group, so vigil's group does not reach it) and removes
 * the temp directory. Every wait is bounded.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  type FixtureEnv,
  type JsonRpcResponse,
  LineClient,
  type TmpDir,
  fixtureArgv,
  procStat,
  readRecord,
  tmpDir,
  waitUntil,
} from "./fixture.ts";
import { VIGIL_BIN } from "./bin.ts";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
/** The compiled binary under test (`bun scripts/build.ts --host`; VIGIL_BIN overrides). */
export { VIGIL_BIN };
/** Running vigil from source (not a release build: honours test-only seams). */
export const VIGIL_SOURCE = [process.execPath, join(REPO_ROOT, "src/cli.ts")];
export const EVENT_SOURCE = "vigil://test/e2e";
export const MCP_PROTOCOL_VERSION = "2025-11-25";

// Names of the files inside a capture directory (wrap.md §9): pinned here on purpose, independently
// of src/evidence/format.ts, so that renaming a file of the public format fails the tests.
export const CAPTURE = {
  manifest: "capture.json",
  context: "session-context.json",
  stop: "session-stop.json",
  decisions: "decisions.ndjson",
  receipts: "receipts.ndjson",
  serverStderr: "server-stderr.log",
} as const;

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export function readJson<T = any>(path: string): T {
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

/** The complete ("\n"-terminated) lines of an NDJSON file, parsed; a partial tail is left out. */
export function readNdjson<T = any>(path: string): T[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, "utf8").split("\n");
  lines.pop(); // "" after the last newline, or an unterminated tail
  return lines.map((l) => JSON.parse(l) as T);
}

/** A policy file in `dir`: an object is written as JSON (policy.json), a string as YAML (policy.yaml). */
export function writePolicy(dir: string, policy: object | string, name?: string): string {
  const path = join(dir, name ?? (typeof policy === "string" ? "policy.yaml" : "policy.json"));
  writeFileSync(path, typeof policy === "string" ? policy : JSON.stringify(policy));
  return path;
}

export interface WrapOptions {
  /** Written into the session's temp dir (writePolicy) and passed as `--policy FILE` (else --allow-all). */
  policy?: object | string;
  /** Flags placed before the capture-dir flags and "--" (default: --allow-all when no policy). */
  flags?: string[];
  /** Fixture switches; FIXTURE_RECORD defaults to `<tmp>/record.txt`. */
  fixture?: FixtureEnv;
  /** Default true: `--capture-dir <tmp>/capture --event-source EVENT_SOURCE`. */
  capture?: boolean;
  /** Default [VIGIL_BIN]. */
  vigil?: string[];
  /** The wrapped command; default fixtureArgv(fixture). */
  command?: string[];
  /** Environment of vigil itself (default: inherited). */
  env?: Record<string, string | undefined>;
}

const live = new Set<WrapSession>();

/** One `vigil wrap` child with its temp dir, capture dir and server record file. */
export class WrapSession {
  readonly tmp: TmpDir;
  readonly client: LineClient;
  readonly captureDir: string | null;
  readonly recordFile: string;
  readonly grandchildFile: string | undefined;
  readonly argv: string[];

  constructor(options: WrapOptions = {}, tmp: TmpDir = tmpDir("vigil-e2e")) {
    this.tmp = tmp;
    const fixture: FixtureEnv = { FIXTURE_RECORD: tmp.file("record.txt"), ...options.fixture };
    this.recordFile = fixture.FIXTURE_RECORD!;
    this.grandchildFile = fixture.FIXTURE_GRANDCHILD;
    const capture = options.capture ?? true;
    this.captureDir = capture ? tmp.file("capture") : null;
    const captureFlags = capture ? ["--capture-dir", this.captureDir!, "--event-source", EVENT_SOURCE] : [];
    const policyFlags = options.policy === undefined ? [] : ["--policy", writePolicy(tmp.path, options.policy)];
    const flags = options.flags ?? (options.policy === undefined ? ["--allow-all"] : []);
    this.argv = [
      ...(options.vigil ?? [VIGIL_BIN]),
      "wrap",
      ...policyFlags,
      ...flags,
      ...captureFlags,
      "--",
      ...(options.command ?? fixtureArgv(fixture)),
    ];
    this.client = new LineClient(this.argv, options.env ? { env: options.env } : {});
    live.add(this);
  }

  /** The wrapped server's pid, from its "fixture-server ready pid=N" stderr marker. */
  async serverPid(timeoutMs = 10_000): Promise<number> {
    await this.client.waitForStderr("fixture-server ready pid=", timeoutMs);
    return Number(/fixture-server ready pid=(\d+)/.exec(this.client.stderrText())![1]);
  }

  /** initialize + notifications/initialized; resolves with the initialize response. */
  async initialize(): Promise<JsonRpcResponse> {
    const response = await this.request("initialize", {
      protocolVersion: MCP_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "vigil-e2e", version: "1.0.0" },
    });
    this.client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return response;
  }

  /** client.request, with vigil's stderr in the error when no response comes. */
  async request(method: string, params?: object, timeoutMs = 10_000): Promise<JsonRpcResponse> {
    try {
      return await this.client.request(method, params, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nvigil stderr:\n${this.client.stderrText()}`);
    }
  }

  call(name: string, args: object = {}, timeoutMs = 10_000): Promise<JsonRpcResponse> {
    return this.request("tools/call", { name, arguments: args }, timeoutMs);
  }

  /** Closes vigil's stdin (client EOF) and waits for vigil to exit. */
  async finish(timeoutMs = 15_000) {
    this.client.closeStdin();
    return this.client.exited(timeoutMs);
  }

  /** Lines the server received (exact bytes, without "\n"). */
  record(): string[] {
    return existsSync(this.recordFile) ? readRecord(this.recordFile) : [];
  }

  /** Recorded lines that were tools/call requests. */
  recordedCalls(): any[] {
    return this.record()
      .map((l) => {
        try {
          return JSON.parse(l);
        } catch {
          return null;
        }
      })
      .filter((m) => m !== null && m.method === "tools/call");
  }

  capture(): Capture {
    if (this.captureDir === null) throw new Error("WrapSession: no capture dir");
    return readCapture(this.captureDir);
  }

  /** The grandchild's pid (FIXTURE_GRANDCHILD), once the fixture has written it. */
  async grandchildPid(timeoutMs = 10_000): Promise<number> {
    const file = this.grandchildFile;
    if (!file) throw new Error("WrapSession: no FIXTURE_GRANDCHILD");
    if (!(await waitUntil(() => existsSync(file), timeoutMs))) throw new Error(`grandchild pid file ${file} missing`);
    return Number(readFileSync(file, "utf8").trim());
  }

  /** Kills vigil's group and the server's group (which holds any grandchild), then removes the temp dir. */
  async dispose(): Promise<void> {
    live.delete(this);
    const groups = new Set<number>(childrenOf(this.client.pid));
    const marker = /fixture-server ready pid=(\d+)/.exec(this.client.stderrText())?.[1];
    if (marker !== undefined) groups.add(Number(marker));
    await this.client.dispose();
    for (const pgid of groups) killGroup(pgid);
    this.tmp.cleanup();
  }
}

/** Starts `vigil wrap` (default: --allow-all with a capture dir) in front of the fixture server. */
export function startWrap(options: WrapOptions = {}, tmp?: TmpDir): WrapSession {
  return new WrapSession(options, tmp);
}

/** For afterEach: ends every session started by this file's tests. */
export async function disposeWrapSessions(): Promise<void> {
  await Promise.all([...live].map((s) => s.dispose()));
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is gone
  }
}

/** Pids whose parent is `pid` (vigil's server is spawned as the leader of its own group). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (procStat(Number(entry))?.ppid === pid) children.push(Number(entry));
  }
  return children;
}

export interface Capture {
  dir: string;
  /** Names of the entries in the directory, sorted. */
  names: string[];
  stop: any | null;
  context: any | null;
  manifest: any | null;
  decisionsRaw: Buffer | null;
  decisions: any[];
  receipts: any[];
  serverStderr: string | null;
}

export function readCapture(dir: string): Capture {
  const at = (name: string) => join(dir, name);
  const json = (name: string) => (existsSync(at(name)) ? readJson(at(name)) : null);
  return {
    dir,
    names: existsSync(dir) ? readdirSync(dir).sort() : [],
    stop: json(CAPTURE.stop),
    context: json(CAPTURE.context),
    manifest: json(CAPTURE.manifest),
    decisionsRaw: existsSync(at(CAPTURE.decisions)) ? readFileSync(at(CAPTURE.decisions)) : null,
    decisions: readNdjson(at(CAPTURE.decisions)),
    receipts: readNdjson(at(CAPTURE.receipts)),
    serverStderr: existsSync(at(CAPTURE.serverStderr)) ? readFileSync(at(CAPTURE.serverStderr), "utf8") : null,
  };
}

/** The complete lines (each with its "\n") at the start of a log, and any partial tail after them. */
export function completeLines(bytes: Uint8Array): { complete: Buffer; count: number; tail: Buffer } {
  const buf = Buffer.from(bytes);
  const end = buf.lastIndexOf(0x0a) + 1;
  const complete = buf.subarray(0, end);
  let count = 0;
  for (const b of complete) if (b === 0x0a) count++;
  return { complete, count, tail: buf.subarray(end) };
}

export interface VigilRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Runs vigil to completion with stdin closed; rejects if it is still running after `timeoutMs`. */
export async function runVigil(
  args: string[],
  options: { vigil?: string[]; env?: Record<string, string | undefined>; timeoutMs?: number } = {},
): Promise<VigilRun> {
  const proc = Bun.spawn([...(options.vigil ?? [VIGIL_BIN]), ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    ...(options.env ? { env: options.env } : {}),
  });
  const timeoutMs = options.timeoutMs ?? 15_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // gone
      }
      reject(new Error(`runVigil: still running after ${timeoutMs} ms: ${args.join(" ")}`));
    }, timeoutMs);
  });
  try {
    const [stdout, stderr] = await Promise.race([
      Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]),
      timeout,
    ]);
    return { code: proc.exitCode, signal: proc.signalCode === null ? null : String(proc.signalCode), stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** RFC 8785 canonical JSON for plain data (sorted keys, ECMAScript number/string forms); independent of src. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
}
