/**
 * The OpenAI Chat Completions wire format (non-streaming): mapping our provider-neutral messages
 * and tools to a request body, and validating a response body into a ModelTurn. Pure: no I/O.
 *
 * Response objects are checked with loose `v.object` on purpose: providers (OpenAI, vLLM, Ollama,
 * llama.cpp, LiteLLM) add fields of their own; only the fields we read must have the right shape.
 */
import * as v from "valibot";
import { jsonText } from "../../shared/json-text-cache.ts";
import { type ChatMessage, ModelError, type ModelTurn, type TokenUsage, type ToolCall, ToolArgumentsError, type ToolSpec, isToolArgumentsError } from "./types.ts";

/** Builds the request body. `tools` is omitted when empty: some servers refuse `tools: []`. */
export function chatRequestBody(model: string, messages: ChatMessage[], tools: ToolSpec[]): Record<string, unknown> {
  return {
    model,
    messages: messages.map(toWireMessage),
    ...(tools.length > 0 ? { tools: tools.map(toWireTool) } : {}),
  };
}

/**
 * The request body as JSON text, byte for byte `JSON.stringify(chatRequestBody(…))`, built from
 * each message's cached wire JSON: a session's history goes out again with every batch, and
 * re-serializing all of it per request was most of the request's cost. Messages are immutable once
 * made (the context keeper cuts into copies; estimate.ts caches their token counts the same way).
 */
export function chatRequestJson(model: string, messages: readonly ChatMessage[], tools: ToolSpec[]): string {
  let out = `{"model":${JSON.stringify(model)},"messages":[`;
  for (let i = 0; i < messages.length; i++) out += (i === 0 ? "" : ",") + wireMessageJson(messages[i]!);
  out += "]";
  if (tools.length > 0) out += `,"tools":${JSON.stringify(tools.map(toWireTool))}`;
  return `${out}}`;
}

const wireJson = new WeakMap<ChatMessage, string>();

function wireMessageJson(m: ChatMessage): string {
  let json = wireJson.get(m);
  if (json === undefined) {
    json = textMessageJson(m) ?? JSON.stringify(toWireMessage(m));
    wireJson.set(m, json);
  }
  return json;
}

/**
 * A text-only message's JSON as `JSON.stringify(toWireMessage(m))` writes it, with its text's
 * encoding from the shared cache (the history's copy of a message is another object, same text);
 * null for the others (tool messages, tool calls), which go through JSON.stringify.
 */
function textMessageJson(m: ChatMessage): string | null {
  if (m.role === "user" || m.role === "system") return `{"role":"${m.role}","content":${jsonText(m.text)}}`;
  if (m.role === "assistant" && (m.toolCalls ?? []).length === 0) return `{"role":"assistant","content":${jsonText(m.text ?? "")}}`;
  return null;
}

function toWireMessage(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.text };
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: m.text };
    case "assistant": {
      const calls = m.toolCalls ?? [];
      if (calls.length === 0) return { role: "assistant", content: m.text ?? "" };
      return {
        role: "assistant",
        content: m.text,
        tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: wireArguments(c) } })),
      };
    }
  }
}

/** Arguments go back as the JSON string the provider expects; unparsable ones are replayed verbatim. */
function wireArguments(call: ToolCall): string {
  if (isToolArgumentsError(call.arguments)) return call.arguments.raw;
  return JSON.stringify(call.arguments ?? {});
}

function toWireTool(t: ToolSpec): Record<string, unknown> {
  return {
    type: "function",
    function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters },
  };
}

const WireToolCall = v.object({
  id: v.pipe(v.string(), v.minLength(1)),
  type: v.optional(v.literal("function")),
  function: v.object({
    name: v.pipe(v.string(), v.minLength(1)),
    // Some OpenAI-compatible servers send the arguments as an object rather than a JSON string.
    arguments: v.union([v.string(), v.record(v.string(), v.unknown())]),
  }),
});

const WireResponse = v.object({
  choices: v.pipe(
    v.array(
      v.object({
        message: v.object({
          content: v.nullish(v.string()),
          tool_calls: v.nullish(v.array(WireToolCall)),
        }),
      }),
    ),
    v.minLength(1),
  ),
  // Not checked here: usage only feeds metrics, so a server's odd `usage` never fails a turn (wireUsage).
  usage: v.optional(v.unknown()),
});

const TokenCount = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
const WireUsage = v.object({ prompt_tokens: TokenCount, completion_tokens: TokenCount });

/** `usage.prompt_tokens` / `completion_tokens` when both are sane counts; else nothing (servers that omit or garble it). */
export function wireUsage(usage: unknown): TokenUsage | undefined {
  const r = v.safeParse(WireUsage, usage);
  return r.success ? { inputTokens: r.output.prompt_tokens, outputTokens: r.output.completion_tokens } : undefined;
}

/** Validates a parsed response body. Throws ModelError("protocol") naming the first bad path only (no values). */
export function parseChatResponse(body: unknown): ModelTurn {
  const r = v.safeParse(WireResponse, body);
  if (!r.success) {
    const issue = r.issues[0];
    const path = v.getDotPath(issue) ?? "(root)";
    throw new ModelError("protocol", `model response is malformed at ${path}: ${issue.expected === null ? "unexpected value" : `expected ${issue.expected}`}`);
  }
  const message = r.output.choices[0]!.message;
  const toolCalls = (message.tool_calls ?? []).map((c): ToolCall => ({
    id: c.id,
    name: c.function.name,
    arguments: parseArguments(c.function.name, c.function.arguments),
  }));
  const usage = wireUsage(r.output.usage);
  return usage === undefined ? { text: message.content ?? null, toolCalls } : { text: message.content ?? null, toolCalls, usage };
}

function parseArguments(name: string, raw: string | Record<string, unknown>): unknown {
  if (typeof raw !== "string") return raw;
  // An empty string is what several servers send for a tool without parameters.
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch {
    return new ToolArgumentsError(name, raw);
  }
}
