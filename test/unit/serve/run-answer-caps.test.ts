/** The caps on one model answer (run/answer-caps.ts; issue 11 item 8): pure, sizes only in the messages. */
import { describe, expect, test } from "bun:test";
import { ToolArgumentsError, type ModelTurn } from "../../../src/serve/models/types.ts";
import { MODEL_ANSWER_CAPS, modelAnswerProblem } from "../../../src/serve/run/answer-caps.ts";
import { TRANSCRIPT_DEFAULTS } from "../../../src/serve/state/transcript.ts";

const caps = { textChars: 10, toolCalls: 2, toolNameChars: 8, toolCallIdChars: 6, toolArgumentsChars: 12 };
const call = (name = "fx__a", args: unknown = {}, id = "c1") => ({ id, name, arguments: args });
const turn = (text: string | null, toolCalls: ModelTurn["toolCalls"] = []): ModelTurn => ({ text, toolCalls });

describe("model answer caps", () => {
  test("answers at the caps pass", () => {
    expect(modelAnswerProblem(turn("x".repeat(10)), caps)).toBeNull();
    expect(modelAnswerProblem(turn(null, [call("n".repeat(8), { a: "1234" }, "i".repeat(6)), call()]), caps)).toBeNull();
  });

  test("each cap is checked, and the message gives sizes, never content", () => {
    const cases: [ModelTurn, string][] = [
      [turn("SECRET-TEXT"), "its text has 11 characters, at most 10"],
      [turn(null, [call(), call(), call()]), "3 tool calls, at most 2"],
      [turn(null, [call(), call("SECRETNAME")]), "the name of tool call 2 has 10 characters, at most 8"],
      [turn(null, [call("fx__a", {}, "SECRET-ID")]), "the id of tool call 1 has 9 characters, at most 6"],
      [turn(null, [call("fx__a", { a: "SECRET-ARGS" })]), "the arguments of tool call 1 has 19 characters, at most 12"],
      [turn(null, [call("fx__a", new ToolArgumentsError("fx__a", "SECRET-NOT-JSON"))]), "the arguments of tool call 1 has 15 characters"],
      [turn(null, [call("fx__a", "S".repeat(13))]), "the arguments of tool call 1 has 13 characters"],
    ];
    for (const [t, expected] of cases) {
      const problem = modelAnswerProblem(t, caps);
      expect(problem).toContain(expected);
      expect(problem).not.toContain("SECRET");
    }
  });

  test("a message frame of an answer at the text cap fits one transcript record, even when every character escapes to 6 bytes", () => {
    const worst = JSON.stringify({ type: "message", role: "assistant", text: "\u0001".repeat(MODEL_ANSWER_CAPS.textChars) });
    expect(Buffer.byteLength(worst) + 100).toBeLessThan(TRANSCRIPT_DEFAULTS.maxRecordBytes);
  });
});
