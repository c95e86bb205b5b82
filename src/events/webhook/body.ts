/**
 * The decoded body of one webhook delivery (wire notes §12.1, §13; design notes §4.3 steps 7–8),
 * decided on the JSON the way the server wrote it, never on raw bytes. The receiver has already
 * bounded the body (1 MiB) and checked its signature.
 *
 *   a top-level `type`  → a control envelope: "verification" (its `challenge` a string of at most
 *                         1,024 characters), "gap" (its `cursor`: a string, else null),
 *                         "terminated" (its `error`, bounded and scrubbed: it reaches frames and
 *                         logs), any other string → an ignored control;
 *   no `type`           → one event occurrence (checked later, once, by rules/occurrence.ts).
 * null: not UTF-8, not JSON, not an object, a non-string `type`, or a verification without a
 * usable challenge — the receiver answers 400.
 */
import { scrubText } from "../../shared/scrub.ts";
import { isRecord } from "../../shared/guards.ts";
import { boundText, boundValue } from "../rules/server-text.ts";
import type { WebhookBody } from "./types.ts";

const MAX_CHALLENGE_CHARS = 1024;
/** JSON-RPC InternalError: the code of a termination that names none. */
const INTERNAL_ERROR = -32603;
const utf8 = new TextDecoder("utf-8", { fatal: true });

export function decodeWebhookBody(bytes: Uint8Array): WebhookBody | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(bytes));
  } catch {
    // Not UTF-8, not JSON, or nested past what the parser takes.
    return null;
  }
  if (!isRecord(parsed)) return null;
  if (!("type" in parsed)) return { kind: "event", occurrence: parsed };
  const type = parsed.type;
  if (typeof type !== "string") return null;
  switch (type) {
    case "verification": {
      const challenge = parsed.challenge;
      if (typeof challenge !== "string" || challenge.length === 0 || challenge.length > MAX_CHALLENGE_CHARS) return null;
      return { kind: "verification", challenge };
    }
    case "gap":
      return { kind: "gap", cursor: typeof parsed.cursor === "string" ? parsed.cursor : null };
    case "terminated":
      return { kind: "terminated", error: terminationError(parsed.error) };
    default:
      return { kind: "control", type: boundText(scrubText(type)) };
  }
}

/**
 * The envelope's JSON-RPC error as a `terminated` frame carries it; null when absent or not an
 * object. A malformed code or message is filled in as a push termination's is
 * (subscription/push-loop.ts: -32603, "terminated"), so what the server did say (its `data`, its
 * message) still reaches the status frame.
 */
function terminationError(raw: unknown): { code: number; message: string; data?: unknown } | null {
  if (!isRecord(raw)) return null;
  const code = typeof raw.code === "number" && Number.isSafeInteger(raw.code) ? raw.code : INTERNAL_ERROR;
  const message = typeof raw.message === "string" ? boundText(scrubText(raw.message)) : "terminated";
  const error: { code: number; message: string; data?: unknown } = { code, message };
  if (raw.data !== undefined) error.data = boundValue(raw.data, scrubText);
  return error;
}
