/**
 * The commands a `vigil serve` client sends (serve.md §4), as valibot schemas: the one definition of
 * their shape and bounds. Every command is a strict object (unknown keys are errors) with a `type`
 * and a client-chosen `id`; `CommandSchema` is the discriminated union on `type`.
 *
 * Messages name what was expected and never contain the refused value (a prompt `message` may be
 * long and private). Parsing bytes into a `Command` is `parseCommand` (parse-command.ts).
 */
import * as v from "valibot";
import { isRecord } from "../../shared/guards.ts";
import { CONFIG_LIMITS, EVENT_ACTIONS, EVENT_DELIVERIES } from "../config/schema.ts";

/** Every bound of the client protocol, in one place (characters are UTF-16 code units). */
export const PROTOCOL_LIMITS = {
  /** One command: a stdio line or an HTTP request body, in bytes. */
  commandBytes: 1024 * 1024,
  /** Containers nested deeper than this are refused while parsing. */
  maxDepth: 32,
  idChars: 128,
  /** A prompt `message`. */
  messageChars: 1024 * 1024,
  serverNameChars: CONFIG_LIMITS.serverNameChars,
  eventNameChars: CONFIG_LIMITS.eventNameChars,
  instructionsChars: CONFIG_LIMITS.instructionsChars,
  /** `get_transcript.limit`. */
  transcriptLimit: 10_000,
} as const;

const L = PROTOCOL_LIMITS;

export const COMMAND_TYPES = [
  "prompt",
  "abort",
  "get_state",
  "get_transcript",
  "mcp_events_list",
  "mcp_events_subscribe",
  "mcp_events_unsubscribe",
] as const;

export type CommandName = (typeof COMMAND_TYPES)[number];

export function isCommandName(x: unknown): x is CommandName {
  return typeof x === "string" && (COMMAND_TYPES as readonly string[]).includes(x);
}

export const STREAMING_BEHAVIORS = ["follow_up", "steer"] as const;
export { EVENT_ACTIONS, EVENT_DELIVERIES };
export type EventDelivery = (typeof EVENT_DELIVERIES)[number];
export type EventAction = (typeof EVENT_ACTIONS)[number];

const SERVER_NAME = /^[A-Za-z0-9_-]+$/;

/** A client-chosen id: a string of 1–128 characters or a finite number. */
const ID_EXPECTED = `expected a string of 1 to ${L.idChars} characters or a finite number`;
export const IdSchema = v.union(
  [
    v.pipe(v.string(ID_EXPECTED), v.minLength(1, ID_EXPECTED), v.maxLength(L.idChars, ID_EXPECTED)),
    v.pipe(v.number(ID_EXPECTED), v.finite(ID_EXPECTED)),
  ],
  ID_EXPECTED,
);
export type CommandId = v.InferOutput<typeof IdSchema>;

export function isCommandId(x: unknown): x is CommandId {
  return v.is(IdSchema, x);
}

function integer(min: number, max: number) {
  const expected = `expected an integer from ${min} to ${max}`;
  return v.pipe(v.number(expected), v.safeInteger(expected), v.minValue(min, expected), v.maxValue(max, expected));
}

function text(max: number, min: number) {
  return v.pipe(
    v.string("expected a string"),
    v.minLength(min, "expected a non-empty string"),
    v.maxLength(max, `expected at most ${max} characters`),
  );
}

const ServerName = v.pipe(
  text(L.serverNameChars, 1),
  v.regex(SERVER_NAME, "expected a server name (letters, digits, '_' and '-')"),
);
const EventName = text(L.eventNameChars, 1);
const Arguments = v.custom<Record<string, unknown>>(isRecord, "expected an object");

/** One command; the `type` literal is what the union discriminates on. */
function command<const T extends CommandName, E extends v.ObjectEntries>(type: T, entries: E) {
  return v.strictObject({ type: v.literal(type), id: IdSchema, ...entries }, "expected a JSON object");
}

export const PromptCommand = command("prompt", {
  message: text(L.messageChars, 1),
  streaming_behavior: v.optional(v.picklist(STREAMING_BEHAVIORS, 'expected "follow_up" | "steer"')),
});

export const AbortCommand = command("abort", {});

export const GetStateCommand = command("get_state", {});

export const GetTranscriptCommand = command("get_transcript", {
  /** Frames with `seq` greater than this. */
  since: v.optional(integer(0, Number.MAX_SAFE_INTEGER)),
  limit: v.optional(integer(1, L.transcriptLimit)),
});

export const McpEventsListCommand = command("mcp_events_list", {
  server: v.optional(ServerName),
});

export const McpEventsSubscribeCommand = command("mcp_events_subscribe", {
  server: ServerName,
  name: EventName,
  arguments: v.optional(Arguments),
  /** Absent: negotiated (webhook > push > poll). */
  delivery: v.optional(v.picklist(EVENT_DELIVERIES, 'expected "poll" | "push" | "webhook"')),
  action: v.optional(v.picklist(EVENT_ACTIONS, 'expected "notify" | "follow_up" | "steer"')),
  instructions: v.optional(text(L.instructionsChars, 0)),
  max_age_ms: v.optional(integer(1, Number.MAX_SAFE_INTEGER)),
});

export const McpEventsUnsubscribeCommand = command("mcp_events_unsubscribe", {
  server: ServerName,
  name: EventName,
  arguments: v.optional(Arguments),
});

export const CommandSchema = v.variant(
  "type",
  [
    PromptCommand,
    AbortCommand,
    GetStateCommand,
    GetTranscriptCommand,
    McpEventsListCommand,
    McpEventsSubscribeCommand,
    McpEventsUnsubscribeCommand,
  ],
  `expected one of ${COMMAND_TYPES.join(", ")}`,
);

/**
 * Each command's schema by `type`: `parseCommand` checks `type` itself (to answer `unknown_command`)
 * and then runs only the one matching schema. Running `CommandSchema` instead gives the same output
 * and issues, but its variant first tries the discriminator of each option before the matching one,
 * building (and discarding) an issue with a formatted message for every miss, on every command.
 */
export const COMMAND_SCHEMAS = {
  prompt: PromptCommand,
  abort: AbortCommand,
  get_state: GetStateCommand,
  get_transcript: GetTranscriptCommand,
  mcp_events_list: McpEventsListCommand,
  mcp_events_subscribe: McpEventsSubscribeCommand,
  mcp_events_unsubscribe: McpEventsUnsubscribeCommand,
} as const satisfies Record<CommandName, (typeof CommandSchema)["options"][number]>;

export type Command = v.InferOutput<typeof CommandSchema>;
export type PromptCommand = v.InferOutput<typeof PromptCommand>;
export type AbortCommand = v.InferOutput<typeof AbortCommand>;
export type GetStateCommand = v.InferOutput<typeof GetStateCommand>;
export type GetTranscriptCommand = v.InferOutput<typeof GetTranscriptCommand>;
export type McpEventsListCommand = v.InferOutput<typeof McpEventsListCommand>;
export type McpEventsSubscribeCommand = v.InferOutput<typeof McpEventsSubscribeCommand>;
export type McpEventsUnsubscribeCommand = v.InferOutput<typeof McpEventsUnsubscribeCommand>;
/** The command of a given `type`. */
export type CommandOf<T extends CommandName> = Extract<Command, { type: T }>;
