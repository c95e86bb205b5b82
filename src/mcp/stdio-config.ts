/**
 * Settings of a stdio MCP connection that do not depend on the connection itself: the tuning knobs
 * (serve.md §6 "Tuning knobs") and the environment a server process starts with.
 */
import { VigilError } from "../shared/errors.ts";

export const DEFAULT_MCP_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 3000;

/** Below this a normal initialize or tools/list response would not fit. */
const MIN_MESSAGE_BYTES = 1024;
/** JSON.parse of one line must stay far from the engine's string limit. */
const MAX_MESSAGE_BYTES = 1024 * 1024 * 1024;
const MAX_GRACE_MS = 600_000;

type Env = Record<string, string | undefined>;

/** VIGIL_MCP_MAX_MESSAGE_BYTES, else the default. A malformed value is an error, never ignored. */
export function envMaxMessageBytes(env: Env = process.env): number {
  return integerKnob(env, "VIGIL_MCP_MAX_MESSAGE_BYTES", DEFAULT_MCP_MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
}

/** VIGIL_SHUTDOWN_GRACE_MS, else the default. */
export function envShutdownGraceMs(env: Env = process.env): number {
  return integerKnob(env, "VIGIL_SHUTDOWN_GRACE_MS", DEFAULT_SHUTDOWN_GRACE_MS, 0, MAX_GRACE_MS);
}

/** Checks an explicitly passed value against the same bounds as its knob. */
export function checkedMaxMessageBytes(value: number): number {
  return checkedInteger("maxMessageBytes", value, MIN_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
}

export function checkedGraceMs(value: number): number {
  return checkedInteger("graceMs", value, 0, MAX_GRACE_MS);
}

function integerKnob(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new VigilError("config_invalid", `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 32))}`);
  }
  return Number(raw);
}

function checkedInteger(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new VigilError("config_invalid", `${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/**
 * What a server inherits from vigil's environment. vigil's own environment holds the model's API
 * key and the tokens other servers' headers expand from; a third-party server must not see them.
 * Only these non-secret variables pass through (the MCP SDK's stdio client makes the same choice);
 * everything else a server needs comes from its `env` in the config.
 */
export const INHERITED_ENV_VARS = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"] as const;

export function serverEnvironment(configured: Record<string, string> | undefined, parent: Env = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV_VARS) {
    const value = parent[name];
    // A value starting with "()" is an exported shell function: never pass those on implicitly.
    if (value !== undefined && !value.startsWith("()")) env[name] = value;
  }
  return { ...env, ...configured };
}
