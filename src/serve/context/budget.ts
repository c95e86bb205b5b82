/**
 * The model's context budget (issue 12 item A): `model.context_tokens` bounds every model request
 * (system prompt, history, the new input and the tool schemas). Tokens are estimated, not counted:
 * one token per 4 bytes of the request as sent (UTF-8 of the JSON-encoded text, see estimate.ts),
 * which overestimates for English prose and so errs on the side of a smaller request.
 *
 * The fractions: a run compacts before a request would pass 75 % of the window, down to 50 %, so a
 * compaction buys room for several more turns; a summary may take 10 %; one injected event batch
 * 20 %, so a batch always fits next to a compacted history; the tool schemas 25 % (tool-fit.ts
 * shortens descriptions, then offers fewer tools), so the messages keep at least half the window.
 */
import * as v from "valibot";
import { integer } from "../../shared/schema-parts.ts";

export const BYTES_PER_TOKEN = 4;
export const DEFAULT_CONTEXT_TOKENS = 32_000;
/** Below this a summary, the fixed preamble of a batch and one event cannot share a window. */
export const MIN_CONTEXT_TOKENS = 2_000;
export const MAX_CONTEXT_TOKENS = 10_000_000;

/**
 * The `context_tokens` entry of every provider's `model` mapping. Left out of the parsed config
 * when absent (so a config reads back as written); `contextBudget` applies the default.
 */
export const contextTokensEntry = () => v.optional(integer(MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS));

export interface ContextBudget {
  /** The whole window: no request is larger. */
  window: number;
  /** A request larger than this is compacted first. */
  trigger: number;
  /** What a compaction aims for. */
  target: number;
  /** The largest summary kept (a larger one is refused: the oldest turns are trimmed instead). */
  summaryMax: number;
  /** The largest rendered event batch, in UTF-8 bytes. */
  batchBytes: number;
  /** The most the tool schemas of one request may take (tool-fit.ts). */
  toolsMax: number;
}

export function contextBudget(contextTokens: number = DEFAULT_CONTEXT_TOKENS): ContextBudget {
  const window = Math.max(MIN_CONTEXT_TOKENS, Math.floor(contextTokens));
  return {
    window,
    trigger: Math.floor(window * 0.75),
    target: Math.floor(window * 0.5),
    summaryMax: Math.floor(window * 0.1),
    batchBytes: Math.floor(window * 0.2) * BYTES_PER_TOKEN,
    toolsMax: Math.floor(window * 0.25),
  };
}
