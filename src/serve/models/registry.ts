/**
 * The model providers (serve.md §5), one line each: a new provider is its own file (a
 * `ProviderEntry`, see provider.ts) plus one line in PROVIDERS. Everything provider-specific that
 * serve does — the `model` schema, `${VAR}` expansion, redaction, the startup-log description, the
 * API-key variable, the bounds and the model a run talks to — goes through the functions below,
 * so config code, the app and the run loop never name a provider.
 *
 * Decision: the registry is the source of `ModelConfig` (the union of the entries' schemas), so
 * the config schema cannot accept a provider the registry cannot handle; the compiler checks that
 * each entry is complete and filed under its own `provider` name.
 */
import type * as v from "valibot";
import type { PathSegment } from "../../shared/document-path.ts";
import type { Env } from "../config/env.ts";
import { commandProvider } from "./command.ts";
import { meteredChat } from "./metered.ts";
import { openAiProvider } from "./openai.ts";
import type { ExpandValue, ModelSchema, ProviderEntry, Redactor } from "./provider.ts";
import type { RunModel } from "./types.ts";

/** Keyed by `model.provider`; the order is the order of the "expected …" message. */
const PROVIDERS = {
  openai: openAiProvider,
  command: commandProvider,
} as const;

export type ProviderName = keyof typeof PROVIDERS;
type SchemaOf<K extends ProviderName> = ReturnType<(typeof PROVIDERS)[K]["schema"]>;
/** The `model` mapping of any provider, after validation. */
export type ModelConfig = { [K in ProviderName]: v.InferOutput<SchemaOf<K>> }[ProviderName];

/** Each entry, complete and under its own name (a mismatch does not compile). */
const ENTRIES: { readonly [K in ProviderName]: ProviderEntry<SchemaOf<K>> & { readonly name: K } } = PROVIDERS;

/** An entry seen through the union of every config (ENTRIES ties each config to its own entry). */
type AnyEntry = ProviderEntry<ModelSchema, ModelConfig>;

function entryOf(model: ModelConfig): AnyEntry {
  return ENTRIES[model.provider];
}

const under = (path: PathSegment[]): PathSegment[] => ["model", ...path];

/** Every provider's `model` schema (raw or expanded), for the config's `provider` variant. */
export function modelSchemas(expanded: boolean): SchemaOf<ProviderName>[] {
  return Object.values(ENTRIES).map((entry) => entry.schema(expanded));
}

/** `expected "openai" | "command"`: the message for an unknown or missing `provider`. */
export const EXPECTED_PROVIDER = `expected ${Object.keys(PROVIDERS).map((name) => JSON.stringify(name)).join(" | ")}`;

/** Each provider's bounds, by provider name. */
export const MODEL_LIMITS = Object.fromEntries(Object.values(ENTRIES).map((entry) => [entry.name, entry.limits])) as {
  readonly [K in ProviderName]: (typeof PROVIDERS)[K]["limits"];
};

/** The model with its expandable values expanded; `value` gets paths from the config's root. */
export function expandModel(model: ModelConfig, value: ExpandValue): ModelConfig {
  return entryOf(model).expand(model, (raw, path) => value(raw, under(path)));
}

/** A copy of the model with its secret values hidden; `hide` gets paths from the config's root. */
export function redactModel(model: ModelConfig, hide: Redactor): ModelConfig {
  return entryOf(model).redact(model, {
    value: (raw, path) => hide.value(raw, under(path)),
    url: (raw, path) => hide.url(raw, under(path)),
  });
}

/** The startup log's `model=` part, from a redacted model. */
export function describeModel(redacted: ModelConfig): string {
  return entryOf(redacted).describe(redacted);
}

/** The environment variable holding the model's API key (`model.api_key_env`), if it has one. */
export function modelApiKeyVariable(model: ModelConfig): string | undefined {
  return entryOf(model).apiKeyVariable(model);
}

/** The model a run talks to, with the run's bounds; its turns are counted (metered.ts). */
export function createRunModel(model: ModelConfig, options: { env: Env }): RunModel {
  const run = entryOf(model).create(model, options);
  return { ...run, chat: meteredChat(run.chat) };
}
