/**
 * Provider-neutral shapes shared by the model adapters (serve.md §5) and the run loop: the
 * conversation sent to a model, the tools offered, one answered turn, and the typed failure.
 * Adapters translate to and from a provider's wire format; nothing here knows about HTTP.
 */

/** A tool call as the model asked for it. */
export interface ToolCall {
  /** Provider-assigned id; a `tool` message answers it by this id. */
  id: string;
  name: string;
  /**
   * The parsed JSON arguments, or a `ToolArgumentsError` when the model sent a string that is not
   * JSON: the runner returns that error's message to the model instead of calling the tool.
   */
  arguments: unknown;
}

export type ChatMessage =
  | { role: "system"; text: string }
  | { role: "user"; text: string }
  /** At least one of `text` and `toolCalls` is meaningful; `toolCalls` absent means none. */
  | { role: "assistant"; text: string | null; toolCalls?: ToolCall[] }
  | { role: "tool"; toolCallId: string; text: string };

/** A tool offered to the model; `parameters` is a JSON Schema object (an MCP tool's inputSchema). */
export interface ToolSpec {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
}

/** One answer of the model: text, tool calls, or both. */
export interface ModelTurn {
  text: string | null;
  toolCalls: ToolCall[];
  /** Tokens the API said the request and its answer took, when it said (OpenAI's `usage`); for metrics. */
  usage?: TokenUsage;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Why a model call failed. `retryable` says the failure is transient (connect error, 429, 5xx):
 * the HTTP adapter has already retried those; the flag lets the caller decide about the run.
 * - timeout: `timeout_ms` elapsed · aborted: the caller's signal fired · http: a non-2xx status
 * - connect: no response (refused, reset, DNS) · protocol: a response (or output) we refuse
 * - exit: the command model exited non-zero or by a signal · spawn: the command could not start
 */
export type ModelErrorKind = "timeout" | "aborted" | "http" | "connect" | "protocol" | "exit" | "spawn";

export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  readonly retryable: boolean;
  /** HTTP status (kind "http"). */
  readonly status: number | undefined;
  /** Exit code, or 128+signal (kind "exit"). */
  readonly exitCode: number | undefined;
  /** The server's `Retry-After`, in ms, already clamped (kind "http"). */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { retryable?: boolean; status?: number; exitCode?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ModelError";
    this.kind = kind;
    this.retryable = options.retryable ?? false;
    this.status = options.status;
    this.exitCode = options.exitCode;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * Tool-call arguments the model sent that are not a JSON object/value. Not thrown: it stands in
 * for the arguments so the runner can answer the model with `message` and let it try again.
 */
export class ToolArgumentsError extends Error {
  /** The string as sent (kept so the assistant message can be replayed to the provider verbatim). */
  readonly raw: string;

  constructor(toolName: string, raw: string) {
    super(`the arguments for tool ${toolName} are not valid JSON; send a JSON object`);
    this.name = "ToolArgumentsError";
    this.raw = raw;
  }
}

export const isToolArgumentsError = (x: unknown): x is ToolArgumentsError => x instanceof ToolArgumentsError;

/** The interface the run loop uses; every provider's `create` returns one (models/registry.ts). */
export interface ChatModel {
  /**
   * Whether the model can ask for tool calls. A model that cannot (the `command` model reads plain
   * text) is offered none, so the MCP servers' tools are not listed for its runs.
   */
  readonly acceptsTools: boolean;
  /** One request/response. Rejects with ModelError only. */
  turn(messages: ChatMessage[], tools: ToolSpec[], signal: AbortSignal): Promise<ModelTurn>;
}

/** A model as a run uses it: the chat, at most `maxTurns` model turns, `timeoutMs` for the whole run. */
export interface RunModel {
  chat: ChatModel;
  maxTurns: number;
  timeoutMs: number;
  /** `model.context_tokens`: every request is held within it (serve/context/; default 32,000). */
  contextTokens?: number;
}
