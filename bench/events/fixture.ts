/**
 * The events fixture (test/fixtures/servers/events-fixture.ts) as the events harnesses drive it —
 * its control API and the HTTP fixture as a child — and a reader of vigil's pending log, shared by
 * bench/events/run.ts and bench/events/metrics-overhead.ts.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Child, spawnChild, waitLine } from "../children.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
export const FIXTURE = join(ROOT, "test/fixtures/servers/events-fixture.ts");
const START_MS = 20_000;

/** The knobs of an ingestion run: poll as fast as the fixture answers, hand nothing on early, never refuse for a full queue. */
export const THROUGHPUT_KNOBS: Readonly<Record<string, string>> = {
  VIGIL_EVENTS_POLL_FLOOR_MS: "1",
  VIGIL_EVENTS_COALESCE_MS: "0",
  VIGIL_EVENTS_MAX_PENDING: "1000000",
  VIGIL_EVENTS_MAX_PENDING_BYTES: String(1024 * 1024 * 1024),
};

export interface FixtureState {
  pid: number;
  polls: number;
  streams_open: number;
  streams_total: number;
  last_seq: number;
}

export interface Control {
  url: string;
  pid: number;
  post(route: string, body?: unknown): Promise<Record<string, unknown>>;
  state(): Promise<FixtureState>;
}

export async function control(url: string): Promise<Control> {
  const call = async (path: string, init: RequestInit) => {
    const res = await fetch(`${url}/control/${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`fixture ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const state = async () => (await call("state", { method: "GET" })) as unknown as FixtureState;
  const { pid } = await state();
  return {
    url,
    pid,
    post: (route, body = {}) => call(route, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    state,
  };
}

/** The HTTP fixture, as a child of ours (it exits when our pipe to its stdin closes). */
export async function startHttpFixture(env: Record<string, string>): Promise<{ child: Child; mcpUrl: string; control: Control }> {
  const child = spawnChild("events fixture", [BUN, FIXTURE], { env: { ...env, MCP_FIXTURE_EXIT_ON_STDIN_EOF: "1" } });
  const m = await waitLine(child, /^(\{.*"mcp".*\})$/, START_MS);
  const urls = JSON.parse(m[1]!) as { mcp: string; control: string };
  return { child, mcpUrl: urls.mcp, control: await control(urls.control) };
}


/** Counts the `add` records of an append-only JSON Lines log, reading only what was appended since. */
export class LogTail {
  adds = 0;
  private offset = 0;
  private carry = "";
  private fd: number | null = null;
  private readonly buf = Buffer.alloc(1 << 20);

  constructor(private readonly path: string) {}

  poll(): number {
    if (this.fd === null) {
      if (!existsSync(this.path)) return this.adds;
      this.fd = openSync(this.path, "r");
    }
    const size = fstatSync(this.fd).size;
    while (this.offset < size) {
      const n = readSync(this.fd, this.buf, 0, Math.min(this.buf.length, size - this.offset), this.offset);
      if (n <= 0) break;
      this.offset += n;
      const text = this.carry + this.buf.toString("latin1", 0, n);
      const last = text.lastIndexOf("\n");
      const complete = last === -1 ? "" : text.slice(0, last);
      this.carry = text.slice(last + 1);
      if (complete === "") continue;
      for (const line of complete.split("\n")) if (line.startsWith('{"add"')) this.adds++;
    }
    return this.adds;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

