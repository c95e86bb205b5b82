/**
 * The HTTP details of the `openai` model (models/openai.ts): a bounded body read, the provider's
 * one-line error reason, `Retry-After`, and an abortable backoff sleep. Each states its bound.
 */
import { ModelError } from "./types.ts";
import { scrubText } from "../../shared/scrub.ts";

/** Largest response body accepted; a completion is far smaller, anything bigger is refused unread. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** A `Retry-After` longer than this is clamped: a run must not sleep unbounded on a server's word. */
const MAX_RETRY_AFTER_MS = 30_000;

/** Reads the body as text, refusing more than MAX_RESPONSE_BYTES (checked before and while reading). */
export async function readBounded(res: Response, signal: AbortSignal): Promise<string> {
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
export function providerReason(text: string): string {
  try {
    const msg = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof msg !== "string" || msg === "") return "";
    // Scrubbed before the cut, so no part of a secret is left at the end of a cut line.
    const line = scrubText(msg).replace(/\s+/g, " ");
    return `: ${line.length > 200 ? `${line.slice(0, 200)}…` : line}`;
  } catch {
    return "";
  }
}

/** `Retry-After` in seconds (the HTTP-date form is ignored: backoff applies), clamped; undefined if absent. */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
}

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
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
