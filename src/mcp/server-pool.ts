/**
 * The MCP servers of `vigil serve` (serve.md §2 `mcp_servers`, §5, §6 items 1, 8, 9): one SDK Client
 * per configured server, over StdioMcpTransport (own process group, message cap) or streamable
 * HTTP (http-connection.ts), each decorated to keep the server's raw `initialize` result.
 *
 *   const pool = await McpServerPool.connect(config.mcp_servers, { clientInfo: { name: "vigil", version } });
 *   pool.status("fs");                // { state: "connected" } | { state: "failed", reason }
 *   pool.rawInitializeResult("fs");   // initialize result as received (keeps a top-level `events` capability)
 *   await pool.listTools();           // [{ qualifiedName: "fs__read_file", server, tool, description, inputSchema }]
 *   await pool.callTool("fs__read_file", { path: "/x" }, { signal, timeoutMs });
 *   await pool.close();
 *
 * connect() never rejects for a server: each connects in parallel within a bound (default 20 s), and
 * one that fails is reported by status() (one line, secrets scrubbed) while the others serve.
 * callTool() turns every failure of the call (server error, over-cap answer, timeout, unknown tool,
 * server not connected) into an `isError` result the model can read; the connection survives. Only
 * an abort through the caller's own signal rejects, since then nobody is waiting for a result.
 *
 * The pool is where a server's text enters vigil: each server's secrets (header values, URL
 * credentials, env values) are registered with the process-wide scrubber (shared/scrub.ts) when
 * the pool is built, and every reason and every tool result leaves the pool scrubbed.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult, Implementation, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "./server-config.ts";
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { signalGroup } from "../shared/process-group.ts";
import { registerSecrets, scrubText, scrubValue } from "../shared/scrub.ts";
import { within } from "../shared/time.ts";
import { createHttpTransport } from "./http-connection.ts";
import { ObservedTransport } from "./observed-transport.ts";
import { StdioMcpTransport } from "./stdio-transport.ts";
import { qualifiedToolName, splitQualifiedName, toolNameProblem } from "./tool-names.ts";

export const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
/** listTools bounds per server (a server that pages forever, or lists absurdly many tools). */
export const MAX_TOOL_PAGES = 100;
export const MAX_TOOLS_PER_SERVER = 10_000;
/** close() waits this long for an HTTP client on top of the slowest stdio close bound. */
const HTTP_CLOSE_MS = 2000;
const MAX_REASON_CHARS = 300;

export type ServerStatus = { state: "connecting" } | { state: "connected" } | { state: "failed"; reason: string } | { state: "closed" };

export interface PoolTool {
  qualifiedName: string;
  server: string;
  tool: string;
  description: string;
  inputSchema: Tool["inputSchema"];
}

export interface McpServerPoolOptions {
  clientInfo: Implementation;
  /** Per server. Default 20 s. */
  connectTimeoutMs?: number;
  /** Default: VIGIL_MCP_MAX_MESSAGE_BYTES, else 32 MiB. */
  maxMessageBytes?: number;
  /** stdio shutdown grace. Default: VIGIL_SHUTDOWN_GRACE_MS, else 3000. */
  graceMs?: number;
}

export interface CallToolOptions {
  signal?: AbortSignal;
  /** Default 120 s. */
  timeoutMs?: number;
}

interface Entry<C extends McpServerConfig = McpServerConfig> {
  name: string;
  config: C;
  status: ServerStatus;
  client: Client | null;
  observed: ObservedTransport | null;
  stdio: StdioMcpTransport | null;
}

/** `C`: the config entries as the embedding config has them (they may carry more keys, e.g. `events`). */
export class McpServerPool<C extends McpServerConfig = McpServerConfig> {
  private readonly entries = new Map<string, Entry<C>>();
  private closing: Promise<void> | null = null;
  /** Set before any connection is closed, so their onclose handlers know the pool did it. */
  private closeRequested = false;

  private constructor(configs: readonly C[]) {
    for (const config of configs) {
      registerSecrets(secretsOf(config));
      this.entries.set(config.name, {
        name: config.name,
        config,
        status: { state: "connecting" },
        client: null,
        observed: null,
        stdio: null,
      });
    }
  }

  /** Connects every server in parallel; resolves once each is connected or failed. Never rejects. */
  static async connect<C extends McpServerConfig>(configs: readonly C[], options: McpServerPoolOptions): Promise<McpServerPool<C>> {
    const pool = new McpServerPool<C>(configs);
    await Promise.all([...pool.entries.values()].map((entry) => pool.connectOne(entry, options)));
    return pool;
  }

  get serverNames(): string[] {
    return [...this.entries.keys()];
  }

  status(server: string): ServerStatus | undefined {
    const status = this.entries.get(server)?.status;
    return status === undefined ? undefined : { ...status };
  }

  /** The server's `initialize` result as received, with keys the SDK would strip; undefined if it never connected. */
  rawInitializeResult(server: string): Record<string, unknown> | undefined {
    return this.entries.get(server)?.observed?.rawInitializeResult;
  }

  /** The SDK client of a connected server (for requests the pool does not wrap, e.g. `events/*`). */
  client(server: string): Client | undefined {
    const entry = this.entries.get(server);
    return entry?.status.state === "connected" ? (entry.client ?? undefined) : undefined;
  }

  /** The transport decorator of a connected server (outgoing-message hook for the events client). */
  transport(server: string): ObservedTransport | undefined {
    const entry = this.entries.get(server);
    return entry?.status.state === "connected" ? (entry.observed ?? undefined) : undefined;
  }

  /** The configured server entry, or undefined. */
  serverConfig(server: string): C | undefined {
    return this.entries.get(server)?.config;
  }

  /** Process-group ids (leader pids) of the stdio servers started and not yet closed. */
  stdioProcessGroups(): number[] {
    const out: number[] = [];
    for (const entry of this.entries.values()) {
      const pid = entry.stdio?.pid;
      if (typeof pid === "number" && entry.stdio?.status().state !== "closed") out.push(pid);
    }
    return out;
  }

  /**
   * Every tool of every connected server, in config order. A server whose listing fails contributes
   * nothing (logged); a tool whose qualified name is not a valid function name is skipped (logged).
   */
  async listTools(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<PoolTool[]> {
    const lists = await Promise.all([...this.entries.values()].map((entry) => this.listServerTools(entry, options)));
    return lists.flat();
  }

  async callTool(qualifiedName: string, args: Record<string, unknown> | undefined, options: CallToolOptions = {}): Promise<CallToolResult> {
    const target = splitQualifiedName(qualifiedName, this.entries.keys());
    if (!target) return errorResult(`unknown tool ${JSON.stringify(qualifiedName.slice(0, 100))}`);
    const entry = this.entries.get(target.server)!;
    if (entry.status.state !== "connected" || !entry.client) {
      const why = entry.status.state === "failed" ? `: ${entry.status.reason}` : "";
      return errorResult(`MCP server ${JSON.stringify(entry.name)} is not connected${why}`);
    }
    try {
      const result = await entry.client.callTool({ name: target.tool, arguments: args ?? {} }, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      });
      // Results too, not only errors: a server may echo a credential in any text the model and the transcript get.
      return scrubValue(result) as CallToolResult;
    } catch (e) {
      if (options.signal?.aborted) throw e;
      return errorResult(`tool ${JSON.stringify(qualifiedName)} failed: ${reasonOf(e)}`);
    }
  }

  /**
   * Closes every connection in parallel: stdio servers get stdin EOF, a grace, and their process
   * groups swept; bounded by the slowest close bound + 2 s; idempotent; never rejects.
   */
  close(): Promise<void> {
    this.closeRequested = true;
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const entries = [...this.entries.values()];
    const stdioBound = Math.max(0, ...entries.map((e) => e.stdio?.closeBoundMs ?? 0));
    const closing = entries.map(async (entry) => {
      try {
        if (entry.client) await entry.client.close();
        else await entry.observed?.close();
      } catch (e) {
        logLine(`MCP server ${JSON.stringify(entry.name)}: close failed: ${reasonOf(e)}`);
      }
      // Client.close() closes the transport; a stdio transport that was never handed to a client closes here.
      await entry.stdio?.close();
    });
    await within(Promise.allSettled(closing), Math.max(stdioBound, HTTP_CLOSE_MS) + 2000);
    for (const entry of entries) {
      const stdio = entry.stdio;
      if (stdio && stdio.status().state !== "closed" && stdio.pid !== null) signalGroup(stdio.pid, "SIGKILL");
      entry.status = { state: "closed" };
    }
  }

  private async connectOne(entry: Entry, options: McpServerPoolOptions): Promise<void> {
    const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const config = entry.config;
      if (config.transport === "stdio") {
        entry.stdio = new StdioMcpTransport({
          name: config.name,
          command: config.command,
          args: config.args,
          env: config.env,
          ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
          ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
          ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
        });
        entry.observed = new ObservedTransport(entry.stdio, { name: config.name });
      } else {
        entry.observed = createHttpTransport({
          name: config.name,
          url: config.url,
          headers: config.headers,
          ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
        });
      }
      const client = new Client(options.clientInfo, { capabilities: {} });
      // Transport notes (skipped lines, over-cap answers) are logged where they happen; the client needs no more.
      client.onerror = () => {};
      entry.client = client;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer to initialize within ${timeoutMs} ms`)), timeoutMs);
      });
      await Promise.race([client.connect(entry.observed, { timeout: timeoutMs }), deadline]);
      if (this.closeRequested) return; // close() ran meanwhile: it closes this client too
      entry.status = { state: "connected" };
      client.onclose = () => {
        if (entry.status.state !== "connected" || this.closeRequested) return;
        entry.status = { state: "failed", reason: "the connection ended" };
        logLine(`MCP server ${JSON.stringify(entry.name)}: the connection ended`);
      };
    } catch (e) {
      if (this.closeRequested) return;
      const reason = reasonOf(e);
      entry.status = { state: "failed", reason };
      logLine(`MCP server ${JSON.stringify(entry.name)}: failed to connect: ${reason}`);
      await within(Promise.resolve(entry.client?.close()).catch(() => {}), 1000);
      await entry.stdio?.close();
    } finally {
      clearTimeout(timer);
    }
  }

  private async listServerTools(entry: Entry, options: { signal?: AbortSignal; timeoutMs?: number }): Promise<PoolTool[]> {
    const client = entry.client;
    if (entry.status.state !== "connected" || !client) return [];
    if (!client.getServerCapabilities()?.tools) return [];
    const label = JSON.stringify(entry.name);
    const out: PoolTool[] = [];
    const seen = new Set<string>();
    const cursors = new Set<string>();
    let cursor: string | undefined;
    try {
      for (let page = 0; ; page++) {
        if (page >= MAX_TOOL_PAGES) {
          logLine(`MCP server ${label}: tools/list still paging after ${MAX_TOOL_PAGES} pages; using the tools listed so far`);
          break;
        }
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
          ...(options.signal ? { signal: options.signal } : {}),
          timeout: options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        });
        for (const tool of result.tools) {
          if (seen.size >= MAX_TOOLS_PER_SERVER) break;
          const problem = toolNameProblem(entry.name, tool.name);
          if (problem) {
            logLine(`MCP server ${label}: ${problem}`);
            continue;
          }
          if (seen.has(tool.name)) continue;
          seen.add(tool.name);
          out.push({
            qualifiedName: qualifiedToolName(entry.name, tool.name),
            server: entry.name,
            tool: tool.name,
            description: tool.description ?? "",
            inputSchema: tool.inputSchema,
          });
        }
        if (seen.size >= MAX_TOOLS_PER_SERVER) {
          logLine(`MCP server ${label}: lists more than ${MAX_TOOLS_PER_SERVER} tools; using the first ${MAX_TOOLS_PER_SERVER}`);
          break;
        }
        const next = result.nextCursor;
        if (next === undefined || next === null || next === "") break;
        if (cursors.has(next)) {
          logLine(`MCP server ${label}: tools/list repeated a cursor; using the tools listed so far`);
          break;
        }
        cursors.add(next);
        cursor = next;
      }
    } catch (e) {
      if (options.signal?.aborted) throw e;
      logLine(`MCP server ${label}: tools/list failed: ${reasonOf(e)}`);
    }
    return out;
  }

}

/** One line, bounded, with every secret replaced (the SDK's messages carry HTTP error bodies). */
function reasonOf(e: unknown): string {
  const text = scrubText(errorMessage(e)).replace(/\s+/g, " ").trim();
  return text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}…` : text || "unknown error";
}

function errorResult(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

/**
 * What must never appear in a reported reason (serve.md §2): header and env values, and the URL
 * itself (a bearer header's token alone is one of the forms the scrubber matches).
 */
function secretsOf(config: McpServerConfig): string[] {
  if (config.transport === "http") {
    const values = Object.values(config.headers);
    let query = "";
    try {
      const url = new URL(config.url);
      query = url.search.slice(1);
      if (url.password) values.push(url.password);
    } catch {
      // the config validated it; nothing more to hide
    }
    return [...values, config.url, ...(query ? [query] : [])];
  }
  return Object.values(config.env);
}
