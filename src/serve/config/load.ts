/**
 * Finding and loading the serve configuration:
 * bounded read (≤ 1 MiB, checked before reading) → strict UTF-8 + strict JSON (duplicate keys
 * refused) → raw schema → `${VAR}` expansion → schema again on the expanded values → relative
 * paths resolved against the config file's directory.
 *
 * Every failure is a VigilError("config_invalid") (exit 2), one line per problem:
 * `config <file>: mcp_servers[1].events[0].delivery: expected "poll" | "push" | "webhook"`.
 * No message contains a secret (see issues.ts and redact.ts). Once loaded, the config's secrets
 * and the model's API key are registered with the process-wide scrubber (shared/scrub.ts) before
 * anything is started, so no later message, frame or log line carries them either.
 */
import { open, stat } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import * as v from "valibot";
import { VigilError, errnoCode, errorMessage } from "../../shared/errors.ts";
import { sha256Hex } from "../../shared/digest.ts";
import { isRecord } from "../../shared/guards.ts";
import { decodeUtf8Strict } from "../../shared/strict-json.ts";
import { parseJsonPolicy } from "../../policy/json-document.ts";
import { readApiKey } from "../models/provider.ts";
import { modelApiKeyVariable } from "../models/registry.ts";
import type { Env } from "./env.ts";
import { expandConfig } from "./expand.ts";
import { configError, formatIssue } from "../../shared/issues.ts";
import { registerSecrets } from "../../shared/scrub.ts";
import { registerSecretPaths, secretValues } from "./redact.ts";
import { CONFIG_LIMITS, RawServeConfigSchema, ServeConfigSchema, type ServeConfig } from "./schema.ts";

export type { Env } from "./env.ts";

/** Environment variable naming the config file when `--config` is not given. */
export const CONFIG_ENV = "VIGIL_CONFIG";
/** The file used when neither `--config` nor `$VIGIL_CONFIG` is given, relative to the cwd. */
export const DEFAULT_CONFIG_FILE = "vigil.json";

const SOURCE_HINT = `pass --config FILE or set ${CONFIG_ENV} (default ./${DEFAULT_CONFIG_FILE})`;

/**
 * The config file to load, as an absolute path: `--config`, else `$VIGIL_CONFIG` (an empty value
 * counts as unset), else `./vigil.json`. An empty `--config` is a usage error.
 */
export function resolveConfigPath(flag: string | undefined, env: Env = process.env, cwd = process.cwd()): string {
  if (flag !== undefined) {
    if (flag === "") throw new VigilError("usage", "serve: --config needs a file path");
    return resolve(cwd, flag);
  }
  const fromEnv = env[CONFIG_ENV];
  return resolve(cwd, fromEnv !== undefined && fromEnv !== "" ? fromEnv : DEFAULT_CONFIG_FILE);
}

/** Reads and validates the config file. Throws VigilError("config_invalid"). */
export async function loadServeConfig(path: string, env: Env = process.env): Promise<ServeConfig> {
  return (await loadServeConfigFile(path, env)).config;
}

/** loadServeConfig, with the hex SHA-256 of the bytes validated (a reload logs it: the config in force). */
export async function loadServeConfigFile(path: string, env: Env = process.env): Promise<{ config: ServeConfig; sha256: string }> {
  const bytes = await readBounded(path);
  const { config, secrets } = parseWithSecrets(bytes, { source: path, env, baseDir: dirname(resolve(path)) });
  const key = modelApiKey(config, env);
  registerSecrets([...secrets, ...secretValues(config), ...(key === undefined ? [] : [key])]);
  return { config, sha256: sha256Hex(bytes) };
}

export interface ParseOptions {
  /** Names the document in messages. */
  source: string;
  env?: Env;
  /** Relative `policy`, `cwd` and `evidence.signing_key` resolve against this directory. Default: the cwd. */
  baseDir?: string;
}

/** Validates config text or bytes (the part of loadServeConfig after the read). */
export function parseServeConfig(input: string | Uint8Array, options: ParseOptions): ServeConfig {
  return parseWithSecrets(input, options).config;
}

/** parseServeConfig, also returning the secrets seen on the way (literal header/env values, `${VAR}` values). */
function parseWithSecrets(input: string | Uint8Array, options: ParseOptions): { config: ServeConfig; secrets: string[] } {
  const { source, env = process.env, baseDir = process.cwd() } = options;
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size > CONFIG_LIMITS.fileBytes) throw configError(source, [tooLarge(size)]);
  const text = typeof input === "string" ? input : decodeUtf8Strict(input);
  if (text === null) throw configError(source, ["not valid UTF-8"]);
  const json = parseJsonPolicy(text);
  if (!json.ok) throw configError(source, [`not valid JSON: ${json.message}`]);
  const literalSecrets = collectLiteralSecrets(json.value);

  const raw = v.safeParse(RawServeConfigSchema, json.value);
  if (!raw.success) throw configError(source, raw.issues.map(formatIssue), literalSecrets);

  const expansion = expandConfig(raw.output, env);
  const secrets = [...literalSecrets, ...expansion.substituted];
  if (expansion.problems.length > 0) throw configError(source, expansion.problems, secrets);

  const checked = v.safeParse(ServeConfigSchema, expansion.config);
  if (!checked.success) {
    const problems = checked.issues.map((issue) => `${formatIssue(issue)} (after \${VAR} expansion)`);
    throw configError(source, problems, secrets);
  }
  const config = resolvePaths(checked.output, baseDir);
  const keyVariable = modelApiKeyVariable(config.model);
  if (keyVariable !== undefined && (env[keyVariable] === undefined || env[keyVariable] === "")) {
    // Fail at startup rather than at the first run; the key itself is re-read at use time.
    throw configError(source, [`model.api_key_env: environment variable ${keyVariable} is not set`], secrets);
  }
  registerSecretPaths(config, expansion.expandedPaths);
  return { config, secrets };
}

/**
 * The model's API key, read from the environment now (never stored in the config): undefined for
 * a model without `api_key_env` (the `command` provider has none). Throws
 * VigilError("config_invalid") when the named variable is unset or empty.
 */
export function modelApiKey(config: ServeConfig, env: Env = process.env): string | undefined {
  const variable = modelApiKeyVariable(config.model);
  return variable === undefined ? undefined : readApiKey(variable, env);
}

function resolvePaths(config: ServeConfig, baseDir: string): ServeConfig {
  const at = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
  return {
    ...config,
    ...(config.policy === undefined ? {} : { policy: at(config.policy) }),
    ...(config.evidence?.signing_key === undefined ? {} : { evidence: { ...config.evidence, signing_key: at(config.evidence.signing_key) } }),
    mcp_servers: config.mcp_servers.map((s) => (s.transport === "stdio" && s.cwd !== undefined ? { ...s, cwd: at(s.cwd) } : s)),
  };
}

/** String values under any `headers` or `env` key, as written: scrubbed from messages as a last guard. */
function collectLiteralSecrets(value: unknown): string[] {
  const out: string[] = [];
  const stack: { value: unknown; secret: boolean }[] = [{ value, secret: false }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item.value === "string" && item.secret) out.push(item.value);
    else if (Array.isArray(item.value)) for (const x of item.value) stack.push({ value: x, secret: item.secret });
    else if (isRecord(item.value)) {
      for (const [k, x] of Object.entries(item.value)) stack.push({ value: x, secret: item.secret || k === "headers" || k === "env" });
    }
  }
  return out;
}

/** Reads at most fileBytes + 1 bytes, so a file that grows after stat is still refused, not buffered. */
async function readBounded(path: string): Promise<Uint8Array> {
  const limit = CONFIG_LIMITS.fileBytes;
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw configError(path, ["not a regular file"]);
    if (info.size > limit) throw configError(path, [tooLarge(info.size)]);
    handle = await open(path, "r");
    const buffer = new Uint8Array(limit + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled === buffer.length) throw configError(path, [tooLarge()]);
    }
    return buffer.subarray(0, filled);
  } catch (e) {
    if (e instanceof VigilError) throw e;
    const code = errnoCode(e);
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : errorMessage(e);
    throw configError(path, [`cannot read: ${why}`], [], code === "ENOENT" ? SOURCE_HINT : undefined);
  } finally {
    await handle?.close();
  }
}

function tooLarge(size?: number): string {
  const is = size === undefined ? "file is" : `file is ${size} bytes,`;
  return `${is} larger than the ${CONFIG_LIMITS.fileBytes}-byte limit`;
}
