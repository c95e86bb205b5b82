// The serve run loop end to end: the in-process mock model (real HTTP), the stdio fixture server
// through McpServerPool, a real policy file and a real decision log.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { fixtureArgv, readRecord, waitUntil } from "../helpers/fixture.ts";
import { McpServerPool } from "../../src/mcp/server-pool.ts";
import type { McpServerConfig } from "../../src/serve/config/schema.ts";
import { DecisionRecorder } from "../../src/evidence/decision-recorder.ts";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { loadPolicyFile, type LoadedPolicy } from "../../src/policy/load.ts";
import { createOpenAiModel } from "../../src/serve/models/openai.ts";
import { createRunModel } from "../../src/serve/models/registry.ts";
import type { ChatMessage } from "../../src/serve/models/types.ts";
import type { FrameBody } from "../../src/serve/protocol/frames.ts";
import { type RunDeps, type RunInput, runConversation } from "../../src/serve/run/run-loop.ts";
import { createToolGateway } from "../../src/serve/run/tool-gateway.ts";

const CLIENT_INFO = { name: "vigil-test", version: "1.0.0" };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "vigil-serve-run-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function mock(): Promise<MockModel> {
  const m = await startMockModel();
  cleanups.push(() => m.close());
  return m;
}

async function fixturePool(record: string): Promise<McpServerPool> {
  const [command, ...args] = fixtureArgv({ FIXTURE_RECORD: record });
  const config = { name: "fx", transport: "stdio", command: command!, args, env: {}, events: [] } as unknown as McpServerConfig;
  const pool = await McpServerPool.connect([config], { clientInfo: CLIENT_INFO, graceMs: 300, connectTimeoutMs: 15_000 });
  cleanups.push(() => pool.close());
  expect(pool.status("fx")?.state).toBe("connected");
  return pool;
}

const chat = (m: MockModel, maxTurns = 8, timeoutMs = 20_000): RunDeps["model"] => ({
  chat: createOpenAiModel({ provider: "openai", base_url: m.url, model: "mock-model", max_turns: maxTurns, timeout_ms: 20_000 }, { env: {}, retryBaseMs: 1 }),
  maxTurns,
  timeoutMs,
});

/** The command model as serve builds it (through the provider registry), bounded to 10 s. */
const commandModel = (command: string[]): RunDeps["model"] =>
  createRunModel({ provider: "command", command, timeout_ms: 10_000 }, { env: process.env });

const input = (over: Partial<RunInput> = {}): RunInput => ({
  runId: "run_1",
  trigger: "prompt",
  history: [],
  prompt: [{ role: "user", text: "hello" }],
  takeSteers: () => [],
  ...over,
});

const never = new AbortController().signal;
const bodyMessages = (m: MockModel, i: number) => (m.requests[i]!.body as { messages: Record<string, unknown>[] }).messages;
const toolCallLines = (record: string) => readRecord(record).filter((l) => l.includes('"tools/call"'));

describe("serve run loop", () => {
  test("a tool result reaches the model and the answer ends the run", async () => {
    const dir = tempDir();
    const record = join(dir, "record.ndjson");
    const m = await mock();
    const pool = await fixturePool(record);
    m.script([{ toolCalls: [{ id: "call_a", name: "fx__echo", arguments: { text: "echo-marker-42" } }] }, { text: "all done" }]);
    const frames: FrameBody[] = [];
    const tools = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s1" });
    const result = await runConversation(input(), { model: chat(m), tools, systemPrompt: "be brief", emit: (f) => void frames.push(f) }, never);

    expect(result.status).toBe("ok");
    expect(result.steersSeen).toBe(0);
    const offered = (m.requests[0]!.body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name);
    expect(offered).toContain("fx__echo");
    expect(bodyMessages(m, 0)[0]).toEqual({ role: "system", content: "be brief" });
    const second = bodyMessages(m, 1);
    expect(second.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_a", content: "echo-marker-42" });
    expect(toolCallLines(record)).toHaveLength(1);
    expect(frames.map((f) => f.type)).toEqual(["run_start", "tool_call", "tool_result", "message", "run_end"]);
    expect(frames[1]).toMatchObject({ type: "tool_call", run_id: "run_1", server: "fx", tool: "echo", decision: "allow" });
    expect((frames[1] as { arguments_sha256: string }).arguments_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(frames[2]).toEqual({ type: "tool_result", run_id: "run_1", is_error: false });
    expect(frames[3]).toEqual({ type: "message", role: "assistant", text: "all done" });
    expect(frames[4]).toEqual({ type: "run_end", run_id: "run_1", status: "ok" });
    expect(result.appended.map((x) => x.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(result.appended.at(-1)).toEqual({ role: "assistant", text: "all done" });
  });

  test("a denied call never reaches the server, its deny text reaches the model, decisions are recorded", async () => {
    const dir = tempDir();
    const record = join(dir, "record.ndjson");
    const policyFile = join(dir, "policy.yaml");
    writeFileSync(policyFile, 'version: 1\ntools:\n  deny: ["exec"]\n');
    const policy: LoadedPolicy = await loadPolicyFile(policyFile);
    const logPath = join(dir, "decisions.ndjson");
    const log = EvidenceLog.createNew(logPath);
    cleanups.push(() => log.close());
    const decisions = new DecisionRecorder({ append: (e) => log.append(JSON.stringify(e)) }, "vigil://test", policy.digest, false);
    const m = await mock();
    const pool = await fixturePool(record);
    m.script([
      { toolCalls: [{ id: "call_x", name: "fx__exec", arguments: { cmd: "rm -rf / secret-token-zz" } }, { id: "call_e", name: "fx__echo", arguments: { text: "fine" } }] },
      { text: "understood" },
    ]);
    const frames: FrameBody[] = [];
    const tools = createToolGateway({ pool, policy, decisions, sessionId: "sess_1" });
    const result = await runConversation(input(), { model: chat(m), tools, emit: (f) => void frames.push(f) }, never);

    expect(result.status).toBe("ok");
    const calls = toolCallLines(record);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('"echo"');
    expect(calls.some((l) => l.includes('"exec"'))).toBe(false);
    const second = bodyMessages(m, 1);
    const denied = second.find((x) => x.role === "tool" && x.tool_call_id === "call_x")!;
    expect(denied.content).toBe("vigil: call to exec blocked by policy (E_TOOL_DENIED: tool is on the deny list)");
    expect(frames.filter((f) => f.type === "tool_call").map((f) => (f as { decision: string }).decision)).toEqual(["deny", "allow"]);
    expect(frames.filter((f) => f.type === "tool_result").map((f) => (f as { is_error: boolean }).is_error)).toEqual([true, false]);

    const text = readFileSync(logPath, "utf8");
    expect(text).not.toContain("secret-token-zz");
    const lines = text.trim().split("\n").map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    expect(lines.map((l) => l.type)).toEqual(["vigil.mcp.decision.v1", "vigil.mcp.decision.v1"]);
    expect(lines[0]!.data).toMatchObject({
      session_id: "sess_1", seq: 0, server_id: "fx", request_id: "call_x", tool: "exec", decision: "deny",
      reason_code: "E_TOOL_DENIED", matched_rule: "tools.deny[0]", policy_digest: policy.digest, dry_run: false,
    });
    expect(lines[1]!.data).toMatchObject({ seq: 1, request_id: "call_e", tool: "echo", decision: "allow", reason_code: "P_ALLOW" });
    expect(lines[1]!.data.arguments_sha256).toBe((frames.find((f) => f.type === "tool_call" && (f as { tool: string }).tool === "echo") as { arguments_sha256: string }).arguments_sha256);
  });

  test("a failed decision write denies the call (fail closed)", async () => {
    const dir = tempDir();
    const record = join(dir, "record.ndjson");
    const log = EvidenceLog.openAppend("/dev/full");
    cleanups.push(() => log.close());
    const decisions = new DecisionRecorder({ append: (e) => log.append(JSON.stringify(e)) }, "vigil://test", null, false);
    const m = await mock();
    const pool = await fixturePool(record);
    m.script([{ toolCalls: [{ id: "call_1", name: "fx__echo", arguments: { text: "x" } }] }, { text: "ok" }]);
    const tools = createToolGateway({ pool, policy: null, decisions, sessionId: "s" });
    const result = await runConversation(input(), { model: chat(m), tools, emit: () => {} }, never);
    expect(result.status).toBe("ok");
    expect(toolCallLines(record)).toHaveLength(0);
    const tool = bodyMessages(m, 1).find((x) => x.role === "tool")!;
    expect(String(tool.content)).toContain("E_EVIDENCE_UNAVAILABLE");
  });

  test("a steer taken before the second turn reaches the second model request", async () => {
    const dir = tempDir();
    const m = await mock();
    const pool = await fixturePool(join(dir, "record.ndjson"));
    m.script([{ toolCalls: [{ id: "call_1", name: "fx__echo", arguments: { text: "one" } }] }, { text: "steered answer" }]);
    const pending: ChatMessage[][] = [[], [{ role: "user", text: "steer-marker: also check B" }]];
    const frames: FrameBody[] = [];
    const tools = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s" });
    const result = await runConversation(input({ takeSteers: () => pending.shift() ?? [] }), { model: chat(m), tools, emit: (f) => void frames.push(f) }, never);

    expect(result.status).toBe("ok");
    expect(result.steersSeen).toBe(1);
    expect(JSON.stringify(bodyMessages(m, 0))).not.toContain("steer-marker");
    expect(bodyMessages(m, 1).at(-1)).toEqual({ role: "user", content: "steer-marker: also check B" });
    expect(frames).toContainEqual({ type: "message", role: "user", text: "steer-marker: also check B" });
    expect(result.appended.map((x) => x.role)).toEqual(["user", "assistant", "tool", "user", "assistant"]);
  });

  test("abort during a stalled model turn → aborted", async () => {
    const m = await mock();
    m.script([{ stall: true }]);
    const controller = new AbortController();
    const frames: FrameBody[] = [];
    const running = runConversation(input(), { model: chat(m), tools: null, emit: (f) => void frames.push(f) }, controller.signal);
    expect(await waitUntil(() => m.requests.length >= 1, 10_000)).toBe(true);
    controller.abort();
    const result = await running;
    expect(result.status).toBe("aborted");
    expect(result.appended).toEqual([{ role: "user", text: "hello" }]);
    expect(frames.at(-1)).toMatchObject({ type: "run_end", run_id: "run_1", status: "aborted" });
  });

  test("the run deadline fails a stalled run", async () => {
    const m = await mock();
    m.script([{ stall: true }]);
    const result = await runConversation(input(), { model: chat(m, 8, 300), tools: null, emit: () => {} }, never);
    expect(result.status).toBe("failed");
    expect(result.error).toContain("timed out");
  });

  test("max_turns exceeded → failed, the conversation so far kept", async () => {
    const dir = tempDir();
    const m = await mock();
    const pool = await fixturePool(join(dir, "record.ndjson"));
    m.script([
      { toolCalls: [{ id: "c1", name: "fx__echo", arguments: { text: "1" } }] },
      { toolCalls: [{ id: "c2", name: "fx__echo", arguments: { text: "2" } }] },
    ]);
    const frames: FrameBody[] = [];
    const tools = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s" });
    const result = await runConversation(input(), { model: chat(m, 2), tools, emit: (f) => void frames.push(f) }, never);
    expect(result.status).toBe("failed");
    expect(result.error).toContain("max_turns (2)");
    expect(result.appended.map((x) => x.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(m.requests).toHaveLength(2);
    expect(frames.at(-1)).toEqual({ type: "run_end", run_id: "run_1", status: "failed", error: result.error! });
  });

  test("unknown tools and non-JSON arguments are answered without a call", async () => {
    const dir = tempDir();
    const record = join(dir, "record.ndjson");
    const m = await mock();
    const pool = await fixturePool(record);
    m.script([
      { toolCalls: [{ id: "u1", name: "fx__nope", arguments: {} }, { id: "u2", name: "fx__echo", arguments: "{not json" }] },
      { text: "ok" },
    ]);
    const tools = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s" });
    const result = await runConversation(input(), { model: chat(m), tools, emit: () => {} }, never);
    expect(result.status).toBe("ok");
    expect(toolCallLines(record)).toHaveLength(0);
    const msgs = bodyMessages(m, 1).filter((x) => x.role === "tool");
    expect(String(msgs[0]!.content)).toContain("unknown tool");
    expect(String(msgs[1]!.content)).toContain("not valid JSON");
  });

  test("command model: the rendered conversation through sh -c cat", async () => {
    const frames: FrameBody[] = [];
    const steers: ChatMessage[][] = [[{ role: "user", text: "and a steer" }]];
    const result = await runConversation(
      input({ history: [{ role: "user", text: "earlier" }, { role: "assistant", text: "reply" }], takeSteers: () => steers.shift() ?? [] }),
      { model: commandModel(["sh", "-c", "cat"]), tools: null, systemPrompt: "sys", emit: (f) => void frames.push(f) },
      never,
    );
    expect(result.status).toBe("ok");
    expect(result.steersSeen).toBe(1);
    const expected = "[System]\nsys\n\n[User]\nearlier\n\n[Assistant]\nreply\n\n[User]\nhello\n\n[User]\nand a steer\n";
    expect(result.appended.at(-1)).toEqual({ role: "assistant", text: expected });
    expect(frames.map((f) => f.type)).toEqual(["run_start", "message", "message", "run_end"]);
    expect(frames[2]).toEqual({ type: "message", role: "assistant", text: expected });
  });

  test("command model failure → failed with the model's message", async () => {
    const result = await runConversation(
      input(),
      { model: commandModel(["sh", "-c", "echo boom >&2; exit 3"]), tools: null, emit: () => {} },
      never,
    );
    expect(result.status).toBe("failed");
    expect(result.error).toContain("exited with code 3");
  });
});
