import { expect, test } from "bun:test";
import { contextBudget } from "../../../src/serve/context/budget.ts";
import { cutText, summaryRequest } from "../../../src/serve/context/compact.ts";
import { REQUEST_OVERHEAD_TOKENS, bytesToTokens, textBytes } from "../../../src/serve/context/estimate.ts";
import { capsWithin } from "../../../src/serve/context/plan.ts";
import type { ChatMessage } from "../../../src/serve/models/types.ts";

/** The summary request's user text as it was built before issue 16: each line measured whole. */
function reference(messages: ChatMessage[], contextTokens: number, instructions: string): string {
  const budget = contextBudget(contextTokens);
  const lines = messages.map((m) =>
    m.role === "assistant"
      ? `assistant: ${[m.text ?? "", (m.toolCalls ?? []).map((c) => `[called tool ${c.name}]`).join(" ")].filter((s) => s !== "").join(" ")}`
      : m.role === "tool" ? `tool result: ${m.text}` : `${m.role}: ${m.text}`,
  );
  const room = (budget.trigger - REQUEST_OVERHEAD_TOKENS - bytesToTokens(textBytes(instructions)) - 256) * 4;
  const sizes = lines.map((l) => textBytes(l));
  const caps = capsWithin(sizes, Math.max(0, room - lines.length * 64));
  return `The conversation so far:\n\n${lines.map((line, i) => cutText(line, sizes[i]!, caps[i]!)).join("\n\n")}\n\nWrite the summary now.`;
}

test("the summary request's turns are measured as the whole lines they are (escapes, non-ASCII, cut or not)", () => {
  const heavy = `<mcp_event a="1">{"k":"\\"q\\" é 😀 \u2028"}</mcp_event>\n`;
  const messages: ChatMessage[] = [
    { role: "user", text: heavy.repeat(300) },
    { role: "assistant", text: "ok \"quoted\"", toolCalls: [{ id: "c", name: "fs__read", arguments: {} }] },
    { role: "tool", toolCallId: "c", text: heavy.repeat(50) },
    { role: "assistant", text: null },
    { role: "system", text: "short" },
    { role: "user", text: "x".repeat(5000) },
  ];
  for (const contextTokens of [2_000, 8_000, 32_000, 200_000]) {
    const request = summaryRequest(messages, contextBudget(contextTokens));
    expect(request[1]!.text).toBe(reference(messages, contextTokens, request[0]!.text ?? ""));
  }
});
