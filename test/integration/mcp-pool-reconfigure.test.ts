/**
 * McpServerPool.reconfigure (a SIGHUP reload, serve/reload.ts) against the stdio fixture server:
 * a removed server's process group ends and its series leave the registry; a kept one is not
 * touched; a new server that cannot start does not hold the reconfigure (it is retried with
 * backoff); after close() a reconfigure starts nothing. Bounded waits, no timing asserted.
 */
import { afterEach, expect, test } from "bun:test";
import { McpServerPool } from "../../src/mcp/server-pool.ts";
import type { McpServerConfig } from "../../src/serve/config/schema.ts";
import { MCP, METRICS } from "../../src/shared/metrics/catalog.ts";
import { renderMetrics } from "../../src/shared/metrics/render.ts";
import { groupAlive } from "../../src/shared/process-group.ts";
import { fixtureArgv, waitUntil } from "../helpers/fixture.ts";

const pools: McpServerPool[] = [];
const groups: number[] = [];

afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close();
  for (const pgid of groups.splice(0)) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

function fixtureConfig(name: string): McpServerConfig {
  const [command, ...args] = fixtureArgv();
  return { name, transport: "stdio", command: command!, args, env: {}, events: [] } as McpServerConfig;
}

async function connect(configs: McpServerConfig[]): Promise<McpServerPool> {
  const pool = await McpServerPool.connect(configs, { clientInfo: { name: "vigil-test", version: "1.0.0" }, graceMs: 300, connectTimeoutMs: 15_000 });
  pools.push(pool);
  groups.push(...pool.stdioProcessGroups());
  return pool;
}

const series = (name: string) => renderMetrics(METRICS).split("\n").filter((l) => l.startsWith(`vigil_mcp_server_reconnects_total{server="${name}"}`));

test("a removed server: its group ends and its reconnect series is gone; the kept one keeps its connection and series", async () => {
  const pool = await connect([fixtureConfig("rc-keep"), fixtureConfig("rc-gone")]);
  const [keep, gone] = pool.stdioProcessGroups();
  expect(series("rc-gone")).toEqual(['vigil_mcp_server_reconnects_total{server="rc-gone"} 0']);
  await pool.reconfigure([fixtureConfig("rc-keep")], new Set());
  expect(await waitUntil(() => !groupAlive(gone!), 5000)).toBe(true);
  expect(groupAlive(keep!)).toBe(true);
  expect(pool.serverNames).toEqual(["rc-keep"]);
  expect(series("rc-gone")).toEqual([]);
  expect(series("rc-keep")).toEqual(['vigil_mcp_server_reconnects_total{server="rc-keep"} 0']);
  expect(MCP.reconnects.children.size).toBeGreaterThan(0);
});

test("a new server that cannot start: the reconfigure resolves, the server is reconnecting, the others serve", async () => {
  const pool = await connect([fixtureConfig("rc-a")]);
  await pool.reconfigure([fixtureConfig("rc-a"), { name: "rc-ghost", transport: "stdio", command: "/nonexistent/vigil-no-such-server", args: [], env: {}, events: [] }], new Set());
  expect(pool.status("rc-ghost")?.state).toBe("reconnecting");
  expect(pool.status("rc-a")?.state).toBe("connected");
});

test("after close(): a reconfigure starts nothing", async () => {
  const pool = await connect([fixtureConfig("rc-b")]);
  await pool.close();
  await pool.reconfigure([fixtureConfig("rc-b"), fixtureConfig("rc-c")], new Set(["rc-b"]));
  expect(pool.stdioProcessGroups()).toEqual([]);
  expect(pool.status("rc-c")).toBeUndefined();
});
