import { describe, expect, test } from "bun:test";
import { chatRequestBody, parseChatResponse } from "../../../src/serve/models/openai-wire.ts";
import { ModelError, ToolArgumentsError } from "../../../src/serve/models/types.ts";

const reply = (message: unknown) => ({ choices: [{ index: 0, message, finish_reason: "stop" }], extra: true });

describe("openai wire format", () => {
  test("request: no tools key without tools; assistant text-only message", () => {
    const body = chatRequestBody("m", [{ role: "assistant", text: null }], []);
    expect(body).toEqual({ model: "m", messages: [{ role: "assistant", content: "" }] });
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
