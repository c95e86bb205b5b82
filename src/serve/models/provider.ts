/**
 * What a model provider is (serve.md §5): one `ProviderEntry` per value of `model.provider`, filed
 * in models/registry.ts. An entry owns everything about its `model` mapping — the schema (as
 * written and after `${VAR}` expansion), its bounds, which values expand, which are secret, its
 * startup-log description — and creates the `ChatModel` a run talks to. Config code (schema,
 * expand, redact, load) and the app go through the registry, never through a provider by name.
 *
 * Paths handed to an entry's callbacks are relative to `model` (`["base_url"]`); the registry
 * prefixes them, so messages and secret paths read `model.base_url` as before.
 */
import type * as v from "valibot";
import type { PathSegment } from "../../shared/document-path.ts";
import { VigilError } from "../../shared/errors.ts";
import { REDACTED } from "../../shared/scrub.ts";
import type { Env } from "../config/env.ts";
import type { RunModel } from "./types.ts";

/** The shape every provider's schema has: a strict mapping whose `provider` is one literal. */
export type ModelSchema = v.StrictObjectSchema<
  { provider: v.LiteralSchema<string, undefined> } & v.ObjectEntries,
  v.ErrorMessage<v.StrictObjectIssue> | undefined
>;

/** Expands one expandable value at `path` (or records why it cannot; the value is then kept). */
export type ExpandValue = (value: string, path: PathSegment[]) => string;

/** Decides, by path, whether a value is shown or replaced by "<redacted>". */
export interface Redactor {
  /** Hidden when it came (partly) from a `${VAR}` expansion. */
  value(value: string, path: PathSegment[]): string;
  /** As `value`, and also hidden when the URL embeds user:password credentials. */
  url(value: string, path: PathSegment[]): string;
}

export interface ProviderEntry<S extends ModelSchema, C = v.InferOutput<S>> {
  /** The `provider` value; the registry files the entry under it (the compiler checks they match). */
  readonly name: string;
  /** The `model` mapping: as written (`expanded` false: an expandable URL may still hold `${VAR}`) or expanded. */
  schema(expanded: boolean): S;
  /** The bounds the schema applies (characters are UTF-16 code units). */
  readonly limits: Readonly<Record<string, number>>;
  /** The model with each expandable value expanded. Pure. */
  expand(model: C, value: ExpandValue): C;
  /** A copy with each secret value hidden. Never mutates `model`. */
  redact(model: C, hide: Redactor): C;
  /** The startup log's `model=` part, from a redacted model, for example `openai:qwen3@http://127.0.0.1:11434/v1`. */
  describe(redacted: C): string;
  /** The environment variable holding the API key (read at use time, never stored), if any. */
  apiKeyVariable(model: C): string | undefined;
  /** The model a run talks to, with the run's bounds. Reads what it needs from `env` now. */
  create(model: C, options: { env: Env }): RunModel;
}

/** Origin and path only: no query or fragment (they may carry tokens even when not expanded). */
export function shortUrl(url: string): string {
  if (url === REDACTED || !URL.canParse(url)) return url;
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname === "/" ? "" : parsed.pathname}`;
}

/**
 * The API key from `variable`, read now (a rotated key is picked up by the next model created).
 * Throws VigilError("config_invalid") when the variable is unset or empty; the message names the
 * variable, never a value.
 */
export function readApiKey(variable: string, env: Env): string {
  const key = env[variable];
  if (key === undefined || key === "") {
    throw new VigilError("config_invalid", `config: model.api_key_env: environment variable ${variable} is not set`);
  }
  return key;
}
