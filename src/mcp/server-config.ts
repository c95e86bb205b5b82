/**
 * One MCP server entry of a config (serve.md §2, `mcp_servers[]`): how to reach the server, over
 * streamable HTTP or as a stdio child. The connection layer owns this shape; a config that embeds
 * it (serve's) adds its own keys to each entry — the pool reads only these. Every mapping is
 * strict, every string bounded.
 */
import * as v from "valibot";
import { ENV_NAME, NO_LINE_BREAK, NO_NUL, httpUrl, stringMap, text } from "../shared/schema-parts.ts";

/** Bounds of an MCP server entry (characters are UTF-16 code units). */
export const MCP_SERVER_LIMITS = {
  headers: 64,
  envEntries: 256,
  /** Elements of a stdio server's `args` (and of any other argv in a config). */
  argv: 256,
  /** Server names: `^[A-Za-z0-9_-]{1,64}$`, so `<server>__<tool>` has one reading. */
  serverNameChars: 64,
  urlChars: 2048,
  headerNameChars: 256,
  headerValueChars: 8192,
  envNameChars: 256,
  /** An env value, an argv element, a stdio command. */
  valueChars: 32768,
  /** `cwd` (and any other path in a config). */
  pathChars: 4096,
} as const;

const L = MCP_SERVER_LIMITS;

const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `^[A-Za-z0-9_-]{1,64}$`, and also no "__" inside and no trailing "_": then the first "__" of
 * `<server>__<tool>` is always the separator, whatever the tool is called.
 */
export const ServerName = v.pipe(
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

/** A non-empty path without NUL. */
export const ConfigPath = text("a path", L.pathChars, 1, NO_NUL);

/** The entries of an HTTP server; before expansion (`expanded` false) `url` may hold `${VAR}`. */
export function httpServerEntries(expanded: boolean) {
  return {
    name: ServerName,
    transport: v.literal("http"),
    url: httpUrl(expanded, L.urlChars),
    headers: v.optional(Headers, () => ({})),
  };
}

export function stdioServerEntries() {
  return {
    name: ServerName,
    transport: v.literal("stdio"),
    command: text("a command", L.valueChars, 1, NO_NUL),
    args: v.optional(
      v.pipe(v.array(text("a string", L.valueChars, 0, NO_NUL), "expected a list of strings"), v.maxLength(L.argv, `expected at most ${L.argv} elements`)),
      () => [],
    ),
    env: v.optional(Env, () => ({})),
    cwd: v.optional(ConfigPath),
  };
}

const HttpServer = v.strictObject(httpServerEntries(true));
const StdioServer = v.strictObject(stdioServerEntries());

/** What the pool needs of a server entry (an embedding config's entries carry more keys). */
export type McpServerConfig = v.InferOutput<typeof HttpServer> | v.InferOutput<typeof StdioServer>;
