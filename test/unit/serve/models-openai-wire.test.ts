import { describe, expect, test } from "bun:test";
import { chatRequestBody, chatRequestJson, parseChatResponse } from "../../../src/serve/models/openai-wire.ts";
import { type ChatMessage, ModelError, ToolArgumentsError } from "../../../src/serve/models/types.ts";

const reply = (message: unknown) => ({ choices: [{ index: 0, message, finish_reason: "stop" }], extra: true });

describe("openai wire format", () => {
  test("request: no tools key without tools; assistant text-only message", () => {
    const body = chatRequestBody("m", [{ role: "assistant", text: null }], []);
    expect(body).toEqual({ model: "m", messages: [{ role: "assistant", content: "" }] });
  });

  test("request JSON: byte for byte JSON.stringify of the body, also when messages are sent again", () => {
    const messages: ChatMessage[] = [
      { role: "system", text: "sys \u2028 \"q\" <x>" },
      { role: "user", text: "line\nnext \u0000 \ud83d\ude00" },
      { role: "assistant", text: null, toolCalls: [{ id: "c1", name: "t", arguments: { a: [1, "b"], n: null } }, { id: "c2", name: "u", arguments: new ToolArgumentsError("u", "[1,") }] },
      { role: "tool", toolCallId: "c1", text: "result" },
      { role: "assistant", text: "" },
      { role: "assistant", text: "done" },
    ];
    const tools = [{ name: "t", description: "d", parameters: { type: "object" } }, { name: "u", parameters: {} }];
    for (const [ms, ts] of [[messages, tools], [messages, []], [[], []], [messages.slice(2), tools]] as const) {
      expect(chatRequestJson("m\"odel", ms, [...ts])).toBe(JSON.stringify(chatRequestBody("m\"odel", [...ms], [...ts])));
    }
    // A second request reuses each message's cached JSON: still the same bytes.
    expect(chatRequestJson("m", messages, tools)).toBe(JSON.stringify(chatRequestBody("m", messages, tools)));
  });

  test("response: text, tool calls, empty and object arguments", () => {
    expect(parseChatResponse(reply({ role: "assistant", content: "hi" }))).toEqual({ text: "hi", toolCalls: [] });
    const turn = parseChatResponse(reply({
      content: null,
      tool_calls: [
        { id: "a", type: "function", function: { name: "x", arguments: "" } },
        { id: "b", function: { name: "y", arguments: { k: 1 } } },
        { id: "c", type: "function", function: { name: "z", arguments: "[1," } },
      ],
    }));
    expect(turn.toolCalls.slice(0, 2)).toEqual([{ id: "a", name: "x", arguments: {} }, { id: "b", name: "y", arguments: { k: 1 } }]);
    expect(turn.toolCalls[2]!.arguments).toBeInstanceOf(ToolArgumentsError);
  });

  test("response: malformed shapes are protocol errors naming the path", () => {
    for (const bad of [null, {}, { choices: [] }, reply({ content: 5 }), reply({ tool_calls: [{ id: "", function: { name: "n", arguments: "{}" } }] })]) {
      let err: unknown;
      try {
        parseChatResponse(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ModelError);
      expect((err as ModelError).kind).toBe("protocol");
    }
  });
});
