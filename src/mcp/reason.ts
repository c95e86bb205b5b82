/**
 * A failure as one line that may be reported anywhere (logs, tool results, state, health): every
 * registered secret replaced (the SDK's messages carry HTTP error bodies and URLs), whitespace
 * folded, bounded.
 */
import { errorMessage } from "../shared/errors.ts";
import { scrubText } from "../shared/scrub.ts";

const MAX_REASON_CHARS = 300;

export function reasonOf(e: unknown): string {
  const text = scrubText(errorMessage(e)).replace(/\s+/g, " ").trim();
  return text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}…` : text || "unknown error";
}
