/**
 * McpServerPool against real servers: the project's stdio fixture server, a tiny stdio server that
 * advertises a top-level `events` capability, and the npm server-everything over streamable HTTP.
 * Waits are bounded; timing is never asserted; every pool is closed and every process group
 * SIGKILLed after each test (the HTTP server's group after the file).
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { resolve } from "node:path";
import type { Subprocess } from "bun";
import { cappedFetch } from "../../src/mcp/http-connection.ts";
import { McpServerPool } from "../../src/mcp/server-pool.ts";
import type { McpServerConfig } from "../../src/serve/config/schema.ts";
import { groupAlive } from "../../src/shared/process-group.ts";
import { countedSignal } from "../helpers/counted-signal.ts";
import { fixtureArgv, waitUntil } from "../helpers/fixture.ts";

const EVERYTHING = resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const PIN_SERVER = resolve(import.meta.dir, "../fixtures/servers/pin-server.ts");
const EVENTS_SERVER = resolve(import.meta.dir, "../fixtures/servers/events-capability-server.ts");
const CLIENT_INFO = { name: "vigil-test", version: "1.0.0" };
const CAP = 64 * 1024;

const pools: McpServerPool[] = [];
const groups: number[] = [];
let http: Subprocess<"ignore", "pipe", "pipe"> | null = null;
let httpUrl = "";

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close();
  for (const pgid of groups.splice(0)) killGroup(pgid);
});

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response("") });
  const port = server.port!;
  server.stop(true);
  return port;
}

beforeAll(async () => {
  const port = freePort();
  http = Bun.spawn(["node", EVERYTHING, "streamableHttp"], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", PORT: String(port) },
  });
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of http!.stderr) stderr += decoder.decode(chunk, { stream: true });
  })().catch(() => {});
  void (async () => {
    for await (const _ of http!.stdout) {
      // drained so the server never blocks on a full pipe
    }
  })().catch(() => {});
  const ready = await waitUntil(() => stderr.includes("listening on port"), 15_000);
  if (!ready) throw new Error(`server-everything did not start: ${stderr}`);
  httpUrl = `http://127.0.0.1:${port}/mcp`;
});

afterAll(async () => {
  if (!http) return;
  killGroup(http.pid);
  await Promise.race([http.exited, Bun.sleep(5000)]);
});

function fixtureConfig(name: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  const [command, ...args] = fixtureArgv();
  return { name, transport: "stdio", command: command!, args, env: {}, events: [], ...extra } as McpServerConfig;
}

function httpConfig(name: string, headers: Record<string, string> = {}): McpServerConfig {
  return { name, transport: "http", url: httpUrl, headers, events: [] };
}

async function connect(configs: McpServerConfig[]): Promise<McpServerPool> {
  const pool = await McpServerPool.connect(configs, { clientInfo: CLIENT_INFO, maxMessageBytes: CAP, graceMs: 300, connectTimeoutMs: 15_000 });
  pools.push(pool);
  return pool;
}

/** Process-group ids of the pool's stdio servers (their leader pids). */
function stdioGroups(pool: McpServerPool): number[] {
  const out = pool.stdioProcessGroups();
  groups.push(...out);
  return out;
}

function textOf(result: { content?: unknown }): string {
  const content = (result.content ?? []) as { type: string; text?: string }[];
  return content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

test("lists qualified tools from a stdio and an HTTP server and calls each", async () => {
  const pool = await connect([fixtureConfig("fx"), httpConfig("every", { "X-Test-Token": "secret-header-value" })]);
  stdioGroups(pool);
  expect(pool.status("fx")?.state).toBe("connected");
  expect(pool.status("every")?.state).toBe("connected");

  const tools = await pool.listTools();
  const names = tools.map((t) => t.qualifiedName);
  expect(names).toContain("fx__echo");
  expect(names).toContain("fx__big");
  expect(names).toContain("every__echo");
  expect(names).toContain("every__get-sum");
  for (const t of tools) {
    expect(t.qualifiedName).toBe(`${t.server}__${t.tool}`);
    expect(t.qualifiedName).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(typeof t.inputSchema).toBe("object");
  }
  const echo = tools.find((t) => t.qualifiedName === "fx__echo")!;
  expect(echo).toMatchObject({ server: "fx", tool: "echo", description: "Returns the given text unchanged." });

  const fx = await pool.callTool("fx__echo", { text: "hello" });
  expect(fx.isError).toBeFalsy();
  expect(textOf(fx)).toBe("hello");
  const every = await pool.callTool("every__echo", { message: "over http" });
  expect(every.isError).toBeFalsy();
  expect(textOf(every)).toContain("over http");
});

test("tool calls made under one long-lived signal leave no listener on it (each call has its own, released when it settles)", async () => {
  const pool = await connect([fixtureConfig("fx")]);
  stdioGroups(pool);
  const { controller, listeners } = countedSignal();
  for (let i = 0; i < 20; i++) {
    const r = await pool.callTool("fx__echo", { text: `call ${i}` }, { signal: controller.signal });
    expect(textOf(r)).toBe(`call ${i}`);
  }
  expect(listeners()).toBe(0);
});

test("an over-cap result becomes an isError result and the next call works", async () => {
  const pool = await connect([fixtureConfig("fx")]);
  stdioGroups(pool);
  const big = await pool.callTool("fx__big", { bytes: CAP * 2 });
  expect(big.isError).toBe(true);
  expect(textOf(big)).toContain(`response larger than ${CAP} bytes`);
  const next = await pool.callTool("fx__echo", { text: "still here" });
  expect(next.isError).toBeFalsy();
  expect(textOf(next)).toBe("still here");
  expect(pool.status("fx")?.state).toBe("connected");
});

test("an over-cap result over HTTP becomes an isError result and the next call works", async () => {
  const pool = await connect([httpConfig("every")]);
  // server-everything echoes the message back: an echo of more than the cap comes back over it.
  const big = await pool.callTool("every__echo", { message: "y".repeat(CAP + 10) });
  expect(big.isError).toBe(true);
  expect(textOf(big)).toContain(`response larger than ${CAP} bytes`);
  const next = await pool.callTool("every__get-sum", { a: 2, b: 3 });
  expect(next.isError).toBeFalsy();
  expect(textOf(next)).toContain("5");
});

test("server errors and unknown tools become isError results", async () => {
  const pool = await connect([fixtureConfig("fx")]);
  stdioGroups(pool);
  const unknownTool = await pool.callTool("fx__nope", {});
  expect(unknownTool.isError).toBe(true);
  expect(textOf(unknownTool)).toContain("unknown tool");
  const unknownServer = await pool.callTool("zz__echo", {});
  expect(unknownServer.isError).toBe(true);
  expect(textOf(unknownServer)).toContain("unknown tool");
  expect(textOf(await pool.callTool("fx__echo", { text: "ok" }))).toBe("ok");
});

test("a server whose command does not exist is reconnecting while the other works", async () => {
  const pool = await connect([
    { name: "ghost", transport: "stdio", command: "/nonexistent/vigil-no-such-server", args: [], env: {}, events: [] },
    fixtureConfig("fx"),
  ]);
  stdioGroups(pool);
  const ghost = pool.status("ghost");
  // Down, and retried with backoff for as long as the pool is open.
  expect(ghost?.state).toBe("reconnecting");
  expect(ghost?.error?.length).toBeGreaterThan(0);
  expect(ghost?.error).not.toContain("\n");
  expect(pool.status("fx")?.state).toBe("connected");
  expect(pool.rawInitializeResult("ghost")).toBeUndefined();
  const names = (await pool.listTools()).map((t) => t.qualifiedName);
  expect(names.some((n) => n.startsWith("ghost__"))).toBe(false);
  expect(names).toContain("fx__echo");
  const call = await pool.callTool("ghost__anything", {});
  expect(call.isError).toBe(true);
  expect(textOf(call)).toContain(`MCP server "ghost" is reconnecting`);
  expect(textOf(await pool.callTool("fx__echo", { text: "alive" }))).toBe("alive");
});

test("an unreachable HTTP server is reconnecting without its headers in the reason", async () => {
  const port = freePort();
  const pool = await connect([
    { name: "down", transport: "http", url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: "Bearer tok-very-secret" }, events: [] },
    fixtureConfig("fx"),
  ]);
  stdioGroups(pool);
  const down = pool.status("down");
  expect(down?.state).toBe("reconnecting");
  expect(down?.error).toBeDefined();
  expect(down?.error).not.toContain("tok-very-secret");
  expect(pool.status("fx")?.state).toBe("connected");
});

test("rawInitializeResult keeps a top-level capability the SDK strips", async () => {
  const pool = await connect([
    { name: "ev", transport: "stdio", command: process.execPath, args: [EVENTS_SERVER], env: {}, events: [] },
    httpConfig("every"),
  ]);
  stdioGroups(pool);
  expect(pool.status("ev")?.state).toBe("connected");
  const raw = pool.rawInitializeResult("ev");
  expect(raw?.capabilities).toEqual({ tools: {}, events: { modes: ["poll", "push"], listChanged: true } });
  expect((raw?.serverInfo as { name?: string }).name).toBe("events-capability-server");
  // What the pool hands out is a copy.
  (raw!.capabilities as Record<string, unknown>).events = null;
  expect((pool.rawInitializeResult("ev")?.capabilities as Record<string, unknown>).events).toBeDefined();
  // The HTTP server's raw result is kept as well.
  expect(pool.rawInitializeResult("every")?.capabilities).toBeDefined();
  expect((await pool.listTools()).map((t) => t.qualifiedName)).toContain("ev__ping");
  expect(textOf(await pool.callTool("ev__ping", {}))).toBe("pong");
});

test("close() leaves no process of the stdio groups and is idempotent", async () => {
  const pool = await connect([fixtureConfig("a"), fixtureConfig("b"), httpConfig("every")]);
  const pgids = stdioGroups(pool);
  expect(pgids.length).toBe(2);
  for (const pgid of pgids) expect(groupAlive(pgid)).toBe(true);
  await pool.close();
  await pool.close();
  expect(await waitUntil(() => pgids.every((pgid) => !groupAlive(pgid)), 5000)).toBe(true);
  expect(pool.status("a")?.state).toBe("closed");
  const after = await pool.callTool("a__echo", { text: "x" });
  expect(after.isError).toBe(true);
});

test("listTools follows nextCursor pages and skips a tool whose name is not a function name", async () => {
  const pool = await connect([{ name: "pin", transport: "stdio", command: process.execPath, args: [PIN_SERVER], env: {}, events: [] }]);
  stdioGroups(pool);
  expect(pool.status("pin")?.state).toBe("connected");
  const tools = await pool.listTools();
  // Two pages: "read_file", then "delete file" (a space: not offered to the model).
  expect(tools.map((t) => t.qualifiedName)).toEqual(["pin__read_file"]);
  expect(tools[0]!.description).toBe("Read a file from the workspace");
});

test("an over-cap JSON answer announced by Content-Length is replaced without being read", async () => {
  const server = Bun.serve({
    port: 0,
    fetch: () => new Response(JSON.stringify({ jsonrpc: "2.0", id: 7, result: { pad: "z".repeat(CAP * 2) } }), {
      headers: { "content-type": "application/json" },
    }),
  });
  try {
    const guarded = cappedFetch((url, init) => fetch(url, init), CAP);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "x" } });
    const response = await guarded(`http://127.0.0.1:${server.port}/mcp`, { method: "POST", body });
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 7, error: { code: -32000, message: `response larger than ${CAP} bytes` } });
    const small = await cappedFetch((url, init) => fetch(url, init), CAP * 4)(`http://127.0.0.1:${server.port}/mcp`, { method: "POST", body });
    expect(((await small.json()) as { result: { pad: string } }).result.pad.length).toBe(CAP * 2);
  } finally {
    server.stop(true);
  }
});
