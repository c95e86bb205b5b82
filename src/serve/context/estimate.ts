/**
 * Token estimates of what a request carries (budget.ts: 4 bytes per token). Text is measured as it
 * goes on the wire, JSON-encoded, so quotes, backslashes and control characters count at their
 * escaped size and the estimate bounds the request body, whatever the provider.
 */
import { type ChatMessage, type ToolSpec, isToolArgumentsError } from "../models/types.ts";
import { BYTES_PER_TOKEN } from "./budget.ts";
import { jsonTextBytes } from "../../shared/json-text-cache.ts";

/** Per-message framing on the wire (`{"role":"assistant","content":…}` and the like). */
const MESSAGE_OVERHEAD_BYTES = 48;
/** A request's own framing (model name, keys). */
export const REQUEST_OVERHEAD_TOKENS = 64;

const cache = new WeakMap<object, number>();

/** UTF-8 bytes of the text JSON-encoded (a long text's encoding is cached: shared/json-text-cache.ts). */
export function textBytes(text: string): number {
  return jsonTextBytes(text);
}

export function bytesToTokens(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

export function messageTokens(m: ChatMessage): number {
  const known = cache.get(m);
  if (known !== undefined) return known;
  let bytes = MESSAGE_OVERHEAD_BYTES + (m.text === null ? 4 : textBytes(m.text));
  if (m.role === "tool") bytes += textBytes(m.toolCallId);
  if (m.role === "assistant" && m.toolCalls !== undefined) {
    for (const c of m.toolCalls) bytes += MESSAGE_OVERHEAD_BYTES + textBytes(c.id) + textBytes(c.name) + textBytes(argumentsText(c.arguments));
  }
  const tokens = bytesToTokens(bytes);
  cache.set(m, tokens);
  return tokens;
}

export function messagesTokens(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) n += messageTokens(m);
  return n;
}

export function toolsTokens(specs: readonly ToolSpec[]): number {
  return specs.length === 0 ? 0 : bytesToTokens(jsonBytes(specs) + specs.length * MESSAGE_OVERHEAD_BYTES);
}

/** Arguments travel as a JSON string (an unparsable one verbatim): measured as that string. */
function argumentsText(args: unknown): string {
  if (isToolArgumentsError(args)) return args.raw;
  try {
    return JSON.stringify(args ?? {}) ?? "{}";
  } catch {
    return "{}";
  }
}

function jsonBytes(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? "null", "utf8");
  } catch {
    return 2;
  }
}
