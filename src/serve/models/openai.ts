/**
 * The `openai` model (serve.md §5): one Chat Completions request per turn against any
 * OpenAI-compatible server, with bounded retries for transient failures only.
 *
 * Plain `fetch` rather than ofetch: ofetch's retry defaults include 4xx statuses (408/409/425) and
 * skip POST, and it cannot bound a body while reading it; the loop below states the whole policy.
 * Retried: connect errors (no response), 429 and 5xx — at most MAX_RETRIES times, with exponential
 * backoff or the server's `Retry-After` (bounded). Never retried: any other status, a timeout, an
 * abort, a malformed response. A completion has no side effect at the provider, so a retry after a
 * dropped connection is safe.
 */
import { logLine } from "../../shared/log.ts";
import { errorMessage } from "../../shared/errors.ts";
import type { ModelConfig } from "../config/schema.ts";
import { modelApiKey } from "../config/load.ts";
import type { Env } from "../config/expand.ts";
import { chatRequestBody, parseChatResponse } from "./openai-wire.ts";
import { type ChatModel, ModelError } from "./types.ts";

export type OpenAiModelConfig = Extract<ModelConfig, { provider: "openai" }>;

export const MAX_RETRIES = 3;
/** Largest response body accepted; a completion is far smaller, anything bigger is refused unread. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const MAX_BACKOFF_MS = 8_000;
/** A `Retry-After` longer than this is clamped: a run must not sleep unbounded on a server's word. */
const MAX_RETRY_AFTER_MS = 30_000;

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
  const key = modelApiKey({ model: config, mcp_servers: [] }, options.env ?? process.env);
  const doFetch = options.fetch ?? fetch;
  const baseMs = options.retryBaseMs ?? 500;
  const url = `${config.base_url.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  const scrub = (s: string) => (key === undefined || key === "" ? s : s.split(key).join("[redacted]"));

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
        const retryable = res.status === 429 || res.status >= 500;
        const hint = retryAfterMs(res.headers.get("retry-after"));
        throw new ModelError("http", scrub(`model HTTP ${res.status}${providerReason(text)}`), {
          retryable, status: res.status, ...(hint === undefined ? {} : { retryAfterMs: hint }),
        });
      }
      try {
        return JSON.parse(text);
      } catch {
        throw new ModelError("protocol", `model response is not JSON (content-type ${JSON.stringify(res.headers.get("content-type") ?? "")})`);
      }
    } catch (e) {
      if (e instanceof ModelError) throw e;
      if (both.aborted) throw aborted(e);
      throw new ModelError("connect", `model response interrupted: ${scrub(errorMessage(e))}`, { retryable: true, cause: e });
    }
  }

  return {
    async turn(messages, tools, signal) {
      const body = JSON.stringify(chatRequestBody(config.model, messages, tools));
      for (let retry = 0; ; retry++) {
        if (signal.aborted) throw new ModelError("aborted", "model request aborted");
        try {
          return parseChatResponse(await attempt(body, signal));
        } catch (e) {
          const err = e instanceof ModelError ? e : new ModelError("protocol", scrub(errorMessage(e)), { cause: e });
          if (!err.retryable || retry >= MAX_RETRIES) throw err;
          const delay = err.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, baseMs * 2 ** retry) * (0.5 + Math.random() / 2);
          logLine(`model: ${err.kind === "http" ? `HTTP ${err.status}` : "connection failed"}; retry ${retry + 1}/${MAX_RETRIES} in ${Math.round(delay)} ms`);
          await abortableSleep(delay, signal);
        }
      }
    },
  };
}

/** Reads the body as text, refusing more than MAX_RESPONSE_BYTES (checked before and while reading). */
async function readBounded(res: Response, signal: AbortSignal): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  const tooLarge = () => new ModelError("protocol", `model response exceeds ${MAX_RESPONSE_BYTES} bytes`);
  if (declared > MAX_RESPONSE_BYTES) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw signal.reason;
    }
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks));
}

/** `: <error.message>` from an OpenAI-style error body, one line, bounded; empty otherwise. */
function providerReason(text: string): string {
  try {
    const msg = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof msg !== "string" || msg === "") return "";
    const line = msg.replace(/\s+/g, " ");
    return `: ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`;
  } catch {
    return "";
  }
}

/** `Retry-After` in seconds (the HTTP-date form is ignored: backoff applies), clamped; undefined if absent. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError("aborted", "model request aborted"));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
