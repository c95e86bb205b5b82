/**
 * The `openai` model provider (serve.md §2, §5): its `model` mapping, and one Chat Completions
 * request per turn against any OpenAI-compatible server, with bounded retries for transient
 * failures only.
 *
 * Plain `fetch` rather than ofetch: ofetch's retry defaults include 4xx statuses (408/409/425) and
 * skip POST, and it cannot bound a body while reading it; the loop below states the whole policy.
 * Retried: connect errors (no response), 408, 429 and 5xx — at most MAX_RETRIES times, with
 * exponential backoff or the server's `Retry-After` (bounded). Never retried: any other status, a
 * timeout, an abort, a malformed response. What is still failing after that is an outage, not the
 * request's fault (models/availability.ts). A completion has no side effect at the provider, so a retry after a
 * dropped connection is safe.
 *
 * Config: `base_url` expands `${VAR}` (and is secret when it did, or when it embeds credentials);
 * the API key is never in the config, only the name of the variable holding it (`api_key_env`).
 */
import * as v from "valibot";
import { MCP_SERVER_LIMITS } from "../../mcp/server-config.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { registerSecrets, scrubText } from "../../shared/scrub.ts";
import { ENV_NAME, httpUrl, integer, text } from "../../shared/schema-parts.ts";
import type { Env } from "../config/env.ts";
import { contextTokensEntry } from "../context/budget.ts";
import { isUnavailableStatus } from "./availability.ts";
import { abortableSleep, providerReason, readBounded, retryAfterMs } from "./openai-http.ts";
import { chatRequestJson, parseChatResponse } from "./openai-wire.ts";
import { type ProviderEntry, readApiKey, shortUrl } from "./provider.ts";
import { type ChatModel, ModelError } from "./types.ts";

export { MAX_RESPONSE_BYTES } from "./openai-http.ts";

/** Bounds of the `openai` model mapping; URL and variable names are bounded as everywhere in the file. */
export const OPENAI_LIMITS = {
  urlChars: MCP_SERVER_LIMITS.urlChars,
  envNameChars: MCP_SERVER_LIMITS.envNameChars,
  modelNameChars: 256,
  maxTurns: 64,
  /** `timeout_ms`: 1 h. */
  timeoutMs: 3_600_000,
} as const;

function openAiModelSchema(expanded: boolean) {
  const L = OPENAI_LIMITS;
  return v.strictObject({
    provider: v.literal("openai"),
    base_url: httpUrl(expanded, L.urlChars),
    model: text("a model name", L.modelNameChars, 1),
    /** Name of the variable holding the API key; the key itself is read at use time. */
    api_key_env: v.optional(text("an environment variable name", L.envNameChars, 1, ENV_NAME)),
    max_turns: v.optional(integer(1, L.maxTurns), 8),
    timeout_ms: v.optional(integer(1, L.timeoutMs), 120_000),
    context_tokens: contextTokensEntry(),
  }, "expected a mapping");
}

export type OpenAiModelConfig = v.InferOutput<ReturnType<typeof openAiModelSchema>>;

export const openAiProvider = {
  name: "openai",
  schema: openAiModelSchema,
  limits: OPENAI_LIMITS,
  expand: (model, value) => ({ ...model, base_url: value(model.base_url, ["base_url"]) }),
  redact: (model, hide) => ({ ...model, base_url: hide.url(model.base_url, ["base_url"]) }),
  describe: (model) => `openai:${model.model}@${shortUrl(model.base_url)}`,
  apiKeyVariable: (model) => model.api_key_env,
  create: (model, { env }) => ({
    chat: createOpenAiModel(model, { env }), maxTurns: model.max_turns, timeoutMs: model.timeout_ms, contextTokens: model.context_tokens,
  }),
} as const satisfies ProviderEntry<ReturnType<typeof openAiModelSchema>>;

export const MAX_RETRIES = 3;
const MAX_BACKOFF_MS = 8_000;

export interface OpenAiModelOptions {
  env?: Env;
  fetch?: typeof fetch;
  /** First backoff delay; doubles per retry (default 500 ms). Tests pass a small value. */
  retryBaseMs?: number;
}

/**
 * Creates the model client. Reads the API key once, here (throws VigilError("config_invalid") when
 * `api_key_env` names an unset variable). `turn()` rejects with ModelError only; its messages name
 * the status and the server's one-line reason, never the key or the conversation.
 */
export function createOpenAiModel(config: OpenAiModelConfig, options: OpenAiModelOptions = {}): ChatModel {
  const key = config.api_key_env === undefined ? undefined : readApiKey(config.api_key_env, options.env ?? process.env);
  const doFetch = options.fetch ?? fetch;
  const baseMs = options.retryBaseMs ?? 500;
  const url = `${config.base_url.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  // Provider error bodies may echo the key (or any other secret): every message is scrubbed (shared/scrub.ts).
  if (key !== undefined) registerSecrets([key]);
  const scrub = scrubText;

  async function attempt(body: string, signal: AbortSignal): Promise<unknown> {
    // The per-request deadline and the caller's signal abort the same fetch; which fired decides the error kind.
    const deadline = AbortSignal.timeout(config.timeout_ms);
    const both = AbortSignal.any([signal, deadline]);
    const aborted = (e?: unknown) =>
      signal.aborted
        ? new ModelError("aborted", "model request aborted", { cause: e })
        : new ModelError("timeout", `model request timed out after ${config.timeout_ms} ms`, { cause: e });
    let res: Response;
    try {
      res = await doFetch(url, { method: "POST", headers, body, signal: both, redirect: "error" });
    } catch (e) {
      if (both.aborted) throw aborted(e);
      throw new ModelError("connect", `cannot reach the model at ${new URL(url).origin}: ${scrub(errorMessage(e))}`, { retryable: true, cause: e });
    }
    try {
      const text = await readBounded(res, both);
      if (!res.ok) {
        const retryable = isUnavailableStatus(res.status);
        const hint = retryAfterMs(res.headers.get("retry-after"));
        throw new ModelError("http", scrub(`model HTTP ${res.status}${providerReason(text)}`), {
          retryable, status: res.status, ...(hint === undefined ? {} : { retryAfterMs: hint }),
        });
      }
      try {
        return JSON.parse(text);
      } catch {
        throw new ModelError("protocol", scrub(`model response is not JSON (content-type ${JSON.stringify(res.headers.get("content-type") ?? "")})`));
      }
    } catch (e) {
      if (e instanceof ModelError) throw e;
      if (both.aborted) throw aborted(e);
      throw new ModelError("connect", `model response interrupted: ${scrub(errorMessage(e))}`, { retryable: true, cause: e });
    }
  }

  return {
    acceptsTools: true,
    async turn(messages, tools, signal) {
      const body = chatRequestJson(config.model, messages, tools);
      for (let retry = 0; ; retry++) {
        if (signal.aborted) throw new ModelError("aborted", "model request aborted");
        try {
          return parseChatResponse(await attempt(body, signal));
        } catch (e) {
          const err = e instanceof ModelError ? e : new ModelError("protocol", scrub(errorMessage(e)), { cause: e });
          if (!err.retryable || retry >= MAX_RETRIES) throw err;
          const delay = err.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, baseMs * 2 ** retry) * (0.5 + Math.random() / 2);
          logLine(`model: ${err.kind === "http" ? `HTTP ${err.status}` : "connection failed"}; retry ${retry + 1}/${MAX_RETRIES} in ${Math.round(delay)} ms`, { level: "warn", code: "model_retry" });
          await abortableSleep(delay, signal);
        }
      }
    },
  };
}

