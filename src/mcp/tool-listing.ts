/**
 * One server's `tools/list`, paged and bounded (a server that pages forever, repeats a cursor, or
 * lists absurdly many tools), with each tool under its qualified name `<server>__<tool>`.
 * The pool caches the result per connection (server-pool.ts).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { logLine } from "../shared/log.ts";
import { qualifiedToolName, toolNameProblem } from "./tool-names.ts";

export const MAX_TOOL_PAGES = 100;
export const MAX_TOOLS_PER_SERVER = 10_000;

export interface PoolTool {
  qualifiedName: string;
  server: string;
  tool: string;
  description: string;
  inputSchema: Tool["inputSchema"];
}

export interface ListOptions {
  signal?: AbortSignal;
  timeoutMs: number;
}

/**
 * Every tool the server lists, in its order. A tool whose qualified name is not a valid function
 * name is skipped (logged); a listing cut by a bound keeps what was listed. Rejects when a request
 * fails (the caller decides what that means).
 */
export async function listServerTools(client: Client, server: string, options: ListOptions): Promise<PoolTool[]> {
  if (!client.getServerCapabilities()?.tools) return [];
  const label = JSON.stringify(server);
  const out: PoolTool[] = [];
  const seen = new Set<string>();
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    if (page >= MAX_TOOL_PAGES) {
      logLine(`MCP server ${label}: tools/list still paging after ${MAX_TOOL_PAGES} pages; using the tools listed so far`, { level: "warn", server, code: "tools_list_cut" });
      break;
    }
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
      ...(options.signal ? { signal: options.signal } : {}),
      timeout: options.timeoutMs,
    });
    for (const tool of result.tools) {
      if (seen.size >= MAX_TOOLS_PER_SERVER) break;
      const problem = toolNameProblem(server, tool.name);
      if (problem) {
        logLine(`MCP server ${label}: ${problem}`, { level: "warn", server, code: "tool_name_refused" });
        continue;
      }
      if (seen.has(tool.name)) continue;
      seen.add(tool.name);
      out.push({
        qualifiedName: qualifiedToolName(server, tool.name),
        server,
        tool: tool.name,
        description: tool.description ?? "",
        inputSchema: tool.inputSchema,
      });
    }
    if (seen.size >= MAX_TOOLS_PER_SERVER) {
      logLine(`MCP server ${label}: lists more than ${MAX_TOOLS_PER_SERVER} tools; using the first ${MAX_TOOLS_PER_SERVER}`, { level: "warn", server, code: "tools_list_cut" });
      break;
    }
    const next = result.nextCursor;
    if (next === undefined || next === null || next === "") break;
    if (cursors.has(next)) {
      logLine(`MCP server ${label}: tools/list repeated a cursor; using the tools listed so far`, { level: "warn", server, code: "tools_list_cut" });
      break;
    }
    cursors.add(next);
    cursor = next;
  }
  return out;
}
