/**
 * StdioMcpTransport under the MCP SDK's own Client, against real processes: the project's fixture
 * server (misbehaviour on demand) and a real server from npm. Waits are bounded; timing is never
 * asserted; every test's process groups are SIGKILLed in afterEach whatever happened.
 */
import { afterEach, expect, test } from "bun:test";
import { resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StdioMcpTransport,
  type StdioMcpTransportOptions,
  closeAllStdioTransports,
  openStdioTransportCount,
} from "../../src/mcp/stdio-transport.ts";
import { VigilError } from "../../src/shared/errors.ts";
import { groupAlive } from "../../src/shared/process-group.ts";
import { type FixtureEnv, fixtureArgv, isProcessAlive, procStat, tmpDir, waitForFile, waitUntil } from "../helpers/fixture.ts";

const EVERYTHING = resolve(import.meta.dir, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const SRC_TRANSPORT = resolve(import.meta.dir, "../../src/mcp/stdio-transport.ts");

const started: StdioMcpTransport[] = [];
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const t of started.splice(0)) {
    if (t.pid !== null) {
      try {
        process.kill(-t.pid, "SIGKILL");
      } catch {
        // group already gone
      }
    }
    await t.close();
  }
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Watched {
  transport: StdioMcpTransport;
  client: Client;
  closes: () => number;
  errors: string[];
}

function fixtureTransport(fixtureEnv: FixtureEnv = {}, options: Partial<StdioMcpTransportOptions> = {}): StdioMcpTransport {
  const [command, ...args] = fixtureArgv(fixtureEnv);
  const transport = new StdioMcpTransport({ name: "fixture", command: command!, args, graceMs: 300, ...options });
  started.push(transport);
  return transport;
}

/** Connects an SDK Client; counts the transport's onclose calls and collects onerror messages. */
async function connect(transport: StdioMcpTransport): Promise<Watched> {
  let closes = 0;
  const errors: string[] = [];
  transport.onclose = () => void closes++;
  const client = new Client({ name: "vigil-test", version: "1.0.0" });
  client.onerror = (e) => void errors.push(e.message);
  await client.connect(transport);
  return { transport, client, closes: () => closes, errors };
}

const textOf = (result: unknown) => JSON.stringify((result as { content: unknown }).content);

test("listTools and callTool work through the transport; close ends the group and fires onclose once", async () => {
  const { transport, client, closes } = await connect(fixtureTransport());
  const pid = transport.pid!;
  expect(procStat(pid)?.pgrp).toBe(pid); // leads its own process group

  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain("echo");
  const echoed = await client.callTool({ name: "echo", arguments: { text: "hello über" } });
  expect(textOf(echoed)).toContain("hello über");

  await client.close();
  expect(groupAlive(pid)).toBe(false);
  expect(closes()).toBe(1);
  await transport.close(); // idempotent
  expect(closes()).toBe(1);
  const status = transport.status();
  expect(status.state).toBe("closed");
  expect(status.ended_by).toBe("close");
  expect(status.exit).toEqual({ termination: "exited", exit_code: 0, signal: null, core_dumped: null });
  expect(status.kill_requested).toBe(false); // it left on stdin EOF
  expect(status.counts.messages_received).toBe(3);
});

test("non-JSON stdout lines are skipped and reported, and the calls around them succeed", async () => {
  const { transport, client, errors } = await connect(fixtureTransport({ FIXTURE_GARBAGE: true }));
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  expect(textOf(await client.callTool({ name: "echo", arguments: { text: "still fine" } }))).toContain("still fine");
  expect(transport.status().counts.skipped_lines).toBe(3); // before initialize, tools/list and the call
  expect(errors.filter((m) => m.includes("non-JSON line"))).toHaveLength(3);
});

for (const idFirst of [false, true]) {
  test(`an over-cap response fails only its call; the next call succeeds (id ${idFirst ? "first" : "last"})`, async () => {
    const transport = fixtureTransport({ FIXTURE_ID_FIRST: idFirst }, { maxMessageBytes: 64 * 1024 });
    const { client } = await connect(transport);
    const big = client.callTool({ name: "big", arguments: { bytes: 200_000 } });
    await expect(big).rejects.toThrow("response larger than 65536 bytes");
    expect(textOf(await client.callTool({ name: "echo", arguments: { text: "after" } }))).toContain("after");
    // Under the cap the same tool is delivered whole.
    expect(textOf(await client.callTool({ name: "big", arguments: { bytes: 1000 } }))).toContain("x".repeat(1000));
    expect(transport.status().counts.oversized_replaced).toBe(1);
    expect(transport.status().state).toBe("open");
  });
}

test("close() ends a server that ignores stdin EOF and SIGTERM: the whole group is gone", async () => {
  const { transport, client, closes } = await connect(fixtureTransport({ FIXTURE_IGNORE_EOF: true, FIXTURE_IGNORE_SIGTERM: true }));
  const pid = transport.pid!;
  expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  await transport.close();
  expect(isProcessAlive(pid)).toBe(false);
  expect(groupAlive(pid)).toBe(false);
  expect(closes()).toBe(1);
  const status = transport.status();
  expect(status.kill_requested).toBe(true);
  expect(status.exit).toEqual({ termination: "signaled", exit_code: null, signal: 9, core_dumped: null });
});

test("a double-forked grandchild left in the group is gone after close()", async () => {
  const dir = tmpDir("vigil-mcp-grandchild");
  cleanups.push(dir.cleanup);
  const { transport } = await connect(fixtureTransport({ FIXTURE_GRANDCHILD: dir.file("gc.pid") }));
  const grandchild = Number((await waitForFile(dir.file("gc.pid"), 10_000)).trim());
  expect(isProcessAlive(grandchild)).toBe(true);
  expect(procStat(grandchild)?.pgrp).toBe(transport.pid!);
  await transport.close();
  expect(isProcessAlive(grandchild)).toBe(false);
  expect(groupAlive(transport.pid!)).toBe(false);
});

test("a server that exits on its own: onclose fires, pending calls reject, its leftovers are swept", async () => {
  const dir = tmpDir("vigil-mcp-exit");
  cleanups.push(dir.cleanup);
  // initialize is answer 1, ping answer 2; the slow call is still pending when the server exits.
  const transport = fixtureTransport({ FIXTURE_EXIT_AFTER: 2, FIXTURE_EXIT_CODE: 7, FIXTURE_GRANDCHILD: dir.file("gc.pid") });
  const { client, closes } = await connect(transport);
  const grandchild = Number((await waitForFile(dir.file("gc.pid"), 10_000)).trim());
  const slow = client.callTool({ name: "slow", arguments: { ms: 600_000 } });
  const slowOutcome = slow.then(() => "resolved", (e: Error) => e.message);
  await client.ping(); // written before the exit, so it is still delivered
  expect(await waitUntil(() => closes() === 1, 15_000)).toBe(true);
  expect(await slowOutcome).toContain("Connection closed");
  expect(isProcessAlive(grandchild)).toBe(false);
  const status = transport.status();
  expect(status.ended_by).toBe("server");
  expect(status.exit?.exit_code).toBe(7);
  await expect(transport.send({ jsonrpc: "2.0", id: 99, method: "ping" })).rejects.toThrow("closed");
  await transport.close();
  expect(closes()).toBe(1);
});

test("closeAllStdioTransports() closes every open transport, a stubborn one included", async () => {
  const before = openStdioTransportCount();
  const watched = [
    await connect(fixtureTransport()),
    await connect(fixtureTransport({ FIXTURE_GARBAGE: true })),
    await connect(fixtureTransport({ FIXTURE_IGNORE_EOF: true, FIXTURE_IGNORE_SIGTERM: true })),
  ];
  expect(openStdioTransportCount()).toBe(before + 3);
  await closeAllStdioTransports();
  expect(openStdioTransportCount()).toBe(before);
  for (const w of watched) {
    expect(groupAlive(w.transport.pid!)).toBe(false);
    expect(w.closes()).toBe(1);
    expect(w.transport.status().state).toBe("closed");
  }
});

test("a command that cannot start makes start() reject with one clear line", async () => {
  const transport = new StdioMcpTransport({ name: "ghost", command: "/nonexistent/vigil-no-such-server", graceMs: 0 });
  started.push(transport);
  const client = new Client({ name: "vigil-test", version: "1.0.0" });
  const error = await client.connect(transport).then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(VigilError);
  expect((error as VigilError).code).toBe("spawn_failed");
  expect((error as VigilError).message).toMatch(/^MCP server "ghost": cannot start .*vigil-no-such-server/);
  expect((error as VigilError).message).not.toContain("\n");
  expect(transport.pid).toBeNull();
  await expect(transport.send({ jsonrpc: "2.0", method: "notifications/initialized" })).rejects.toThrow();
});

test("the server's stderr reaches vigil's stderr prefixed with its name; vigil's stdout stays empty", async () => {
  const [command, ...args] = fixtureArgv({ FIXTURE_GARBAGE: true });
  const script = `
    import { Client } from "@modelcontextprotocol/sdk/client/index.js";
    import { StdioMcpTransport } from ${JSON.stringify(SRC_TRANSPORT)};
    const transport = new StdioMcpTransport({ name: "fx", command: ${JSON.stringify(command)}, args: ${JSON.stringify(args)}, graceMs: 1000 });
    const client = new Client({ name: "t", version: "1" });
    await client.connect(transport);
    await client.listTools();
    await client.close();
  `;
  const proc = Bun.spawn([process.execPath, "-e", script], { cwd: resolve(import.meta.dir, "../.."), stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
  const [out, err, code] = await Promise.all([proc.stdout.text(), proc.stderr.text(), proc.exited]);
  clearTimeout(timer);
  expect(code).toBe(0);
  expect(out).toBe("");
  expect(err).toMatch(/^vigil: \[fx\] fixture-server ready pid=\d+$/m);
  expect(err).toContain("vigil: [fx] fixture-server stdin eof");
  expect(err).toContain('vigil: MCP server "fx": skipped a non-JSON line on stdout: "fixture log: starting"');
});

test("the real npm server-everything: listTools and callTool(echo)", async () => {
  const transport = new StdioMcpTransport({ name: "everything", command: "node", args: [EVERYTHING, "stdio"], graceMs: 2000 });
  started.push(transport);
  const { client, closes } = await connect(transport);
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain("echo");
  const echoed = await client.callTool({ name: "echo", arguments: { message: "from vigil" } });
  expect(textOf(echoed)).toContain("from vigil");
  const pid = transport.pid!;
  await client.close();
  expect(groupAlive(pid)).toBe(false);
  expect(closes()).toBe(1);
});
