import { describe, expect, test } from "bun:test";
import { renderTranscriptPrompt } from "../../../src/serve/models/transcript-prompt.ts";
import { ToolArgumentsError } from "../../../src/serve/models/types.ts";

describe("renderTranscriptPrompt", () => {
  test("system prompt first, then labelled turns in order", () => {
    const text = renderTranscriptPrompt([
      { role: "user", text: "ticket 42 changed" },
      { role: "system", text: "You are on call." },
      { role: "assistant", text: "Looking.", toolCalls: [{ id: "c1", name: "tickets__get", arguments: { id: 42 } }] },
      { role: "tool", toolCallId: "c1", text: '{"priority":"P1"}' },
      { role: "assistant", text: "It is a P1." },
    ]);
    expect(text).toBe(
      "[System]\nYou are on call.\n\n" +
        "[User]\nticket 42 changed\n\n" +
        '[Assistant]\nLooking.\n→ tickets__get {"id":42} (c1)\n\n' +
        '[Tool result: tickets__get (c1)]\n{"priority":"P1"}\n\n' +
        "[Assistant]\nIt is a P1.\n",
    );
  });

  test("unknown tool call ids, null text and unparsable arguments", () => {
    const text = renderTranscriptPrompt([
      { role: "assistant", text: null, toolCalls: [{ id: "c2", name: "fs__read", arguments: new ToolArgumentsError("fs__read", "{bad") }] },
      { role: "tool", toolCallId: "zz", text: "orphan" },
    ]);
    expect(text).toBe("[Assistant]\n→ fs__read {bad (c2)\n\n[Tool result (zz)]\norphan\n");
  });

  test("pure: same input, same output", () => {
    const msgs = [{ role: "user" as const, text: "a" }];
    expect(renderTranscriptPrompt(msgs)).toBe(renderTranscriptPrompt(msgs));
    expect(renderTranscriptPrompt([])).toBe("\n");
  });
});
