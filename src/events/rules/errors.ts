/**
 * JSON-RPC errors from `events/*` calls and termination notices: what they mean for a subscription.
 *
 * The Events drafts have used two numberings for the same errors (the design sketch's -32011..-32015
 * and SEP-3415's provisional -32023..-32027), and servers of both generations are deployed, so both
 * map to the same names. Where a draft gives the error typed `data`, the decision also reads it.
 */
import { isRecord } from "../../shared/guards.ts";

export class EventsRpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "EventsRpcError";
    this.code = code;
    this.data = data;
  }
}

/**
 * Any thrown value as an EventsRpcError. Errors that carry a numeric JSON-RPC `code` (the SDK's
 * McpError) keep it; anything else (a dropped connection, a local timeout) becomes code 0, which
 * classifies as transient.
 */
export function toEventsRpcError(error: unknown): EventsRpcError {
  if (error instanceof EventsRpcError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof error === "object" && error !== null) {
    const { code, data } = error as { code?: unknown; data?: unknown };
    if (typeof code === "number" && Number.isInteger(code)) return new EventsRpcError(code, message, data);
  }
  return new EventsRpcError(0, message);
}

export type EventsErrorKind =
  | "not_found"
  | "forbidden"
  | "resource_exhausted"
  | "unsupported"
  | "callback"
  | "method_not_found"
  | "invalid_params"
  | "transient";

export interface EventsErrorClass {
  kind: EventsErrorKind;
  /** The subscription ends instead of being retried in place. */
  terminal: boolean;
  /** Retrying the same request will not help (slow "refused" retries only). */
  permanent: boolean;
  /** Forbidden: retried on a short backoff; the caller makes it permanent after 5 in a row. */
  forbidden: boolean;
  /** The event type was removed or changed in place: re-list and subscribe again. */
  rediscover: boolean;
}

const NAMED: ReadonlyMap<number, { kind: EventsErrorKind; name: string }> = new Map([
  [-32601, { kind: "method_not_found", name: "MethodNotFound" }],
  [-32602, { kind: "invalid_params", name: "InvalidParams" }],
  [-32011, { kind: "not_found", name: "NotFound" }],
  [-32023, { kind: "not_found", name: "NotFound" }],
  [-32012, { kind: "forbidden", name: "Forbidden" }],
  [-32024, { kind: "forbidden", name: "Forbidden" }],
  [-32013, { kind: "resource_exhausted", name: "ResourceExhausted" }],
  [-32025, { kind: "resource_exhausted", name: "ResourceExhausted" }],
  [-32014, { kind: "unsupported", name: "Unsupported" }],
  [-32026, { kind: "unsupported", name: "Unsupported" }],
  [-32015, { kind: "callback", name: "CallbackEndpointError" }],
  [-32027, { kind: "callback", name: "CallbackEndpointError" }],
] as const);

/** Names for codes that classify as transient, so descriptions still say what they are. */
const OTHER_NAMES: ReadonlyMap<number, string> = new Map([
  [-32700, "ParseError"],
  [-32600, "InvalidRequest"],
  [-32603, "InternalError"],
  [-32001, "RequestTimeout"],
]);

const TERMINAL: ReadonlySet<EventsErrorKind> = new Set([
  "method_not_found",
  "invalid_params",
  "not_found",
  "forbidden",
  "unsupported",
  "callback",
]);
const PERMANENT: ReadonlySet<EventsErrorKind> = new Set(["method_not_found", "invalid_params", "not_found", "unsupported"]);

export function classifyEventsError(code: number, data: unknown): EventsErrorClass {
  const kind = NAMED.get(code)?.kind ?? "transient";
  const rediscover =
    (kind === "not_found" && field(data, "kind") === "event") || (kind === "unsupported" && field(data, "reason") === "schema_changed");
  return {
    kind,
    terminal: TERMINAL.has(kind),
    // A removed or reshaped type is not a dead end: the type may be back under a new descriptor.
    permanent: PERMANENT.has(kind) && !rediscover,
    forbidden: kind === "forbidden",
    rediscover,
  };
}

function field(data: unknown, key: string): unknown {
  return isRecord(data) ? data[key] : undefined;
}

const DESCRIPTION_MAX = 300;
/** Typed-data members worth showing, in this order; other members are left out. */
const DATA_KEYS = ["kind", "reason", "feature", "value", "limit", "max"] as const;

/**
 * One line for logs and status frames: `-32011 NotFound: no such event (kind: event)`. The message
 * and data come from the server, so the line is bounded and control characters are escaped (a
 * hostile server must not be able to forge extra log lines).
 */
export function describeRpcError(code: number, message: string, data: unknown): string {
  const name = NAMED.get(code)?.name ?? OTHER_NAMES.get(code);
  let line = Number.isFinite(code) ? String(code) : "?";
  if (name !== undefined) line += ` ${name}`;
  const text = typeof message === "string" ? message.trim() : "";
  if (text !== "" && text.toLowerCase() !== name?.toLowerCase()) line += `: ${text}`;
  const details: string[] = [];
  for (const key of DATA_KEYS) {
    const value = field(data, key);
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") details.push(`${key}: ${value}`);
  }
  if (details.length > 0) line += ` (${details.join(", ")})`;
  return escapeBounded(line, DESCRIPTION_MAX);
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * Control characters (C0, DEL, C1, line and paragraph separators) as `\xNN` / `\uNNNN`, cut to at
 * most `max` characters with a trailing `…`. The cut never splits an escape or a surrogate pair.
 */
export function escapeBounded(text: string, max: number): string {
  let out = "";
  /** Length of `out` at the last piece boundary that still leaves room for the ellipsis. */
  let roomy = 0;
  for (const char of text) {
    const piece = CONTROL.test(char) ? escapeOne(char) : char;
    if (out.length + piece.length > max) return `${out.slice(0, roomy)}…`;
    out += piece;
    if (out.length <= max - 1) roomy = out.length;
  }
  return out;
}

function escapeOne(char: string): string {
  const n = char.charCodeAt(0);
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
}
