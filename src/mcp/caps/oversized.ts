/**
 * Stand-ins for MCP messages too large to read (serve.md §6 item 8).
 *
 * An over-cap message is never parsed whole. When it is (or may be) an event notification, the
 * push loop still has to learn that an event went by unread, or the model would never hear of it:
 * so the transport hands over a tiny `notifications/events/event` in its place, marked `$oversized`,
 * carrying only the scalars that fit in the bounded head (eventId, name, cursor, the subscription id
 * for routing). The push loop reports it as a gap and keeps the stream.
 *
 * When the head ends before `method` (the payload was serialized first), the message is assumed to
 * be an event and marked `$ambiguous`, unless the head already proves it is a request or a response:
 * a wrong guess costs one spurious gap notice, the other way round an event would vanish silently.
 */
import { isRecord } from "../../shared/guards.ts";
import { SUBSCRIPTION_ID_META, scanHead } from "../../shared/ndjson/message-head.ts";

export { SUBSCRIPTION_ID_META } from "../../shared/ndjson/message-head.ts";

export const EVENT_METHOD = "notifications/events/event";
/** How much of an over-cap message is kept for the decision: what the transports keep too. */
export const STAND_IN_HEAD_BYTES = 4096;

/** Type aliases rather than interfaces: they fit the SDK's open `params` record without a cast. */
export type StandInParams = {
  $oversized: true;
  /** The head ended before `method`: possibly not an event at all. */
  $ambiguous?: true;
  eventId?: string;
  name?: string;
  cursor?: string | null;
  _meta?: { [SUBSCRIPTION_ID_META]: string | number };
};

export type StandIn = {
  jsonrpc: "2.0";
  method: typeof EVENT_METHOD;
  params: StandInParams;
};

/** What the head of an over-cap message is, as far as it can tell. */
export type HeadVerdict =
  | { kind: "event"; standIn: StandIn }
  /** A response (result or error), or a message with an id that is not an event. */
  | { kind: "response" }
  | { kind: "request" }
  /** Another notification, or not a JSON-RPC object at all. */
  | { kind: "other" };

const decoder = new TextDecoder("utf-8", { fatal: false });

export function judgeHead(head: Uint8Array): HeadVerdict {
  let facts: ReturnType<typeof scanHead>;
  try {
    // A head cut inside a multi-byte character decodes to U+FFFD at its very end, inside a value
    // that was cut off anyway.
    facts = scanHead(decoder.decode(head.subarray(0, STAND_IN_HEAD_BYTES)));
  } catch {
    return { kind: "other" }; // the scanner does not throw; this only keeps the promise absolute
  }
  if (facts.notObject) return { kind: "other" };
  if (facts.responseFirst) return { kind: "response" };
  if (facts.method !== undefined) {
    if (facts.method === EVENT_METHOD) return { kind: "event", standIn: standIn(facts.params, false) };
    return facts.sawId && !facts.method.startsWith("notifications/") ? { kind: "request" } : { kind: "other" };
  }
  // A complete object without a method is no notification; an id proves a request or a response.
  if (facts.complete) return { kind: "other" };
  if (facts.sawId) return { kind: "request" };
  return { kind: "event", standIn: standIn(facts.params, true) };
}

/**
 * The stand-in for an over-cap message known only by its first bytes (stdio lines, SSE events);
 * null when it is not an events notification.
 */
export function standInFromHead(head: Uint8Array): StandIn | null {
  const verdict = judgeHead(head);
  return verdict.kind === "event" ? verdict.standIn : null;
}

/** The same decision for an over-cap message that was parsed (the SDK's HTTP transport parses). */
export function standInFromMessage(message: unknown): StandIn | null {
  if (!isRecord(message) || message.method !== EVENT_METHOD) return null;
  const params = isRecord(message.params) ? message.params : {};
  const meta = isRecord(params._meta) ? params._meta : {};
  const subscriptionId = meta[SUBSCRIPTION_ID_META];
  return standIn(
    {
      eventId: typeof params.eventId === "string" ? params.eventId : undefined,
      name: typeof params.name === "string" ? params.name : undefined,
      cursor: typeof params.cursor === "string" || params.cursor === null ? params.cursor : undefined,
      subscriptionId:
        typeof subscriptionId === "string" || (typeof subscriptionId === "number" && Number.isFinite(subscriptionId))
          ? subscriptionId
          : undefined,
    },
    false,
  );
}

function standIn(
  scalars: { eventId?: string; name?: string; cursor?: string | null; subscriptionId?: string | number },
  ambiguous: boolean,
): StandIn {
  const params: StandInParams = { $oversized: true };
  if (ambiguous) params.$ambiguous = true;
  if (scalars.eventId !== undefined) params.eventId = scalars.eventId;
  if (scalars.name !== undefined) params.name = scalars.name;
  if (scalars.cursor !== undefined) params.cursor = scalars.cursor;
  if (scalars.subscriptionId !== undefined) params._meta = { [SUBSCRIPTION_ID_META]: scalars.subscriptionId };
  return { jsonrpc: "2.0", method: EVENT_METHOD, params };
}

