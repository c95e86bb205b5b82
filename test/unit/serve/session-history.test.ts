/**
 * The session's history and its rebuild (issue 12 item A), with the real run loop over a scripted
 * model and real transcript files: only runs that succeeded are kept, a compaction replaces the
 * oldest runs at once, and a reopened session finds exactly the history it had.
 */
import { expect, test } from "bun:test";
import { type ChatMessage, type ChatModel, ModelError } from "../../../src/serve/models/types.ts";
import { messageFrame } from "../../../src/serve/protocol/frames.ts";
import { runConversation } from "../../../src/serve/run/run-loop.ts";
import type { ToolGateway } from "../../../src/serve/run/tool-gateway.ts";
import { Session } from "../../../src/serve/session/session.ts";
import type { RunSettled, Runner } from "../../../src/serve/session/types.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

const sessions = unitSessions("vigil-unit-session-history");

/** A model that answers "ok", summarizes as "SUMMARY", and fails a request carrying "FAIL". */
const chat: ChatModel & { requests: ChatMessage[][] } = {
  acceptsTools: false,
  requests: [],
  async turn(messages) {
    chat.requests.push(messages);
    if (messages[0]?.role === "system" && messages[0].text.startsWith("You summarize")) return { text: "SUMMARY", toolCalls: [] };
    if (messages.at(-1)?.text?.includes("FAIL")) throw new ModelError("http", "model HTTP 400", { status: 400 });
    return { text: "ok", toolCalls: [] };
  },
};

// The runner serve uses (session-wiring.ts): the prompt announced after run_start, the run loop; 4,000 tokens of context.
const runnerOf = (model: ChatModel, tools: ToolGateway | null, maxTurns: number): Runner => (request, emit, signal) =>
  runConversation(request, {
    model: { chat: model, maxTurns, timeoutMs: 10_000, contextTokens: 4_000 },
    tools,
    emit: async (frame) => {
      emit(frame);
      if (frame.type === "run_start") for (const m of request.prompt) emit(messageFrame("user", m.text ?? ""));
    },
  }, signal);

/** Session "s1" in `dir`; `prompt` sends a prompt and waits (bounded) until its run settled. */
async function open(dir: string, runner = runnerOf(chat, null, 2)) {
  const s = sessions.track(await Session.open({ name: "s1", dir, runner }));
  const settled: RunSettled[] = [];
  s.onRunSettled((r) => settled.push(r));
  const prompt = async (id: string, message: string) => {
    const n = settled.length;
    await s.handle({ type: "prompt", id, message });
    await waitFor(() => settled.length > n, { timeoutMs: 3000, label: `run ${id}`, intervalMs: 5 });
  };
  return { s, settled, prompt };
}

test("failed runs add nothing; a compaction replaces the oldest runs; a restart rebuilds the same history", async () => {
  const dir = sessions.dir();
  const first = await open(dir);
  await first.prompt("p1", "first");
  await first.prompt("p2", "FAIL this one");
  expect(first.s.history.map((m) => m.text)).toEqual(["first", "ok"]);

  // 4,000 tokens: the trigger is 3,000 (about 12 KB); each prompt is about 1,000 tokens.
  for (let i = 0; i < 4; i++) await first.prompt(`big${i}`, `big ${i} ${"x".repeat(4000)}`);
  const frames = (await first.s.replay(0)).records;
  const compactions = frames.filter((f) => f.type === "compaction");
  expect(compactions.length).toBeGreaterThan(0);
  expect(compactions[0]).toMatchObject({ summary: "SUMMARY", from_seq: frames.find((f) => f.type === "run_start")!.seq });
  const history = first.s.history.map((m) => m.text);
  expect(history[0]).toContain("SUMMARY");
  expect(history).not.toContain("first");
  expect(history.some((t) => t?.includes("FAIL"))).toBe(false);
  // Every request stayed within the trigger (estimated as sent: 4 bytes a token).
  for (const r of chat.requests) expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(3000 * 4);
  await first.s.close();

  const second = await open(dir);
  expect(second.s.history).toEqual(first.s.history);
});

test("a run with tool calls, a steer and compactions: the history in memory is the history a reopen rebuilds", async () => {
  const requests: ChatMessage[][] = [];
  let steer: (() => Promise<unknown>) | null = null;
  // Calls a tool on a prompt saying "TOOL" (a steer arrives meanwhile), then answers; summarizes as "SUMMARY".
  const toolChat: ChatModel = {
    acceptsTools: true,
    async turn(messages) {
      requests.push(messages);
      if (messages[0]?.role === "system" && messages[0].text.startsWith("You summarize")) return { text: "SUMMARY", toolCalls: [] };
      const last = messages.at(-1)!;
      if (last.role === "user" && last.text?.startsWith("TOOL")) {
        await steer?.();
        return { text: "looking it up", toolCalls: [{ id: "c1", name: "t__lookup", arguments: { q: "x" } }] };
      }
      return { text: last.role === "tool" ? "found it" : "ok", toolCalls: [] };
    },
  };
  const tools: ToolGateway = {
    specs: async () => [{ name: "t__lookup", parameters: { type: "object" } }],
    async call(_runId, _call, _signal, onDecided) {
      const decided = { server: "t", tool: "lookup", argumentsSha256: "0".repeat(64), decision: "allow" as const };
      await onDecided?.(decided);
      // Large enough that the run's own exchanges are summarized too (keeper.ts step 2).
      return { ...decided, text: `result ${"r".repeat(13_000)}`, isError: false, reasonCode: null };
    },
  };
  const toolRunner = runnerOf(toolChat, tools, 4);
  const dir = sessions.dir();
  const { s, settled, prompt } = await open(dir, toolRunner);
  for (let i = 0; i < 3; i++) await prompt(`big${i}`, `big ${i} ${"x".repeat(4000)}`);
  steer = () => {
    steer = null;
    return s.handle({ type: "prompt", id: "steer", message: "also check y", streaming_behavior: "steer" });
  };
  await prompt("tool", "TOOL please look up x");
  expect(settled.every((r) => r.succeeded)).toBe(true);

  const frames = (await s.replay(0)).records;
  expect(frames.some((f) => f.type === "tool_call")).toBe(true);
  expect(frames.some((f) => f.type === "compaction")).toBe(true);
  // The run's own exchanges were summarized for its requests (no frame: that summary is not history).
  expect(requests.some((r) => r.filter((m) => m.role === "user" && m.text?.endsWith("\nSUMMARY")).length === 2)).toBe(true);
  const history = s.history;
  expect(history.map((m) => m.text)).toContain("also check y");
  expect(history.some((m) => m.role === "tool" || ("toolCalls" in m && m.toolCalls !== undefined))).toBe(false);
  await s.close();

  const reopened = sessions.track(await Session.open({ name: "s1", dir, runner: toolRunner }));
  expect(reopened.history).toEqual(history);
});
