// The model provider registry (src/serve/models/registry.ts): every provider goes through the same
// functions, and the command model is a ChatModel like the openai one (one path in the run loop).
import { describe, expect, test } from "bun:test";
import { EXPECTED_PROVIDER, createRunModel, describeModel, modelApiKeyVariable } from "../../../src/serve/models/registry.ts";

describe("model provider registry", () => {
  test("the provider names, in the order of the config message", () => {
    expect(EXPECTED_PROVIDER).toBe('expected "openai" | "command"');
  });

  test("the command model: one turn, no tools, the run bounded by its timeout_ms", () => {
    const run = createRunModel({ provider: "command", command: ["cat"], timeout_ms: 1234 }, { env: {} });
    expect(run.chat.acceptsTools).toBe(false);
    expect(run.maxTurns).toBe(1);
    expect(run.timeoutMs).toBe(1234);
    expect(modelApiKeyVariable({ provider: "command", command: ["cat"], timeout_ms: 1 })).toBeUndefined();
  });

  test("the openai model: tools offered, max_turns and timeout_ms from its config", () => {
    const model = { provider: "openai", base_url: "http://127.0.0.1:1/v1?k=x", model: "m", api_key_env: "K", max_turns: 3, timeout_ms: 99 } as const;
    const run = createRunModel(model, { env: { K: "secret" } });
    expect(run.chat.acceptsTools).toBe(true);
    expect(run.maxTurns).toBe(3);
    expect(run.timeoutMs).toBe(99);
    expect(modelApiKeyVariable(model)).toBe("K");
    expect(describeModel(model)).toBe("openai:m@http://127.0.0.1:1/v1");
  });
});
