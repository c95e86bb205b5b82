/**
 * `${VAR}` expansion from the environment, applied only to the values that name where and how to
 * reach a model or an MCP server:
 *
 *   the model's (each provider names its own: model.base_url, model.command[i]),
 *   mcp_servers[i].url, .headers.*, .command, .args[j], .env.*
 *   evidence.signing_key (`"${VIGIL_SIGNING_KEY_FILE}"`; a path, not a secret: a refusal names the file)
 *
 * Everything else (system_prompt, instructions, event arguments, policy, cwd, names) is literal.
 *
 * Syntax, in an expandable value: `${NAME}` with NAME matching `[A-Z_][A-Z0-9_]*` is replaced by the
 * variable's value (a set-but-empty variable expands to ""); `$$` is a literal `$`. Any other `$`
 * (a bare `$`, `$NAME`, `${lower}`, an unclosed `${`) is an error, so a value meant to be expanded
 * is never sent verbatim. An unset variable is an error naming the variable and the path.
 * Errors never include the value being expanded.
 */
import { formatPath } from "../../shared/issues.ts";
import type { PathSegment } from "../../shared/document-path.ts";
import { expandModel } from "../models/registry.ts";
import type { Env } from "./env.ts";
import type { ServeConfig } from "./schema.ts";

export type { Env } from "./env.ts";

const VAR_NAME = /^[A-Z_][A-Z0-9_]*$/;

export type ExpandResult =
  | { ok: true; value: string; variables: string[] }
  | { ok: false; message: string };

/** Expands one value. `variables` lists the names substituted (empty when nothing was). */
export function expandString(raw: string, env: Env): ExpandResult {
  if (!raw.includes("$")) return { ok: true, value: raw, variables: [] };
  let out = "";
  const variables: string[] = [];
  let i = 0;
  while (i < raw.length) {
    const dollar = raw.indexOf("$", i);
    if (dollar < 0) {
      out += raw.slice(i);
      break;
    }
    out += raw.slice(i, dollar);
    const next = raw[dollar + 1];
    if (next === "$") {
      out += "$";
      i = dollar + 2;
      continue;
    }
    const close = next === "{" ? raw.indexOf("}", dollar + 2) : -1;
    const name = close < 0 ? "" : raw.slice(dollar + 2, close);
    if (!VAR_NAME.test(name)) {
      return { ok: false, message: 'a "$" must start ${NAME} (NAME matching [A-Z_][A-Z0-9_]*) or be written "$$"' };
    }
    const value = env[name];
    if (value === undefined) return { ok: false, message: `environment variable ${name} is not set` };
    out += value;
    variables.push(name);
    i = close + 1;
  }
  return { ok: true, value: out, variables };
}

export interface Expansion {
  config: ServeConfig;
  /** Formatted paths whose value came (partly) from a variable. */
  expandedPaths: Set<string>;
  /** The substituted variable values, for scrubbing messages. */
  substituted: string[];
  /** One line per problem (`<path>: <what>`); empty when expansion succeeded. */
  problems: string[];
}

/** Expands the expandable values of a config that passed the raw schema. Pure; never throws. */
export function expandConfig(raw: ServeConfig, env: Env): Expansion {
  const expandedPaths = new Set<string>();
  const substituted: string[] = [];
  const problems: string[] = [];
  // `secret` false: a value that is not a secret even when a variable gave it (the signing key's
  // path: its refusal must name the file; the key itself is never in the config).
  const str = (value: string, segments: PathSegment[], secret = true): string => {
    const result = expandString(value, env);
    const path = formatPath(segments);
    if (!result.ok) {
      problems.push(`${path}: ${result.message}`);
      return value;
    }
    if (result.variables.length > 0 && secret) {
      expandedPaths.add(path);
      for (const name of result.variables) substituted.push(env[name] ?? "");
    }
    return result.value;
  };
  const map = (m: Record<string, string>, base: PathSegment[]) =>
    Object.fromEntries(Object.entries(m).map(([k, value]) => [k, str(value, [...base, k])]));

  const model = expandModel(raw.model, str);

  const mcp_servers = raw.mcp_servers.map((server, i): ServeConfig["mcp_servers"][number] => {
    const at: PathSegment[] = ["mcp_servers", i];
    if (server.transport === "http") {
      return { ...server, url: str(server.url, [...at, "url"]), headers: map(server.headers, [...at, "headers"]) };
    }
    return {
      ...server,
      command: str(server.command, [...at, "command"]),
      args: server.args.map((arg, j) => str(arg, [...at, "args", j])),
      env: map(server.env, [...at, "env"]),
    };
  });

  const key = raw.evidence?.signing_key;
  const evidence = raw.evidence === undefined || key === undefined ? raw.evidence : { ...raw.evidence, signing_key: str(key, ["evidence", "signing_key"], false) };

  return { config: { ...raw, model, mcp_servers, ...(evidence === undefined ? {} : { evidence }) }, expandedPaths, substituted, problems };
}
