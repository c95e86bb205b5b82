/**
 * The `vigil serve` configuration file (serve.md §2) as valibot schemas: the one definition of its
 * shape, its defaults and its bounds. Every mapping is strict (unknown keys are errors at every
 * level). Messages never contain the value that was refused, only what was expected, because some
 * values are secrets (header tokens, expanded variables).
 *
 * Two schemas share one definition: `RawServeConfigSchema` checks the file as written, where an
 * expandable URL (`base_url`, `url`) may still hold a `${VAR}` reference and is format-checked only
 * after expansion; `ServeConfigSchema` checks the expanded config, every URL strictly.
 */
import * as v from "valibot";
import { canonicalJson } from "../../shared/canonical-json.ts";
import { CONFIG_LIMITS } from "./limits.ts";

export { CONFIG_LIMITS };

const L = CONFIG_LIMITS;

export const isMapping = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);

// valibot's record() silently drops these keys; refuse them so nothing disappears unseen.
const RESERVED_KEYS = new Set(["__proto__", "constructor", "prototype"]);

const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SCHEME_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const NO_LINE_BREAK = /^[^\r\n\0]*$/;
const NO_NUL = /^[^\0]*$/;
const ANY = /(?:)/;

/** A bounded string; `what` completes "expected …". */
function text(what: string, max: number, min = 0, pattern?: RegExp) {
  const expected = `expected ${what}`;
  return v.pipe(
    v.string(expected),
    v.minLength(min, min === 1 ? "expected a non-empty string" : `expected at least ${min} characters`),
    v.maxLength(max, `expected at most ${max} characters`),
    v.regex(pattern ?? ANY, expected),
  );
}

function integer(min: number, max: number) {
  const expected = `expected an integer from ${min} to ${max}`;
  return v.pipe(v.number(expected), v.safeInteger(expected), v.minValue(min, expected), v.maxValue(max, expected));
}

/** A strict mapping; strictObject alone accepts an array, so arrays are refused first. */
function mapping<T extends v.ObjectEntries>(entries: T, expected = "expected a mapping") {
  return v.pipe(v.custom<unknown>(isMapping, expected), v.strictObject(entries, expected));
}

/** A mapping of strings to strings with a bounded number of entries. */
function stringMap(key: v.GenericSchema<string>, value: v.GenericSchema<string>, maxEntries: number, what: string) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isMapping, `expected ${what}`),
    v.rawCheck<Record<string, unknown>>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const input = dataset.value;
      for (const k of Object.keys(input)) {
        if (RESERVED_KEYS.has(k)) {
          addIssue({ message: "this key is not supported", path: [{ type: "object", origin: "key", input, key: k, value: input[k] }] });
        }
      }
    }),
    v.record(key, value),
    v.check((m) => Object.keys(m).length <= maxEntries, `expected at most ${maxEntries} entries`),
  );
}

/** True for an absolute http: or https: URL with a host and no whitespace. */
export function isHttpUrl(s: string): boolean {
  if (/\s/.test(s) || !URL.canParse(s)) return false;
  const url = new URL(s);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/** An http(s) URL; before expansion, a value holding a `$` is checked only after expansion. */
function httpUrl(expanded: boolean) {
  const expected = "expected an http:// or https:// URL";
  return v.pipe(
    v.string(expected),
    v.maxLength(L.urlChars, `expected at most ${L.urlChars} characters`),
    v.check((s) => (!expanded && s.includes("$")) || isHttpUrl(s), expected),
  );
}

/** Argv: 1..argv elements, the first (the program) non-empty. */
const CommandArgv = v.pipe(
  v.array(text("a string", L.valueChars, 0, NO_NUL), "expected a list of strings"),
  v.minLength(1, "expected a non-empty list"),
  v.maxLength(L.argv, `expected at most ${L.argv} elements`),
  v.check((argv) => argv[0] !== "", "expected a non-empty program name first"),
);

export const EVENT_DELIVERIES = ["poll", "push", "webhook"] as const;
export const EVENT_ACTIONS = ["notify", "follow_up", "steer"] as const;

const EventEntry = mapping({
  name: text("an event name", L.eventNameChars, 1),
  /** Part of the subscription key, with the server and name. */
  arguments: v.optional(v.custom<Record<string, unknown>>(isMapping, "expected a mapping"), () => ({})),
  /** Absent: negotiated (webhook > push > poll). */
  delivery: v.optional(v.picklist(EVENT_DELIVERIES, 'expected "poll" | "push" | "webhook"')),
  action: v.optional(v.picklist(EVENT_ACTIONS, 'expected "notify" | "follow_up" | "steer"'), "follow_up"),
  instructions: v.optional(text("a string", L.instructionsChars)),
  max_age_ms: v.optional(integer(1, Number.MAX_SAFE_INTEGER)),
});

/** Events of one server; one entry per subscription key (name + canonical arguments). */
const EventList = v.array(EventEntry, "expected a list of event subscriptions");
const Events = v.pipe(
  EventList,
  v.maxLength(L.eventsPerServer, `expected at most ${L.eventsPerServer} entries`),
  v.rawCheck<v.InferOutput<typeof EventList>>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const seen = new Set<string>();
    dataset.value.forEach((entry, i) => {
      const key = `${entry.name}\0${canonicalJson(entry.arguments)}`;
      if (!seen.has(key)) return void seen.add(key);
      addIssue({
        message: "duplicate subscription (same name and arguments as an earlier entry)",
        path: [{ type: "array", origin: "value", input: dataset.value, key: i, value: entry }],
      });
    });
  }),
);

/**
 * `^[A-Za-z0-9_-]{1,64}$`, and also no "__" inside and no trailing "_": then the first "__" of
 * `<server>__<tool>` is always the separator, whatever the tool is called.
 */
const ServerName = v.pipe(
  text("a server name matching [A-Za-z0-9_-]{1,64}", L.serverNameChars, 1, SERVER_NAME),
  v.check((name) => !name.includes("__") && !name.endsWith("_"), 'expected a server name without "__" and not ending in "_"'),
);

const Headers = v.pipe(
  stringMap(
    text("an HTTP header name", L.headerNameChars, 1, HEADER_NAME),
    text("a string without line breaks", L.headerValueChars, 0, NO_LINE_BREAK),
    L.headers,
    "a mapping of header names to strings",
  ),
  // HTTP header names are case-insensitive: two spellings of one name would be sent twice.
  v.check((m) => new Set(Object.keys(m).map((k) => k.toLowerCase())).size === Object.keys(m).length,
    "expected header names that differ other than by case"),
);

const Env = stringMap(
  text("an environment variable name", L.envNameChars, 1, ENV_NAME),
  text("a string without NUL characters", L.valueChars, 0, NO_NUL),
  L.envEntries,
  "a mapping of variable names to strings",
);

const Path = text("a path", L.pathChars, 1, NO_NUL);

const Evidence = mapping({
  event_source: text("a URI like scheme://…", L.eventSourceChars, 1, SCHEME_URI),
  decision_log: v.optional(v.boolean("expected true or false"), true),
});

function configSchema(expanded: boolean) {
  const OpenAiModel = v.strictObject({
    provider: v.literal("openai"),
    base_url: httpUrl(expanded),
    model: text("a model name", L.modelNameChars, 1),
    /** Name of the variable holding the API key; the key itself is read at use time. */
    api_key_env: v.optional(text("an environment variable name", L.envNameChars, 1, ENV_NAME)),
    max_turns: v.optional(integer(1, L.maxTurns), 8),
    timeout_ms: v.optional(integer(1, L.openaiTimeoutMs), 120_000),
  }, "expected a mapping");
  const CommandModel = v.strictObject({
    provider: v.literal("command"),
    command: CommandArgv,
    timeout_ms: v.optional(integer(1, L.commandTimeoutMs), 600_000),
  }, "expected a mapping");
  const HttpServer = v.strictObject({
    name: ServerName,
    transport: v.literal("http"),
    url: httpUrl(expanded),
    headers: v.optional(Headers, () => ({})),
    events: v.optional(Events),
  }, "expected a mapping");
  const StdioServer = v.strictObject({
    name: ServerName,
    transport: v.literal("stdio"),
    command: text("a command", L.valueChars, 1, NO_NUL),
    args: v.optional(
      v.pipe(v.array(text("a string", L.valueChars, 0, NO_NUL), "expected a list of strings"), v.maxLength(L.argv, `expected at most ${L.argv} elements`)),
      () => [],
    ),
    env: v.optional(Env, () => ({})),
    cwd: v.optional(Path),
    events: v.optional(Events),
  }, "expected a mapping");
  const ServerList = v.array(
    v.pipe(v.custom<unknown>(isMapping, "expected a mapping"), v.variant("transport", [HttpServer, StdioServer], 'expected "http" | "stdio"')),
    "expected a list of MCP servers",
  );
  const Servers = v.pipe(
    ServerList,
    v.maxLength(L.servers, `expected at most ${L.servers} servers`),
    v.rawCheck<v.InferOutput<typeof ServerList>>(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const seen = new Set<string>();
      dataset.value.forEach((server, i) => {
        if (!seen.has(server.name)) return void seen.add(server.name);
        addIssue({
          message: "duplicate server name (names must be unique)",
          path: [
            { type: "array", origin: "value", input: dataset.value, key: i, value: server },
            { type: "object", origin: "value", input: server, key: "name", value: server.name },
          ],
        });
      });
    }),
  );
  return mapping({
    model: v.pipe(v.custom<unknown>(isMapping, "expected a mapping"), v.variant("provider", [OpenAiModel, CommandModel], 'expected "openai" | "command"')),
    system_prompt: v.optional(text("a string", L.systemPromptChars)),
    /** Policy file; a relative path is resolved against the config file's directory. */
    policy: v.optional(Path),
    evidence: v.optional(Evidence),
    mcp_servers: v.optional(Servers, () => []),
  }, "expected a JSON object at the top level");
}

/** The file as written (before `${VAR}` expansion). */
export const RawServeConfigSchema = configSchema(false);
/** The expanded config: what the rest of serve uses. */
export const ServeConfigSchema = configSchema(true);

export type ServeConfig = v.InferOutput<typeof ServeConfigSchema>;
export type ModelConfig = ServeConfig["model"];
export type McpServerConfig = ServeConfig["mcp_servers"][number];
export type EventSubscriptionConfig = NonNullable<McpServerConfig["events"]>[number];
export type EventDelivery = (typeof EVENT_DELIVERIES)[number];
export type EventAction = (typeof EVENT_ACTIONS)[number];
