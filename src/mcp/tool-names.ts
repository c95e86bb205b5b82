/**
 * Names of the tools serve offers the model (serve.md §5): each configured server's tools, named
 * `<server>__<tool>` (pure: no I/O).
 *
 * Server names never contain `__` (the config refuses that), so a qualified name splits at its first
 * `__`; the tool part may itself contain `__`.
 *
 * OpenAI-compatible function names must match `^[A-Za-z0-9_-]{1,64}$`. A tool whose qualified name
 * does not fit (too long, or a character such as a space, a dot or a non-ASCII letter in the tool's
 * name) cannot be offered under its own name, and renaming it would make the name the model sees
 * differ from the one policy rules and decision records use, so it is skipped and the pool logs
 * why (see `toolNameProblem`).
 */

export const TOOL_NAME_SEPARATOR = "__";
export const MAX_FUNCTION_NAME_LENGTH = 64;
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function qualifiedToolName(server: string, tool: string): string {
  return `${server}${TOOL_NAME_SEPARATOR}${tool}`;
}

/**
 * The server and tool a qualified name designates, or null when it has no `__`, its server part is
 * not one of `serverNames`, or its tool part is empty.
 */
export function splitQualifiedName(name: string, serverNames: Iterable<string>): { server: string; tool: string } | null {
  const at = name.indexOf(TOOL_NAME_SEPARATOR);
  if (at <= 0) return null;
  const server = name.slice(0, at);
  const tool = name.slice(at + TOOL_NAME_SEPARATOR.length);
  if (tool === "") return null;
  for (const known of serverNames) if (known === server) return { server, tool };
  return null;
}

/** True when `name` is usable as an OpenAI function name. */
export function isValidFunctionName(name: string): boolean {
  return FUNCTION_NAME.test(name);
}

/**
 * Why `<server>__<tool>` cannot be offered to the model, or null when it can. The reason is one line
 * and carries the tool name JSON-quoted and bounded (it comes from the server: untrusted).
 */
export function toolNameProblem(server: string, tool: string): string | null {
  if (tool === "") return `skipped a tool with an empty name`;
  const name = qualifiedToolName(server, tool);
  if (isValidFunctionName(name)) return null;
  const shown = JSON.stringify(tool.length > 80 ? `${tool.slice(0, 80)}…` : tool);
  if (name.length > MAX_FUNCTION_NAME_LENGTH) {
    return `skipped tool ${shown}: "${server}__<tool>" is ${name.length} characters, function names allow at most ${MAX_FUNCTION_NAME_LENGTH}`;
  }
  return `skipped tool ${shown}: function names allow only A-Z, a-z, 0-9, "_" and "-"`;
}
