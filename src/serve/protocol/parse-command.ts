/**
 * One client command from bytes (a stdio line or an HTTP body): bounded, strict JSON, then the
 * schema. A refusal is the `response` frame to send back, with the command's `id` and `type` when
 * they can be recovered, a stable code and a one-line message that names the field but never
 * contains the refused value (so a prompt's text never lands in an error).
 */
import * as v from "valibot";
import { formatIssue } from "../../shared/issues.ts";
import { isRecord } from "../../shared/guards.ts";
import { parseStrictJson } from "../../shared/strict-json.ts";
import { type Command, type CommandId, type CommandName, COMMAND_SCHEMAS, isCommandId, isCommandName, PROTOCOL_LIMITS } from "./commands.ts";
import { errorResponse, type ResponseError } from "./frames.ts";

export type ParseCommandResult = { ok: true; command: Command } | { ok: false; response: ResponseError };

export interface ParseCommandOptions {
  /** Commands longer than this (UTF-8 bytes) are refused unread. Default 1 MiB. */
  maxBytes?: number;
}

/** Issues listed in one message; the rest are counted. */
const MAX_REPORTED_ISSUES = 3;

export function parseCommand(input: string | Uint8Array, options: ParseCommandOptions = {}): ParseCommandResult {
  const maxBytes = options.maxBytes ?? PROTOCOL_LIMITS.commandBytes;
  const size = byteLength(input, maxBytes);
  if (size > maxBytes) return tooLarge(headOf(input), size, maxBytes);

  const parsed = parseStrictJson(input, { maxDepth: PROTOCOL_LIMITS.maxDepth });
  if (!parsed.ok) {
    const lead = recoverLeading(headOf(input));
    return refuse(lead.id, lead.command, "invalid_json", `not valid JSON: ${parsed.message}`);
  }
  const value = parsed.value;
  if (!isRecord(value)) {
    return refuse(null, null, "invalid_command", `expected a JSON object, got ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}`);
  }
  const id = isCommandId(value.id) ? value.id : null;
  const type = value.type;
  if (!("type" in value)) return refuse(id, null, "invalid_command", "type: required key is missing");
  if (typeof type !== "string") return refuse(id, null, "invalid_command", "type: expected a string");
  if (!isCommandName(type)) {
    return refuse(id, null, "unknown_command", `type: unknown command ${JSON.stringify(type.length > 40 ? `${type.slice(0, 40)}…` : type)}`);
  }

  // The schema of this `type` only: what CommandSchema's variant would pick, without its misses.
  const result = v.safeParse(COMMAND_SCHEMAS[type], value);
  if (result.success) return { ok: true, command: result.output as Command };
  return refuse(id, type, "invalid_command", describeIssues(result.issues));
}

/** The refusal for a command over the cap, e.g. an over-long stdio line (only its head was kept). */
export function tooLarge(head: Uint8Array | string, size: number, maxBytes: number = PROTOCOL_LIMITS.commandBytes): { ok: false; response: ResponseError } {
  const lead = recoverLeading(typeof head === "string" ? head : decodeHead(head));
  return refuse(lead.id, lead.command, "too_large", `command is ${size} bytes, over the ${maxBytes}-byte limit`);
}

function refuse(id: CommandId | null, command: CommandName | null, code: string, message: string): { ok: false; response: ResponseError } {
  return { ok: false, response: errorResponse(id, command, code, message) };
}

function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  const lines = [...new Set(issues.map(formatIssue))];
  const shown = lines.slice(0, MAX_REPORTED_ISSUES).join("; ");
  const hidden = lines.length - MAX_REPORTED_ISSUES;
  return hidden > 0 ? `${shown}; (and ${hidden} more)` : shown;
}

/** UTF-8 length, computed exactly only when it could matter. */
function byteLength(input: string | Uint8Array, maxBytes: number): number {
  if (typeof input !== "string") return input.length;
  // Every UTF-16 unit takes 1–3 bytes of UTF-8.
  if (input.length > maxBytes) return input.length;
  if (input.length * 3 <= maxBytes) return input.length;
  return Buffer.byteLength(input, "utf8");
}

const HEAD_CHARS = 4096;

function headOf(input: string | Uint8Array): string {
  return typeof input === "string" ? input.slice(0, HEAD_CHARS) : decodeHead(input);
}

const lenientUtf8 = new TextDecoder("utf-8", { fatal: false });

/** The first few KiB as text; a character cut at the end (or bad bytes) become U+FFFD. */
function decodeHead(bytes: Uint8Array): string {
  return lenientUtf8.decode(bytes.subarray(0, HEAD_CHARS));
}

/**
 * `type` and `id` from a line that did not parse, only where they are certainly top-level: the
 * leading members of the object, in either order. A nested "id" deeper in the payload never matches.
 */
const STRING_TOKEN = String.raw`"(?:[^"\\\n]|\\.){0,256}"`;
const ID_TOKEN = String.raw`(${STRING_TOKEN}|-?\d{1,20}(?:\.\d{1,20})?)`;
const TYPE_TOKEN = String.raw`"([a-z_]{1,40})"`;
const TYPE_FIRST = new RegExp(String.raw`^\s*\{\s*"type"\s*:\s*${TYPE_TOKEN}\s*,\s*(?:"id"\s*:\s*${ID_TOKEN}\s*[,}])?`);
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*"id"\s*:\s*${ID_TOKEN}\s*,\s*(?:"type"\s*:\s*${TYPE_TOKEN}\s*[,}])?`);

function recoverLeading(head: string): { id: CommandId | null; command: CommandName | null } {
  let idToken: string | undefined;
  let typeName: string | undefined;
  const typeFirst = TYPE_FIRST.exec(head);
  if (typeFirst) [, typeName, idToken] = typeFirst;
  else {
    const idFirst = ID_FIRST.exec(head);
    if (idFirst) [, idToken, typeName] = idFirst;
  }
  return { id: parseIdToken(idToken), command: isCommandName(typeName) ? typeName : null };
}

function parseIdToken(token: string | undefined): CommandId | null {
  if (token === undefined) return null;
  try {
    const id: unknown = JSON.parse(token);
    return isCommandId(id) ? id : null;
  } catch {
    return null;
  }
}
