// `vigil serve` in stdio mode, against the compiled binary: the in-process mock model, the stdio
// fixture MCP server (its own process group, with a grandchild), NDJSON commands and frames.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { LineClient, fixtureArgv, procStat, readRecord, tmpDir, waitForFile, waitUntil } from "../helpers/fixture.ts";
import { killServerGroup } from "../helpers/serve.ts";
import { groupAlive } from "../../src/shared/process-group.ts";

type Frame = Record<string, unknown> & { type: string; seq?: number };

const cleanups = e2eSuite();

interface Setup {
  dir: string;
  record: string;
  grandchildFile: string;
  stateDir: string;
  model: MockModel;
  client: LineClient;
}

async function start(o: { policy?: string; evidence?: boolean } = {}): Promise<Setup> {
  const tmp = tmpDir("vigil-serve-stdio");
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.add(() => model.close());
  const record = tmp.file("record.ndjson");
  const grandchildFile = tmp.file("grandchild.pid");
  const [command, ...args] = fixtureArgv({ FIXTURE_RECORD: record, FIXTURE_GRANDCHILD: grandchildFile });
  const config: Record<string, unknown> = {
    model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 20_000 },
    system_prompt: "be brief",
    mcp_servers: [{ name: "fx", transport: "stdio", command, args }],
  };
  if (o.policy !== undefined) {
    writeFileSync(tmp.file("policy.yaml"), o.policy);
    config.policy = "policy.yaml";
  }
  if (o.evidence) config.evidence = { event_source: "vigil://test/serve", decision_log: true };
  const configFile = tmp.file("vigil.json");
  writeFileSync(configFile, JSON.stringify(config));
  const stateDir = tmp.file("state");
  const client = new LineClient([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", stateDir], {
    env: vigilEnv(),
  });
  cleanups.add(() => killServerGroup(grandchildFile));
  cleanups.add(() => client.dispose());
  await client.waitForStderr("fixture-server ready", 20_000);
  return { dir: tmp.path, record, grandchildFile, stateDir, model, client };
}


async function nextFrame(client: LineClient, timeoutMs = 15_000): Promise<Frame> {
  const line = await client.next(timeoutMs);
  if (line === null) throw new Error(`stdout closed; stderr:\n${client.stderrText()}`);
  return JSON.parse(line) as Frame;
}

/** Frames up to and including the first that matches. */
async function framesUntil(client: LineClient, done: (f: Frame) => boolean, timeoutMs = 15_000): Promise<Frame[]> {
  const out: Frame[] = [];
  for (;;) {
    const f = await nextFrame(client, timeoutMs);
    out.push(f);
    if (done(f)) return out;
  }
}

/** The stdio server's group: its pgid is the grandchild's (the grandchild stays in it). */
async function serverGroup(s: Setup): Promise<{ grandchild: number; pgrp: number }> {
  const grandchild = Number((await waitForFile(s.grandchildFile, 10_000)).trim());
  const pgrp = procStat(grandchild)!.pgrp;
  expect(groupAlive(pgrp)).toBe(true);
  return { grandchild, pgrp };
}

const isRunEnd = (f: Frame) => f.type === "run_end";

describe("vigil serve (stdio)", () => {
  test("a prompt runs through the model and the MCP tool; the tool result reaches the model; EOF exits 0 and ends the server group", async () => {
    const s = await start();
    const group = await serverGroup(s);
    s.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] }, { text: "done" }]);
    s.client.send({ type: "prompt", id: "p1", message: "hello" });
    const frames = await framesUntil(s.client, isRunEnd);

    expect(frames[0]).toMatchObject({ type: "response", id: "p1", command: "prompt", success: true });
    const runId = (frames[0]!.data as { run_id: string }).run_id;
    expect(frames.map((f) => f.type)).toEqual(["response", "run_start", "message", "tool_call", "tool_result", "message", "run_end"]);
    expect(frames[2]).toMatchObject({ type: "message", role: "user", text: "hello" });
    expect(frames[3]).toMatchObject({ type: "tool_call", run_id: runId, server: "fx", tool: "echo", decision: "allow" });
    expect(frames[4]).toMatchObject({ type: "tool_result", run_id: runId, is_error: false });
    expect(frames[5]).toMatchObject({ type: "message", role: "assistant", text: "done" });
    expect(frames[6]).toMatchObject({ type: "run_end", run_id: runId, status: "ok" });
    const seqs = frames.map((f) => f.seq!);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

    const second = (s.model.requests[1]!.body as { messages: Record<string, unknown>[] }).messages;
    expect(second.at(-1)).toMatchObject({ role: "tool", content: "hi" });
    expect(readRecord(s.record).filter((l) => l.includes('"tools/call"'))).toHaveLength(1);

    s.client.closeStdin();
    expect(await s.client.exited(15_000)).toEqual({ code: 0, signal: null });
    expect(await waitUntil(() => !groupAlive(group.pgrp), 5000)).toBe(true);
    expect(existsSync(join(s.stateDir, "sessions", "default", "transcript.jsonl"))).toBe(true);
  });

  test("a policy-denied call never reaches the server; the deny is recorded", async () => {
    const s = await start({ policy: 'version: 1\ntools:\n  deny: ["exec"]\n', evidence: true });
    s.model.script([{ toolCalls: [{ name: "fx__exec", arguments: { cmd: "rm -rf /" } }] }, { text: "understood" }]);
    s.client.send({ type: "prompt", id: "p1", message: "clean up" });
    const frames = await framesUntil(s.client, isRunEnd);

    expect(frames.find((f) => f.type === "tool_call")).toMatchObject({ server: "fx", tool: "exec", decision: "deny" });
    expect(frames.find((f) => f.type === "tool_result")).toMatchObject({ is_error: true });
    expect(frames.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
    expect(readRecord(s.record).some((l) => l.includes('"tools/call"'))).toBe(false);
    const toolMessage = (s.model.requests[1]!.body as { messages: Record<string, unknown>[] }).messages.at(-1)!;
    expect(toolMessage.role).toBe("tool");

    s.client.closeStdin();
    expect((await s.client.exited(15_000)).code).toBe(0);
    const decisions = readFileSync(join(s.stateDir, "sessions", "default", "decisions.ndjson"), "utf8").trim().split("\n");
    expect(decisions).toHaveLength(1);
    expect(JSON.parse(decisions[0]!).data).toMatchObject({ session_id: "default", server_id: "fx", tool: "exec", decision: "deny" });
  });

  test("malformed command lines get success:false responses and serving goes on", async () => {
    const s = await start();
    s.client.send("this is not json\n");
    s.client.send('{"type":"launch_missiles","id":"u1"}\n');
    s.client.send('{"type":"prompt","id":"p2"}\n');
    s.client.send("[1,2,3]\n");
    s.client.send({ type: "get_state", id: "g1" });
    const frames = await framesUntil(s.client, (f) => f.id === "g1");

    expect(frames).toHaveLength(5);
    expect(frames.slice(0, 4).map((f) => [f.type, f.success, (f.error as { code: string }).code])).toEqual([
      ["response", false, "invalid_json"],
      ["response", false, "unknown_command"],
      ["response", false, "invalid_command"],
      ["response", false, "invalid_command"],
    ]);
    expect(frames[1]!.id).toBe("u1");
    expect(frames[2]).toMatchObject({ id: "p2", command: "prompt" });
    expect(frames[4]).toMatchObject({ type: "response", id: "g1", command: "get_state", success: true });

    s.client.closeStdin();
    expect((await s.client.exited(15_000)).code).toBe(0);
  });

  test("EOF lets the run in flight finish before exiting", async () => {
    const s = await start();
    const group = await serverGroup(s);
    s.model.script([{ stall: true, then: { text: "late answer" } }]);
    s.client.send({ type: "prompt", id: "p1", message: "take your time" });
    await framesUntil(s.client, (f) => f.type === "run_start");
    await s.model.waitForRequests(1, 10_000);
    s.client.closeStdin();
    expect(await waitUntil(() => s.client.stderrText().includes("fixture-server stdin eof"), 300)).toBe(false);
    expect(s.model.release()).toBe(1);
    const rest = await framesUntil(s.client, isRunEnd);
    expect(rest.at(-2)).toMatchObject({ type: "message", role: "assistant", text: "late answer" });
    expect(rest.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
    expect(await s.client.exited(15_000)).toEqual({ code: 0, signal: null });
    expect(await waitUntil(() => !groupAlive(group.pgrp), 5000)).toBe(true);
  });

  test("SIGTERM after EOF, while the run in flight is finishing, still aborts it and exits 143", async () => {
    const s = await start();
    const group = await serverGroup(s);
    s.model.script([{ stall: true }]);
    s.client.send({ type: "prompt", id: "p1", message: "wait forever" });
    await framesUntil(s.client, (f) => f.type === "run_start");
    await s.model.waitForRequests(1, 10_000);
    s.client.closeStdin();
    process.kill(s.client.pid, "SIGTERM");
    const rest = await framesUntil(s.client, isRunEnd);
    expect(rest.at(-1)).toMatchObject({ type: "run_end", status: "aborted" });
    expect((await s.client.exited(15_000)).code).toBe(143);
    expect(await waitUntil(() => !groupAlive(group.pgrp), 5000)).toBe(true);
  });

  test("SIGTERM aborts the run, exits 143 and leaves no process of the server's group", async () => {
    const s = await start();
    const group = await serverGroup(s);
    s.model.script([{ stall: true }]);
    s.client.send({ type: "prompt", id: "p1", message: "wait forever" });
    await framesUntil(s.client, (f) => f.type === "run_start");
    await s.model.waitForRequests(1, 10_000);
    process.kill(s.client.pid, "SIGTERM");
    const rest = await framesUntil(s.client, isRunEnd);
    expect(rest.at(-1)).toMatchObject({ type: "run_end", status: "aborted" });
    expect((await s.client.exited(15_000)).code).toBe(143);
    expect(await waitUntil(() => !groupAlive(group.pgrp), 5000)).toBe(true);
    expect(procStat(group.grandchild) === null || ["Z", "X"].includes(procStat(group.grandchild)!.state)).toBe(true);
  });

  test("a config error exits 2 naming the file and the path, and starts nothing", async () => {
    const tmp = tmpDir("vigil-serve-stdio");
    cleanups.add(() => tmp.cleanup());
    const configFile = tmp.file("vigil.json");
    writeFileSync(configFile, JSON.stringify({ model: { provider: "openai", base_url: "http://127.0.0.1:1/v1", model: "m", max_turns: 0 } }));
    const client = new LineClient([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", tmp.file("state")]);
    cleanups.add(() => client.dispose());
    expect((await client.exited(15_000)).code).toBe(2);
    expect(client.stderrText()).toContain(configFile);
    expect(client.stderrText()).toContain("model.max_turns");
  });
});
