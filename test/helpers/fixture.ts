/**
 * Helpers for tests that drive stdio processes line by line: the fixture server, `vigil wrap`, or
 * anything else that speaks newline-delimited JSON-RPC. Every wait here is bounded.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { WaitTimeoutError, waitFor } from "./wait.ts";

export const FIXTURE_SERVER = resolve(import.meta.dir, "../fixtures/servers/fixture-server.ts");

/** Switches understood by the fixture server (see its header). */
export interface FixtureEnv {
  FIXTURE_RECORD?: string;
  FIXTURE_EXIT_AFTER?: number;
  FIXTURE_EXIT_CODE?: number;
  FIXTURE_SELF_KILL_AFTER?: number;
  FIXTURE_IGNORE_EOF?: boolean;
  FIXTURE_IGNORE_SIGTERM?: boolean;
  FIXTURE_EXIT_ON_EOF_CODE?: number;
  FIXTURE_GRANDCHILD?: string;
  FIXTURE_GARBAGE?: boolean;
  FIXTURE_ID_FIRST?: boolean;
  FIXTURE_ANSWER_MARKERS?: boolean;
  /** `<count>x<bytes>`: that many extra tools with descriptions of that size. */
  FIXTURE_BULK_TOOLS?: string;
}

/**
 * argv that starts the fixture server with the given switches. The switches travel in argv through
 * `env(1)` rather than in the environment, so a proxy under test passes them on without the test
 * touching the proxy's own environment; `env` execs, so the server keeps the leader's pid.
 */
export function fixtureArgv(fixtureEnv: FixtureEnv = {}): string[] {
  const assignments: string[] = [];
  for (const [key, value] of Object.entries(fixtureEnv)) {
    if (value === undefined || value === false) continue;
    assignments.push(`${key}=${value === true ? "1" : String(value)}`);
  }
  const server = [process.execPath, FIXTURE_SERVER];
  return assignments.length === 0 ? server : ["/usr/bin/env", ...assignments, ...server];
}

/** The lines the fixture server recorded (FIXTURE_RECORD), without their "\n". */
export function readRecord(file: string): string[] {
  const text = readFileSync(file, "utf8");
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Resolves with the file's contents once it exists and is non-empty; rejects after `ms`. */
export function waitForFile(path: string, ms: number): Promise<string> {
  return waitFor(() => (existsSync(path) ? readFileSync(path, "utf8") : ""), { timeoutMs: ms, label: `waitForFile: ${path} to appear` });
}

/** Resolves true once `done()` holds, false after `ms` (for `expect(await waitUntil(…)).toBe(true)`). */
export async function waitUntil(done: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  try {
    await waitFor(done, { timeoutMs: ms, label: "waitUntil" });
    return true;
  } catch (e) {
    if (e instanceof WaitTimeoutError) return false;
    throw e;
  }
}

export interface ProcStat {
  state: string;
  ppid: number;
  pgrp: number;
}

/** Linux /proc/<pid>/stat fields, or null when the process does not exist. */
export function procStat(pid: number): ProcStat | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  // The command name is parenthesised and may itself contain spaces or ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0] ?? "?", ppid: Number(fields[1]), pgrp: Number(fields[2]) };
}

/**
 * A zombie counts as dead: it has exited, and in containers whose PID 1 does not reap, a killed
 * orphan stays a zombie forever while kill(pid, 0) still succeeds.
 */
export function isProcessAlive(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== null && stat.state !== "Z" && stat.state !== "X";
}

export interface TmpDir extends Disposable {
  path: string;
  /** A path inside the directory (not created). */
  file(name: string): string;
  cleanup(): void;
}

export function tmpDir(prefix: string): TmpDir {
  const path = mkdtempSync(join(tmpdir(), prefix.endsWith("-") ? prefix : `${prefix}-`));
  const cleanup = () => rmSync(path, { recursive: true, force: true });
  return { path, file: (name) => join(path, name), cleanup, [Symbol.dispose]: cleanup };
}

export interface JsonRpcResponse {
  jsonrpc: "2.0";
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface LineClientOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Own process group (default true), so `killGroup` reaches grandchildren and not the test runner. */
  detached?: boolean;
}

export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

const STDERR_KEEP_BYTES = 1024 * 1024;

/** A newline-delimited JSON-RPC client over a spawned process's stdin/stdout. One reader at a time. */
export class LineClient {
  readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  /** Lines `request()` skipped while looking for its response (notifications, other ids). */
  readonly unmatched: string[] = [];
  private readonly lines: string[] = [];
  private waiter: (() => void) | undefined;
  private stdoutClosed = false;
  private stderr = "";
  private nextId = 1;

  constructor(argv: string[], options: LineClientOptions = {}) {
    this.proc = Bun.spawn(argv, {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      detached: options.detached ?? true,
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    void this.pumpStdout();
    void this.pumpStderr();
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** An object is sent as one JSON line; a string or bytes are written exactly as given (no "\n" added). */
  send(message: object | string | Uint8Array): void {
    const data = typeof message === "string" || message instanceof Uint8Array ? message : `${JSON.stringify(message)}\n`;
    this.proc.stdin.write(data);
    this.proc.stdin.flush();
  }

  /** The next stdout line without its "\n"; null once stdout has closed. Rejects after `timeoutMs`. */
  async next(timeoutMs = 5000): Promise<string | null> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) return line;
      if (this.stdoutClosed) return null;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`LineClient.next: no stdout line within ${timeoutMs} ms`);
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        this.waiter = () => {
          clearTimeout(timer);
          wake();
        };
      });
      this.waiter = undefined;
    }
  }

  /** Sends a request with a fresh numeric id and resolves with the response carrying that id. */
  async request(method: string, params?: object, timeoutMs = 5000): Promise<JsonRpcResponse> {
    const id = this.nextId++;
    this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const line = await this.next(Math.max(1, deadline - performance.now()));
      if (line === null) throw new Error(`LineClient.request(${method}): stdout closed before the response`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = undefined;
      }
      if (isResponseTo(parsed, id)) return parsed;
      this.unmatched.push(line);
    }
  }

  closeStdin(): void {
    try {
      this.proc.stdin.end();
    } catch {
      // already closed: the process may have exited
    }
  }

  /** Resolves with how the process ended; rejects if it is still running after `timeoutMs`. */
  async exited(timeoutMs = 5000): Promise<ExitStatus> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`LineClient: pid ${this.pid} still running after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.proc.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return { code: this.proc.exitCode, signal: signalName(this.proc.signalCode) };
  }

  /** Everything the process wrote on stderr so far (the last 1 MiB). */
  stderrText(): string {
    return this.stderr;
  }

  /** Resolves once stderr contains `marker`; rejects after `timeoutMs`. */
  async waitForStderr(marker: string, timeoutMs = 5000): Promise<void> {
    await waitFor(() => this.stderr, {
      until: (stderr) => stderr.includes(marker),
      timeoutMs,
      label: `LineClient: ${JSON.stringify(marker)} on stderr`,
      show: (stderr) => `stderr:\n${stderr}`,
    });
  }

  /** Signals the whole process group (needs `detached`); false when the group is gone. */
  killGroup(signal: NodeJS.Signals = "SIGKILL"): boolean {
    try {
      process.kill(-this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** For afterEach: closes stdin, SIGKILLs the group, waits (bounded) for the leader to go. */
  async dispose(timeoutMs = 5000): Promise<void> {
    this.closeStdin();
    this.killGroup("SIGKILL");
    await this.exited(timeoutMs).catch(() => undefined);
  }

  private wake(): void {
    this.waiter?.();
  }

  /** An unterminated tail is not a line under stdio framing, so it is never delivered. */
  private async pumpStdout(): Promise<void> {
    const decoder = new TextDecoder();
    let partial: Uint8Array[] = [];
    try {
      for await (const chunk of this.proc.stdout) {
        let start = 0;
        for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
          partial.push(chunk.subarray(start, nl));
          this.lines.push(decoder.decode(partial.length === 1 ? partial[0] : Buffer.concat(partial)));
          partial = [];
          start = nl + 1;
        }
        if (start < chunk.length) partial.push(chunk.slice(start));
        this.wake();
      }
    } catch {
      // the pipe broke: treated like EOF
    } finally {
      this.stdoutClosed = true;
      this.wake();
    }
  }

  private async pumpStderr(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.proc.stderr) {
        this.stderr += decoder.decode(chunk, { stream: true });
        if (this.stderr.length > STDERR_KEEP_BYTES) this.stderr = this.stderr.slice(-STDERR_KEEP_BYTES);
      }
    } catch {
      // the pipe broke: nothing more to collect
    }
  }
}

/** Bun may report a signal by number; tests compare names. */
function signalName(signal: string | number | null): string | null {
  if (typeof signal !== "number") return signal;
  const entry = Object.entries(constants.signals).find(([, n]) => n === signal);
  return entry ? entry[0] : `signal ${signal}`;
}

function isResponseTo(value: unknown, id: number): value is JsonRpcResponse {
  return typeof value === "object" && value !== null && (value as { id?: unknown }).id === id && !("method" in value);
}
