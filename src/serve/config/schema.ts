/**
 * The `vigil serve` configuration file (serve.md §2) as valibot schemas: the one definition of its
 * shape, its defaults and its bounds. It embeds an MCP server entry (src/mcp/server-config.ts)
 * with its `events` list (src/events/config.ts) in each `mcp_servers[]` item, and takes the
 * `model` shapes from the model providers (src/serve/models/registry.ts). Every mapping is strict
 * (unknown keys are errors at every level). Messages never contain the value that was refused,
 * only what was expected, because some values are secrets (header tokens, expanded variables).
 *
 * Two schemas share one definition: `RawServeConfigSchema` checks the file as written, where an
 * expandable URL (`base_url`, `url`) may still hold a `${VAR}` reference and is format-checked only
 * after expansion; `ServeConfigSchema` checks the expanded config, every URL strictly.
 */
import * as v from "valibot";
import { EVENT_ACTIONS, EVENT_DELIVERIES, EventsConfigSchema, type EventSubscriptionConfig } from "../../events/config.ts";
import { StorableSubscriptions } from "../../events/storable-spec.ts";
import { ConfigPath, httpServerEntries, stdioServerEntries } from "../../mcp/server-config.ts";
import { isRecord } from "../../shared/guards.ts";
import { integer, isHttpUrl, mapping, text } from "../../shared/schema-parts.ts";
import { EXPECTED_PROVIDER, modelSchemas } from "../models/registry.ts";
import { CONFIG_LIMITS } from "./limits.ts";

export { CONFIG_LIMITS, EVENT_ACTIONS, EVENT_DELIVERIES, isHttpUrl, type EventSubscriptionConfig };

const L = CONFIG_LIMITS;

const SCHEME_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;

const Path = ConfigPath;

const Evidence = v.pipe(
  mapping({
    event_source: text("a URI like scheme://…", L.eventSourceChars, 1, SCHEME_URI),
    decision_log: v.optional(v.boolean("expected true or false"), true),
    /** Ed25519 PKCS#8 PEM key file (`${VAR}` expands); a relative path resolves against the config file's directory. */
    signing_key: v.optional(Path),
    /** Records across a session's logs between two signed checkpoints (default 1000; needs signing_key). */
    checkpoint_every: v.optional(integer(1, L.checkpointEveryMax)),
    /** Seconds between two checkpoints while records are written (default 60; needs signing_key). */
    checkpoint_seconds: v.optional(
      v.pipe(v.number("expected a number of seconds"), v.gtValue(0, "expected a number of seconds over 0"), v.maxValue(L.checkpointSecondsMax, `expected at most ${L.checkpointSecondsMax} seconds`)),
    ),
  }),
  // As wrap's --checkpoint-* flags: checkpoints are signed, so without a key they mean nothing.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || dataset.value.signing_key !== undefined) return;
    for (const key of ["checkpoint_every", "checkpoint_seconds"] as const) {
      if (dataset.value[key] === undefined) continue;
      addIssue({
        message: "needs evidence.signing_key (checkpoints are signed)",
        path: [{ type: "object", origin: "value", input: dataset.value, key, value: dataset.value[key] }],
      });
    }
  }),
);

function configSchema(expanded: boolean) {
  const HttpServer = v.strictObject({ ...httpServerEntries(expanded), events: v.optional(EventsConfigSchema) }, "expected a mapping");
  const StdioServer = v.strictObject({ ...stdioServerEntries(), events: v.optional(EventsConfigSchema) }, "expected a mapping");
  const ServerList = v.array(
    v.pipe(v.custom<unknown>(isRecord, "expected a mapping"), v.variant("transport", [HttpServer, StdioServer], 'expected "http" | "stdio"')),
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
    // A configured subscription the events state could never store is refused here, not at its first write.
    StorableSubscriptions<v.InferOutput<typeof ServerList>[number]>(),
  );
  return mapping({
    /** One shape per model provider (models/registry.ts), chosen by `provider`. */
    model: v.pipe(v.custom<unknown>(isRecord, "expected a mapping"), v.variant("provider", modelSchemas(expanded), EXPECTED_PROVIDER)),
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
export type EventDelivery = (typeof EVENT_DELIVERIES)[number];
export type EventAction = (typeof EVENT_ACTIONS)[number];
