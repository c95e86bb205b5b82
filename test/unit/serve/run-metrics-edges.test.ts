// Tool-call counting at the edges of the run loop (run/run-loop.ts, run/run-metrics.ts): a tool
// call a model makes in a session with no tools to offer is decided (denied, `no_tools`) and
// must be counted in vigil_tool_calls_total like every other decided call.
import { expect, test } from "bun:test";
import type { ChatModel } from "../../../src/serve/models/types.ts";
import { runConversation } from "../../../src/serve/run/run-loop.ts";
import { UNKNOWN_TOOL_LABEL } from "../../../src/serve/run/run-metrics.ts";
import { TOOLS } from "../../../src/shared/metrics/catalog.ts";

test("a tool call in a session without tools is counted as denied with no_tools", async () => {
  let turns = 0;
  const chat: ChatModel = {
    acceptsTools: true,
    async turn() {
      turns++;
      return turns === 1 ? { text: null, toolCalls: [{ id: "c1", name: "made_up", arguments: { x: "ARG" } }] } : { text: "done", toolCalls: [] };
    },
  };
  const counted = () => TOOLS.calls.at("", UNKNOWN_TOOL_LABEL, "deny", "no_tools").value;
  const before = counted();
  const frames: { type: string; decision?: string }[] = [];
  const result = await runConversation(
    { runId: "r1", trigger: "prompt", history: [], prompt: [{ role: "user", text: "hi" }], takeSteers: () => [] },
    { model: { chat, maxTurns: 4, timeoutMs: 10_000, contextTokens: 8_000 }, tools: null, emit: (f) => void frames.push(f as never) },
    new AbortController().signal,
  );
  expect(result.status).toBe("ok");
  expect(frames.filter((f) => f.type === "tool_call").map((f) => f.decision)).toEqual(["deny"]);
  expect(counted()).toBe(before + 1);
  // The name the model made up is not a label.
  expect([...TOOLS.calls.children.values()].some((c) => c.values.includes("made_up"))).toBe(false);
});
