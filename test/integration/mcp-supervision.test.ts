/**
 * The pool's supervision against real servers (serve.md §6 item 10), with the reconnect backoff
 * on the fake scheduler: nothing is restarted before the test advances the clock past the wait,
 * and everything is once it does. Waits are bounded; timing is never asserted.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { watchedFetch } from "../../src/mcp/http-connection.ts";
import { McpServerPool, type ServerEvent } from "../../src/mcp/server-pool.ts";
import type { McpServerConfig } from "../../src/serve/config/schema.ts";
import { groupAlive } from "../../src/shared/process-group.ts";
import { Cleanups } from "../helpers/cleanups.ts";
import { type EventsFixture, startEventsFixture } from "../helpers/events-fixture.ts";
import { FakeScheduler } from "../helpers/fake-scheduler.ts";
import { fixtureArgv, procStat, tmpDir } from "../helpers/fixture.ts";
import { waitFor } from "../helpers/wait.ts";

const CLIENT_INFO = { name: "vigil-test", version: "1.0.0" };
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

function freePort(): number {
  const server = Bun.serve({ port: 0, fetch: () => new Response("") });
  const port = server.port!;
  server.stop(true);
  return port;
}

async function supervised(configs: McpServerConfig[], scheduler: FakeScheduler) {
  const events: ServerEvent[] = [];
  const pool = await McpServerPool.connect(configs, { clientInfo: CLIENT_INFO, graceMs: 300, connectTimeoutMs: 10_000, scheduler });
  cleanups.add(() => pool.close());
  pool.onServerEvent((e) => events.push(e));
  return { pool, events };
}

const textOf = (r: { content?: unknown }) => ((r.content ?? []) as { text?: string }[]).map((c) => c.text ?? "").join("");

describe("MCP server supervision", () => {
  test("a stdio server killed with SIGKILL is restarted in a new group once its backoff is over, its old group swept", async () => {
    const tmp = tmpDir("vigil-supervision");
    cleanups.add(() => tmp.cleanup());
    const grandchild = tmp.file("grandchild.pid");
    const [command, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: grandchild });
    const scheduler = new FakeScheduler();
    const { pool, events } = await supervised([{ name: "fx", transport: "stdio", command: command!, args, env: {} } as McpServerConfig], scheduler);
    const [oldGroup] = pool.stdioProcessGroups();
    cleanups.add(() => void (groupAlive(oldGroup!) && process.kill(-oldGroup!, "SIGKILL")));
    expect(textOf(await pool.callTool("fx__echo", { text: "before" }))).toBe("before");
    expect(pool.rawInitializeResult("fx")?.serverInfo).toBeDefined();
    const grandchildPid = Number((await waitFor(() => readFileSync(grandchild, "utf8").trim() || null, { timeoutMs: 10_000, label: "grandchild pid" })));
    expect(procStat(grandchildPid)?.pgrp).toBe(oldGroup);

    process.kill(oldGroup!, "SIGKILL"); // the leader only: its grandchild stays in the group until swept
    const down = await waitFor(() => pool.status("fx"), { until: (s) => s?.state === "reconnecting", timeoutMs: 10_000, label: "fx reconnecting" });
    expect(down).toMatchObject({ state: "reconnecting", retry_in_ms: 1000, restarts: 0 });
    // The old group, grandchild included, is gone before anything new is started.
    await waitFor(() => !groupAlive(oldGroup!), { timeoutMs: 10_000, label: "the old group swept" });
    // Nothing of the dead connection stays visible: its initialize result is not the server's any more.
    expect(pool.rawInitializeResult("fx")).toBeUndefined();
    const call = await pool.callTool("fx__echo", { text: "while down" });
    expect(call.isError).toBe(true);
    expect(textOf(call)).toContain(`MCP server "fx" is reconnecting`);

    scheduler.advance(999);
    expect(pool.status("fx")?.restarts).toBe(0);
    scheduler.advance(1);
    const up = await waitFor(() => pool.status("fx"), { until: (s) => s?.state === "connected", timeoutMs: 10_000, label: "fx connected again" });
    expect(up?.restarts).toBe(1);
    const [newGroup] = pool.stdioProcessGroups();
    expect(newGroup).not.toBe(oldGroup);
    cleanups.add(() => void (groupAlive(newGroup!) && process.kill(-newGroup!, "SIGKILL")));
    expect(events.filter((e) => e.kind === "connected")).toEqual([{ server: "fx", kind: "connected" }]);
    expect((await pool.listTools()).map((t) => t.qualifiedName)).toContain("fx__echo");
    expect(textOf(await pool.callTool("fx__echo", { text: "after" }))).toBe("after");
    expect(pool.rawInitializeResult("fx")?.serverInfo).toBeDefined();
  });

  test("an HTTP server that is not up at start is connected once it is, without restarting the pool", async () => {
    const port = freePort();
    const scheduler = new FakeScheduler();
    const config = { name: "late", transport: "http", url: `http://127.0.0.1:${port}/mcp`, headers: {} } as McpServerConfig;
    const { pool, events } = await supervised([config], scheduler);
    expect(pool.status("late")).toMatchObject({ state: "reconnecting", retry_in_ms: 1000 });
    // Still down at the next attempt: the wait doubles.
    scheduler.advance(1000);
    await waitFor(() => pool.status("late"), { until: (s) => s?.retry_in_ms === 2000, timeoutMs: 10_000, label: "second wait of 2 s" });

    const fixture: EventsFixture = await startEventsFixture({ env: { MCP_FIXTURE_PORT: port }, cleanups });
    scheduler.advance(2000);
    await waitFor(() => pool.status("late")?.state === "connected", { timeoutMs: 10_000, label: "late connected" });
    expect(pool.status("late")?.restarts).toBe(2);
    expect(events).toEqual([{ server: "late", kind: "connected" }]);
    expect((await pool.listTools()).map((t) => t.qualifiedName)).toContain("late__echo");
    expect(textOf(await pool.callTool("late__echo", { text: "hi" }))).toBe("hi");

    // The server goes away: the next request finds the connection lost, and the pool reconnects.
    await fixture.stop();
    await pool.callTool("late__echo", { text: "lost" });
    await waitFor(() => pool.status("late")?.state === "reconnecting", { timeoutMs: 10_000, label: "late reconnecting" });
    expect(events).toEqual([{ server: "late", kind: "connected" }]);
  });

  test("nothing is started again once the pool closes", async () => {
    const scheduler = new FakeScheduler();
    const ghost = { name: "ghost", transport: "stdio", command: "/nonexistent/vigil-no-such-server", args: [], env: {} } as McpServerConfig;
    const { pool } = await supervised([ghost], scheduler);
    expect(pool.status("ghost")?.state).toBe("reconnecting");
    expect(scheduler.pending).toBe(1);
    await pool.close();
    expect(scheduler.pending).toBe(0);
    scheduler.advance(120_000);
    expect(pool.status("ghost")).toMatchObject({ state: "closed", restarts: 0 });
  });
});

describe("watchedFetch: when an HTTP connection counts as lost", () => {
  const lostWith = async (respond: () => Response | Promise<Response>, init: RequestInit) => {
    const reasons: string[] = [];
    const fetchLike = watchedFetch(async () => respond(), (r) => reasons.push(r));
    await fetchLike("http://127.0.0.1:9/mcp", init).catch(() => {});
    return reasons;
  };

  test("a 404 to a request that carried Mcp-Session-Id is an expired session; other 404s are not", async () => {
    const withSession = new Headers({ "mcp-session-id": "s-1" });
    expect(await lostWith(() => new Response("gone", { status: 404 }), { method: "POST", headers: withSession })).toEqual([
      "the MCP session expired (HTTP 404 to a request with Mcp-Session-Id)",
    ]);
    expect(await lostWith(() => new Response("gone", { status: 404 }), { method: "POST", headers: {} })).toEqual([]);
    expect(await lostWith(() => new Response("{}", { status: 200 }), { method: "POST", headers: withSession })).toEqual([]);
  });

  test("a failed request is a lost connection, unless vigil aborted it", async () => {
    const refused = () => Promise.reject(new Error("Unable to connect. Is the computer able to access the url?"));
    expect((await lostWith(refused, { method: "POST" }))[0]).toStartWith("the connection failed: Unable to connect");
    const aborted = new AbortController();
    aborted.abort();
    expect(await lostWith(refused, { method: "POST", signal: aborted.signal })).toEqual([]);
  });
});
