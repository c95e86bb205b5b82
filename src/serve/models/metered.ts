/**
 * Model metrics (issue 15 item 1): every `ChatModel.turn` — a run's requests and a compaction's
 * summary request alike, whatever the provider — counted by outcome, timed, and its token usage
 * added when the API reported it. One wrapper at the model's creation (registry.ts), so no provider
 * and no caller has to remember it. A turn is one request as the run sees it: the HTTP client's
 * retries of a transient failure are inside it.
 */
import { MODEL } from "../../shared/metrics/catalog.ts";
import { isModelUnavailable } from "./availability.ts";
import { type ChatModel, ModelError } from "./types.ts";

/** The outcome label: a bounded set. `unavailable` is an outage other than a timeout (availability.ts). */
export const MODEL_OUTCOMES = ["ok", "error", "timeout", "aborted", "unavailable"] as const;
export type ModelOutcome = (typeof MODEL_OUTCOMES)[number];

/** The outcome of a turn that rejected with `e`. Pure. */
export function modelOutcome(e: unknown): ModelOutcome {
  if (e instanceof ModelError) {
    if (e.kind === "aborted") return "aborted";
    if (e.kind === "timeout") return "timeout";
  }
  return isModelUnavailable(e) ? "unavailable" : "error";
}

// Looked up once, so a turn costs two increments and one observe; every outcome shows from 0.
const REQUESTS = Object.fromEntries(MODEL_OUTCOMES.map((o) => [o, MODEL.requests.at(o)])) as Record<ModelOutcome, ReturnType<typeof MODEL.requests.at>>;
const LATENCY = Object.fromEntries(MODEL_OUTCOMES.map((o) => [o, MODEL.latency.at(o)])) as Record<ModelOutcome, ReturnType<typeof MODEL.latency.at>>;
const TOKENS_IN = MODEL.tokens.at("input");
const TOKENS_OUT = MODEL.tokens.at("output");

/** `chat` with its turns counted. */
export function meteredChat(chat: ChatModel): ChatModel {
  return {
    acceptsTools: chat.acceptsTools,
    async turn(messages, tools, signal) {
      const start = performance.now();
      try {
        const answer = await chat.turn(messages, tools, signal);
        REQUESTS.ok.inc();
        LATENCY.ok.observeSince(start);
        if (answer.usage !== undefined) {
          TOKENS_IN.inc(answer.usage.inputTokens);
          TOKENS_OUT.inc(answer.usage.outputTokens);
        }
        return answer;
      } catch (e) {
        const outcome = modelOutcome(e);
        REQUESTS[outcome].inc();
        LATENCY[outcome].observeSince(start);
        throw e;
      }
    },
  };
}
