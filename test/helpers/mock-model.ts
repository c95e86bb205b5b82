/**
 * The mock model's request and step checks (kept here so the fixture stays small), and a client for
 * the fixture run as its own process through the control API. See test/fixtures/mock-model.ts.
 */
import { resolve } from "node:path";
import type { ErrorStep, RecordedRequest, Step, StepFunction, TextStep, ToolCallsStep } from "../fixtures/mock-model.ts";
import { LineClient } from "./fixture.ts";

export const MOCK_MODEL = resolve(import.meta.dir, "../fixtures/mock-model.ts");
export const MOCK_MODEL_READY = "mock-model listening ";

export interface MockModelProcess {
  readonly client: LineClient;
  readonly url: string;
  readonly origin: string;
  readonly pid: number;
  /** Appends plain-data steps (no functions) to the process's script. */
  script(steps: Step[]): Promise<void>;
  /** The recorded requests; with `min`, waits (bounded by `timeoutMs`) until that many exist. */
  requests(min?: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  reset(): Promise<void>;
  release(): Promise<number>;
  /** Refuses chat requests over `bytes` (null: no limit), like `--max-request-bytes`. */
  setMaxRequestBytes(bytes: number | null): Promise<void>;
  /** Kills the process group and waits (bounded) for it to go. For `finally`/afterEach. */
  dispose(): Promise<void>;
}

/**
 * Runs the fixture as a separate process in its own group (`--exit-on-stdin-eof`, so it also ends
 * when this test process dies) and resolves once it is listening.
 */
export async function spawnMockModel(args: string[] = [], readyTimeoutMs = 10_000): Promise<MockModelProcess> {
  const client = new LineClient([process.execPath, MOCK_MODEL, "--exit-on-stdin-eof", ...args]);
  try {
    await client.waitForStderr(MOCK_MODEL_READY, readyTimeoutMs);
    const line = await client.next(readyTimeoutMs);
    const info = JSON.parse(line ?? "null") as { url: string; origin: string; pid: number };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(new URL(path, info.origin), {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      });
      const parsed = (await res.json()) as Record<string, unknown>;
      if (!res.ok) throw new Error(`mock-model ${method} ${path}: ${res.status} ${JSON.stringify(parsed)}`);
      return parsed;
    };
    return {
      client,
      ...info,
      script: async (steps) => void (await call("POST", "/_mock/script", steps)),
      requests: async (min = 0, timeoutMs = 5000) =>
        (await call("GET", `/_mock/requests?min=${min}&timeoutMs=${timeoutMs}`)).requests as RecordedRequest[],
      reset: async () => void (await call("POST", "/_mock/reset")),
      release: async () => (await call("POST", "/_mock/release")).released as number,
      setMaxRequestBytes: async (bytes) => void (await call("POST", "/_mock/max-request-bytes", { bytes })),
      dispose: () => client.dispose(),
    };
  } catch (err) {
    await client.dispose();
    throw new Error(`${(err as Error).message}\nmock-model stderr:\n${client.stderrText()}`);
  }
}

export interface OpenAiError { message: string; type: string; param?: string | null; code?: string | null }

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isContent = (v: unknown) => typeof v === "string" || (Array.isArray(v) && v.every((p) => isObj(p) && typeof p.type === "string"));
const ROLES = ["system", "user", "assistant", "tool"];
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The checks that catch client bugs, worded like OpenAI's; null when the request is acceptable. */
export function validateChatRequest(body: unknown): OpenAiError | null {
  const fail = (message: string, param: string | null = null, code: string | null = null): OpenAiError =>
    ({ message, type: "invalid_request_error", param, code });
  if (!isObj(body)) return fail("The request body must be a JSON object.");
  if (body.stream === true) return fail("The mock model does not stream: omit 'stream' or send false.", "stream", "unsupported_value");
  if (typeof body.model !== "string" || body.model === "") return fail("'model' must be a non-empty string.", "model");
  if (!Array.isArray(body.messages) || body.messages.length === 0) return fail("'messages' must be a non-empty array.", "messages");
  const pending = new Set<string>();
  const unanswered = (before: string) =>
    fail(`An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (missing ${[...pending].join(", ")} ${before}).`, "messages");
  for (const [i, m] of body.messages.entries()) {
    const at = `messages[${i}]`;
    if (!isObj(m)) return fail(`'${at}' must be an object.`, at);
    if (typeof m.role !== "string" || !ROLES.includes(m.role)) return fail(`'${at}.role' must be one of ${ROLES.join(", ")} (got ${JSON.stringify(m.role)}).`, `${at}.role`);
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string" || m.tool_call_id === "") return fail(`'${at}': a 'tool' message needs a 'tool_call_id'.`, `${at}.tool_call_id`);
      if (!pending.delete(m.tool_call_id)) return fail(`'${at}': messages with role 'tool' must respond to a preceding 'tool_calls' entry (unknown tool_call_id ${m.tool_call_id}).`, `${at}.tool_call_id`);
      if (!isContent(m.content)) return fail(`'${at}.content' must be a string or an array of content parts.`, `${at}.content`);
      continue;
    }
    if (pending.size > 0) return unanswered(`before ${at}`);
    if (m.role !== "assistant") {
      if (!isContent(m.content)) return fail(`'${at}.content' must be a string or an array of content parts.`, `${at}.content`);
      continue;
    }
    if (m.tool_calls !== undefined) {
      if (!Array.isArray(m.tool_calls) || m.tool_calls.length === 0) return fail(`'${at}.tool_calls' must be a non-empty array.`, `${at}.tool_calls`);
      for (const [j, c] of m.tool_calls.entries()) {
        const ok = isObj(c) && typeof c.id === "string" && c.id !== "" && c.type === "function" && isObj(c.function) &&
          typeof c.function.name === "string" && typeof c.function.arguments === "string";
        if (!ok) return fail(`'${at}.tool_calls[${j}]' must be {id, type: "function", function: {name, arguments (a JSON string)}}.`, `${at}.tool_calls[${j}]`);
        pending.add(c.id as string);
      }
    }
    const content = m.content ?? null;
    if ((content !== null && !isContent(content)) || (content === null && m.tool_calls === undefined)) {
      return fail(`'${at}': an assistant message needs 'content' or 'tool_calls'.`, `${at}.content`);
    }
  }
  if (pending.size > 0) return unanswered("at the end");
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return fail("'tools' must be an array.", "tools");
    for (const [i, t] of body.tools.entries()) {
      const at = `tools[${i}]`;
      if (!isObj(t) || t.type !== "function" || !isObj(t.function)) return fail(`'${at}' must be {type: "function", function: {...}}.`, at);
      const f = t.function;
      if (typeof f.name !== "string" || !TOOL_NAME.test(f.name)) return fail(`Invalid '${at}.function.name': string does not match pattern '^[a-zA-Z0-9_-]{1,64}$'.`, `${at}.function.name`);
      if (f.parameters !== undefined && !isObj(f.parameters)) return fail(`'${at}.function.parameters' must be a JSON Schema object.`, `${at}.function.parameters`);
      if (f.description !== undefined && typeof f.description !== "string") return fail(`'${at}.function.description' must be a string.`, `${at}.function.description`);
    }
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    const named = isObj(choice) && choice.type === "function" && isObj(choice.function) && typeof choice.function.name === "string";
    if (!named && !["none", "auto", "required"].includes(choice as string)) return fail("Invalid 'tool_choice'.", "tool_choice");
    if (choice !== "none" && !(Array.isArray(body.tools) && body.tools.length > 0)) return fail("'tool_choice' is only allowed when 'tools' are specified.", "tool_choice");
  }
  return null;
}

/** Checks a step (throws TypeError naming `where`); functions only where `allowFunctions`. */
export function parseStep(value: unknown, where: string, allowFunctions: boolean): Step {
  const bad = (why: string): never => {
    throw new TypeError(`mock model: ${where} ${why}`);
  };
  if (typeof value === "function") return allowFunctions ? (value as StepFunction) : bad("is a function (not allowed over HTTP)");
  if (!isObj(value)) return bad("must be an object");
  const kinds = ["toolCalls", "status", "stall", "delayMs", "drop", "text"].filter((k) => k in value);
  if (kinds.length !== 1 && !(kinds.length === 2 && kinds[0] === "toolCalls" && kinds[1] === "text")) {
    bad(`needs exactly one of text, toolCalls, status, stall, delayMs, drop (got ${kinds.join(", ") || "none"})`);
  }
  const then = value.then === undefined ? undefined : parseStep(value.then, `${where}.then`, allowFunctions);
  switch (kinds[0]) {
    case "toolCalls": {
      const calls = value.toolCalls;
      if (!Array.isArray(calls) || calls.length === 0) bad("toolCalls must be a non-empty array");
      for (const c of calls as unknown[]) {
        const ok = isObj(c) && typeof c.name === "string" && c.name !== "" && (isObj(c.arguments) || typeof c.arguments === "string") &&
          (c.id === undefined || typeof c.id === "string");
        if (!ok) bad("toolCalls entries must be {name, arguments (object or string), id?}");
      }
      if (value.text !== undefined && typeof value.text !== "string") bad("text must be a string");
      return value as unknown as ToolCallsStep;
    }
    case "status":
      if (!Number.isInteger(value.status) || (value.status as number) < 400 || (value.status as number) > 599) bad("status must be an integer 400-599");
      if (!["undefined", "number", "string"].includes(typeof value.retryAfter)) bad("retryAfter must be a number or a string");
      return value as unknown as ErrorStep;
    case "stall":
      if (value.stall !== true) bad("stall must be true");
      return then === undefined ? { stall: true } : { stall: true, then };
    case "delayMs": {
      const ms = value.delayMs;
      if (typeof ms !== "number" || !(ms >= 0 && ms <= 600_000)) bad("delayMs must be a number of ms in 0..600000");
      return { delayMs: ms as number, then: then ?? bad("needs a 'then' step") };
    }
    case "drop":
      if (value.drop !== true) bad("drop must be true");
      return { drop: true };
    default:
      if (typeof value.text !== "string") bad("text must be a string");
      if (value.finishReason !== undefined && typeof value.finishReason !== "string") bad("finishReason must be a string");
      return value as unknown as TextStep;
  }
}
