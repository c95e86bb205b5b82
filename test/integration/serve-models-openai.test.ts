// The openai model adapter against the in-process mock model (real HTTP on 127.0.0.1).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { VigilError } from "../../src/shared/errors.ts";
import { pollUntil } from "../../src/shared/process-group.ts";
import { type OpenAiModelConfig, createOpenAiModel } from "../../src/serve/models/openai.ts";
import { type ChatMessage, ModelError, ToolArgumentsError, type ToolSpec } from "../../src/serve/models/types.ts";

let mock: MockModel;
const started: MockModel[] = [];

beforeEach(async () => {
  mock = await startMockModel();
  started.push(mock);
});
afterEach(async () => {
  for (const m of started.splice(0)) await m.close();
});

const cfg = (over: Partial<OpenAiModelConfig> = {}): OpenAiModelConfig => ({
  provider: "openai", base_url: mock.url, model: "mock-model", max_turns: 8, timeout_ms: 10_000, ...over,
});
const model = (over: Partial<OpenAiModelConfig> = {}, env: Record<string, string> = {}) =>
  createOpenAiModel(cfg(over), { env, retryBaseMs: 1 });
const hello: ChatMessage[] = [{ role: "system", text: "be brief" }, { role: "user", text: "hi" }];
const never = new AbortController().signal;

async function failure(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

const TOOLS: ToolSpec[] = [
  { name: "tickets__search", description: "Search tickets", parameters: { type: "object", properties: { q: { type: "string" } } } },
];

describe("openai model", () => {
  test("text turn", async () => {
    mock.script([{ text: "hello there" }]);
    const turn = await model().turn(hello, [], never);
    expect(turn).toEqual({ text: "hello there", toolCalls: [], usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } });
    // The counts are the mock's `usage` (prompt_tokens: a quarter of its messages' JSON length), read, not estimated here.
    const sent = (mock.requests[0]!.body as { messages: unknown[] }).messages;
    expect(turn.usage!.inputTokens).toBe(Math.ceil(JSON.stringify(sent).length / 4));
    const body = mock.requests[0]!.body as Record<string, unknown>;
    expect(mock.requests[0]!.path).toBe("/v1/chat/completions");
    expect(body.model).toBe("mock-model");
    expect(body.messages).toEqual([{ role: "system", content: "be brief" }, { role: "user", content: "hi" }]);
    expect("tools" in body).toBe(false);
  });

  test("tool-call turn: ids and parsed arguments", async () => {
    mock.script([{ toolCalls: [{ id: "call_1", name: "tickets__search", arguments: { q: "P1" } }, { name: "tickets__search", arguments: "{not json" }] }]);
    const turn = await model().turn(hello, TOOLS, never);
    expect(turn.text).toBeNull();
    expect(turn.toolCalls[0]).toEqual({ id: "call_1", name: "tickets__search", arguments: { q: "P1" } });
    expect(turn.toolCalls[1]!.id).toMatch(/^call_mock_/);
    expect(turn.toolCalls[1]!.arguments).toBeInstanceOf(ToolArgumentsError);
    expect((turn.toolCalls[1]!.arguments as ToolArgumentsError).raw).toBe("{not json");
  });

  test("request body: tools and a tool result message in the OpenAI shape", async () => {
    const messages: ChatMessage[] = [
      ...hello,
      { role: "assistant", text: null, toolCalls: [{ id: "call_9", name: "tickets__search", arguments: { q: "x" } }] },
      { role: "tool", toolCallId: "call_9", text: "[]" },
    ];
    expect((await model().turn(messages, TOOLS, never)).text).toBe("ok");
    const body = mock.requests[0]!.body as { messages: unknown[]; tools: unknown[] };
    expect(mock.requests[0]!.outcome).toBe(200); // the mock validates the shape (400 otherwise)
    expect(body.tools).toEqual([{ type: "function", function: { name: "tickets__search", description: "Search tickets", parameters: TOOLS[0]!.parameters } }]);
    expect(body.messages.slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "tickets__search", arguments: '{"q":"x"}' } }] },
      { role: "tool", tool_call_id: "call_9", content: "[]" },
    ]);
  });

  test("429 then success is retried (2 requests)", async () => {
    mock.script([{ status: 429, retryAfter: 0 }, { text: "after retry" }]);
    expect((await model().turn(hello, [], never)).text).toBe("after retry");
    expect(mock.requests.map((r) => r.outcome)).toEqual([429, 200]);
  });

  test("a dropped connection is retried", async () => {
    mock.script([{ drop: true }, { text: "back" }]);
    expect((await model().turn(hello, [], never)).text).toBe("back");
    expect(mock.requests).toHaveLength(2);
  });

  test("500 four times fails after 3 retries (4 requests)", async () => {
    mock.script([{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }, { text: "never reached" }]);
    const e = await failure(model().turn(hello, [], never));
    expect(e.kind).toBe("http");
    expect(e.status).toBe(500);
    expect(e.retryable).toBe(true);
    expect(mock.requests).toHaveLength(4);
  });

  test("400 is not retried (1 request)", async () => {
    mock.script([{ status: 400 }, { text: "never reached" }]);
    const e = await failure(model().turn(hello, [], never));
    expect(e).toMatchObject({ kind: "http", status: 400, retryable: false });
    expect(e.message).toContain("Bad request (scripted)");
    expect(mock.requests).toHaveLength(1);
  });

  test("connect errors are retried, then fail as connect", async () => {
    const gone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${gone.port}/v1`;
    await gone.stop(true);
    const e = await failure(model({ base_url: url }).turn(hello, [], never));
    expect(e).toMatchObject({ kind: "connect", retryable: true });
  });

  test("stall + abort: aborted, not retried, and the mock sees the abort", async () => {
    mock.script([{ stall: true }, { text: "never reached" }]);
    const ac = new AbortController();
    const turn = model().turn(hello, [], ac.signal);
    await mock.waitForRequests(1);
    ac.abort();
    expect((await failure(turn)).kind).toBe("aborted");
    expect(await pollUntil(() => mock.requests[0]!.outcome === "aborted", 5000)).toBe(true);
    expect(mock.requests).toHaveLength(1);
  });

  test("an already aborted signal sends nothing", async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await failure(model().turn(hello, [], ac.signal))).kind).toBe("aborted");
    expect(mock.requests).toHaveLength(0);
  });

  test("stall + short timeout_ms: timeout, not retried", async () => {
    mock.script([{ stall: true }, { text: "never reached" }]);
    const e = await failure(model({ timeout_ms: 200 }).turn(hello, [], never));
    expect(e.kind).toBe("timeout");
    expect(mock.requests).toHaveLength(1);
  });

  // The mock only scripts 4xx/5xx bodies, so a 200 with a bad body comes from a tiny local server.
  async function servedBody(body: string | Uint8Array, contentType = "application/json") {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(body, { headers: { "content-type": contentType } }) });
    try {
      return await failure(model({ base_url: `http://127.0.0.1:${server.port}/v1` }).turn(hello, [], never));
    } finally {
      await server.stop(true);
    }
  }

  test("malformed responses are refused as protocol errors", async () => {
    const empty = await servedBody(JSON.stringify({ choices: [] }));
    expect(empty).toMatchObject({ kind: "protocol", retryable: false });
    expect(empty.message).toContain("choices");
    const noArgs = await servedBody(JSON.stringify({ choices: [{ message: { content: null, tool_calls: [{ id: "c", type: "function", function: { name: "t" } }] } }] }));
    expect(noArgs.kind).toBe("protocol");
    expect((await servedBody("not json at all", "text/plain")).kind).toBe("protocol");
  });

  test("a response over 16 MiB is refused", async () => {
    const e = await servedBody(new Uint8Array(16 * 1024 * 1024 + 10).fill(32));
    expect(e.kind).toBe("protocol");
    expect(e.message).toContain("exceeds");
  });

  test("API key sent only when api_key_env is set, and never in errors", async () => {
    const secure = await startMockModel({ apiKey: "sk-test-123" });
    started.push(secure);
    const m = createOpenAiModel(cfg({ base_url: secure.url, api_key_env: "TEST_MODEL_KEY" }), { env: { TEST_MODEL_KEY: "sk-test-123" } });
    expect((await m.turn(hello, [], never)).text).toBe("ok");
    expect(secure.requests[0]!.authorization).toEqual({ present: true, scheme: "Bearer" });

    const anonymous = createOpenAiModel(cfg({ base_url: secure.url }), { env: { TEST_MODEL_KEY: "sk-test-123" } });
    const e = await failure(anonymous.turn(hello, [], never));
    expect(e).toMatchObject({ kind: "http", status: 401 });
    expect(secure.requests[1]!.authorization.present).toBe(false);

    expect(() => createOpenAiModel(cfg({ api_key_env: "TEST_MODEL_KEY" }), { env: {} })).toThrow(VigilError);
  });

  test("a provider error that echoes the key is redacted", async () => {
    const echo = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: (req) => Response.json({ error: { message: `Incorrect API key provided: ${req.headers.get("authorization")}` } }, { status: 401 }),
    });
    try {
      const m = createOpenAiModel(cfg({ base_url: `http://127.0.0.1:${echo.port}/v1`, api_key_env: "K" }), { env: { K: "sk-very-secret" } });
      const e = await failure(m.turn(hello, [], never));
      expect(e.message).toContain("Incorrect API key provided");
      expect(e.message).not.toContain("sk-very-secret");
    } finally {
      await echo.stop(true);
    }
  });
});
