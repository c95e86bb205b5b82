/**
 * Strict classification of client → server lines (wrap.md §10). Everything that is not a single,
 * strictly valid JSON-RPC 2.0 object is refused and never forwarded: a lenient server could
 * otherwise run a call vigil never evaluated (a missing "jsonrpc", a batch, or a duplicated
 * "params" key that a last-wins parser reads differently from us).
 */
import { isRecord } from "../shared/guards.ts";
import { ID_HEAD_BYTES, type JsonRpcId, recoverIdFromHead, scanHead } from "../shared/ndjson/message-head.ts";
import { decodeUtf8Strict, parseStrictJson } from "../shared/strict-json.ts";

/** Client frames may nest tool arguments; deeper than this is refused before parsing. */
export const CLIENT_MAX_DEPTH = 64;

export type { JsonRpcId };

export type ClientFrame =
  | { kind: "request"; id: JsonRpcId; idKey: string; method: string; params: unknown }
  | { kind: "notification"; method: string }
  | { kind: "response"; idKey: string | null }
  | { kind: "rejected"; code: -32700 | -32600; reason: string; id: JsonRpcId | null; notification: boolean };

export function classifyClientLine(line: Uint8Array): ClientFrame {
  const text = decodeUtf8Strict(line);
  if (text === null) return reject(-32700, "not valid UTF-8", recoverIdFromHead(line));
  const parsed = parseStrictJson(text, { maxDepth: CLIENT_MAX_DEPTH });
  if (!parsed.ok) {
    const code = parsed.fault === "syntax" ? -32700 : -32600;
    // The log line must not echo message content (a duplicated key may be an argument's name).
    const reason = `${FAULT_TEXT[parsed.fault]} at offset ${parsed.offset}`;
    return reject(code, reason, parsed.fault === "syntax" ? anchoredId(text) : lenientId(text));
  }
  const msg = parsed.value;
  if (Array.isArray(msg)) return reject(-32600, "batches are not accepted", null);
  if (typeof msg !== "object" || msg === null) return reject(-32600, "a message must be a JSON object", null);
  const m = msg as Record<string, unknown>;
  const id = validId(m.id);
  if (m.jsonrpc !== "2.0") return reject(-32600, 'jsonrpc must be "2.0"', id, !("id" in m) && "method" in m);
  if ("method" in m) {
    if (typeof m.method !== "string" || m.method.length === 0) {
      return reject(-32600, "method must be a non-empty string", id, !("id" in m));
    }
    if (!("id" in m)) return { kind: "notification", method: m.method };
    if (id === null) return reject(-32600, "request id must be a string or a number", null);
    return { kind: "request", id, idKey: JSON.stringify(id), method: m.method, params: m.params };
  }
  if ("result" in m || "error" in m) return { kind: "response", idKey: id === null ? null : JSON.stringify(id) };
  return reject(-32600, "neither a request, a notification nor a response", id);
}

function reject(code: -32700 | -32600, reason: string, id: JsonRpcId | null, notification = false): ClientFrame {
  return { kind: "rejected", code, reason, id: notification ? null : id, notification };
}

function validId(v: unknown): JsonRpcId | null {
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v)) ? v : null;
}

const FAULT_TEXT: Record<string, string> = {
  invalid_utf8: "not valid UTF-8",
  syntax: "not valid JSON",
  duplicate_key: "duplicate key",
  non_finite_number: "number out of range",
  too_deep: `nesting deeper than ${CLIENT_MAX_DEPTH} levels`,
};

/** For well-formed JSON refused on strictness grounds: the id a lenient reader would see. */
function lenientId(text: string): JsonRpcId | null {
  try {
    const v: unknown = JSON.parse(text);
    if (isRecord(v)) return validId(v.id);
  } catch {
    // not even lenient JSON (a depth bomb may overflow JSON.parse)
  }
  return anchoredId(text);
}

/**
 * Only an id that is certainly top-level (read structurally from the head, shared/ndjson/message-head.ts):
 * a nested "id" in params must never be answered, and the tail of a line that failed to parse
 * proves nothing about nesting.
 */
function anchoredId(text: string): JsonRpcId | null {
  return scanHead(text.slice(0, ID_HEAD_BYTES)).id ?? null;
}
