/**
 * The MCP servers of `vigil serve` (serve.md §2 `mcp_servers`, §5, §6 items 1, 8, 9): one SDK Client
 * per configured server, over StdioMcpTransport (own process group, message cap) or streamable
 * HTTP (http-connection.ts), each decorated to keep the server's raw `initialize` result.
 *
 *   const pool = await McpServerPool.connect(config.mcp_servers, { clientInfo: { name: "vigil", version } });
 *   pool.serverStates();              // [{ name: "fs", transport: "stdio", state: "connected", since, restarts: 0 }]
 *   pool.onServerEvent((e) => …);     // { server: "fs", kind: "connected" | "events_list_changed" }
 *   pool.rawInitializeResult("fs");   // initialize result as received (keeps a top-level `events` capability)
 *   await pool.listTools();           // [{ qualifiedName: "fs__read_file", server, tool, description, inputSchema }]
 *   await pool.callTool("fs__read_file", { path: "/x" }, { signal, timeoutMs });
 *   await pool.reconfigure(newConfigs, new Set(["fs"])); // a reload: "fs" reconnects, added ones connect, removed ones close
 *   await pool.close();
 *
 * connect() never rejects for a server: each connects in parallel within a bound (default 20 s), and
 * one that fails is reported by status() (one line, secrets scrubbed) while the others serve.
 * Every server is then supervised for as long as the pool is open (server-link.ts, serve.md §6
 * item 10): one that failed to connect, exited or lost its connection is connected anew with
 * backoff, and its tools are listed again.
 * callTool() turns every failure of the call (server error, over-cap answer, timeout, unknown tool,
 * server not connected — naming its state) into an `isError` result the model can read; the
 * connection survives. Only an abort through the caller's own signal rejects, since then nobody is
 * waiting for a result.
 *
 * The pool is where a server's text enters vigil: each server's secrets (header values, URL
 * credentials, env values) are registered with the process-wide scrubber (shared/scrub.ts) when
 * the pool is built, and every reason and every tool result leaves the pool scrubbed.
 */
import type { CallToolResult, Implementation } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpServerConfig } from "./server-config.ts";
import { type BackoffPolicy, SUPERVISION_BACKOFF } from "../shared/backoff.ts";
import { withRequestSignal } from "../shared/request-signal.ts";
import { logLine } from "../shared/log.ts";
import { MCP } from "../shared/metrics/catalog.ts";
import { signalGroup } from "../shared/process-group.ts";
import { registerSecrets, scrubValue } from "../shared/scrub.ts";
import { type Scheduler, realScheduler, within } from "../shared/time.ts";
import type { ObservedTransport } from "./observed-transport.ts";
import { reasonOf } from "./reason.ts";
import { type LinkOptions, type ServerEventKind, ServerLink } from "./server-link.ts";
import { type ServerStateReport, unavailableText } from "./supervision.ts";
import type { PoolTool } from "./tool-listing.ts";
import { splitQualifiedName } from "./tool-names.ts";

export type { PoolTool } from "./tool-listing.ts";
export { MAX_TOOL_PAGES, MAX_TOOLS_PER_SERVER } from "./tool-listing.ts";
export type { ServerEventKind } from "./server-link.ts";
export type { ServerStateReport } from "./supervision.ts";

export const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;
/** close() waits this long for an HTTP client on top of the slowest stdio close bound. */
const HTTP_CLOSE_MS = 2000;

/** One server's state: what serverStates() lists (the contract `/v1/health` and get_state read). */
export type ServerStatus = ServerStateReport;

export interface ServerEvent {
  server: string;
  kind: ServerEventKind;
}

export interface McpServerPoolOptions {
  clientInfo: Implementation;
  /** Per server. Default 20 s. */
  connectTimeoutMs?: number;
  /** Default: VIGIL_MCP_MAX_MESSAGE_BYTES, else 32 MiB. */
  maxMessageBytes?: number;
  /** stdio shutdown grace. Default: VIGIL_SHUTDOWN_GRACE_MS, else 3000. */
  graceMs?: number;
  /** Reconnect backoff (default 1 s doubling to 60 s, reset after 10 minutes up). */
  backoff?: Partial<BackoffPolicy>;
  /** The clock and timers of the reconnect backoff (tests inject a fake one). */
  scheduler?: Scheduler;
}

export interface CallToolOptions {
  signal?: AbortSignal;
  /** Default 120 s. */
  timeoutMs?: number;
}

/** `C`: the config entries as the embedding config has them (they may carry more keys, e.g. `events`). */
export class McpServerPool<C extends McpServerConfig = McpServerConfig> {
  private readonly links = new Map<string, ServerLink>();
  private readonly configs = new Map<string, C>();
  private readonly listeners = new Set<(e: ServerEvent) => void>();
  private readonly connectTimeoutMs: number;
  private readonly linkOptions: Omit<LinkOptions, "onEvent">;
  private closing: Promise<void> | null = null;

  private constructor(configs: readonly C[], options: McpServerPoolOptions) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.linkOptions = {
      clientInfo: options.clientInfo,
      connectTimeoutMs: this.connectTimeoutMs,
      ...(options.maxMessageBytes !== undefined ? { maxMessageBytes: options.maxMessageBytes } : {}),
      ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
      backoff: { ...SUPERVISION_BACKOFF, ...(options.backoff ?? {}) },
      scheduler: options.scheduler ?? realScheduler,
    };
    for (const config of configs) {
      this.configs.set(config.name, config);
      this.links.set(config.name, this.linkFor(config));
    }
  }

  private linkFor(config: C): ServerLink {
    registerSecrets(secretsOf(config));
    return new ServerLink(config, { ...this.linkOptions, onEvent: (kind) => this.emit({ server: config.name, kind }) });
  }

  /** Connects every server in parallel; resolves once each first attempt connected or failed. Never rejects. */
  static async connect<C extends McpServerConfig>(configs: readonly C[], options: McpServerPoolOptions): Promise<McpServerPool<C>> {
    const pool = new McpServerPool<C>(configs, options);
    await Promise.all([...pool.links.values()].map((link) => link.start()));
    return pool;
  }

  get serverNames(): string[] {
    return [...this.links.keys()];
  }

  status(server: string): ServerStatus | undefined {
    return this.links.get(server)?.report();
  }

  /** Every server's state, in config order. */
  serverStates(): ServerStatus[] {
    return [...this.links.values()].map((link) => link.report());
  }

  /** Hears every (re)connect and `notifications/events/list_changed` of every server (server-link.ts); returns the unsubscribe. */
  onServerEvent(listener: (e: ServerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The server's `initialize` result as received, with keys the SDK would strip; undefined if it never connected. */
  rawInitializeResult(server: string): Record<string, unknown> | undefined {
    return this.links.get(server)?.rawInitializeResult;
  }

  /** The SDK client of a connected server (for requests the pool does not wrap, e.g. `events/*`). */
  client(server: string): Client | undefined {
    return this.links.get(server)?.client;
  }

  /** The transport decorator of a connected server (outgoing-message hook for the events client). */
  transport(server: string): ObservedTransport | undefined {
    return this.links.get(server)?.observed;
  }

  /** The configured server entry, or undefined. */
  serverConfig(server: string): C | undefined {
    return this.configs.get(server);
  }

  /** Process-group ids (leader pids) of the stdio servers started and not yet closed. */
  stdioProcessGroups(): number[] {
    const out: number[] = [];
    for (const link of this.links.values()) {
      const pid = link.stdio?.pid;
      if (typeof pid === "number" && link.stdio?.status().state !== "closed") out.push(pid);
    }
    return out;
  }

  /**
   * Every tool of every connected server, in config order (listed once per connection, again after
   * `notifications/tools/list_changed`). A server whose listing fails contributes nothing (logged);
   * a tool whose qualified name is not a valid function name is skipped (logged).
   */
  async listTools(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<PoolTool[]> {
    const timeoutMs = options.timeoutMs ?? this.connectTimeoutMs;
    const lists = Promise.all([...this.links.values()].map((link) => link.listTools(timeoutMs)));
    return (await abortable(lists, options.signal)).flat();
  }

  /** Why a call to this qualified tool name cannot go to its server now; null when it can (or names no server). */
  unavailable(qualifiedName: string): string | null {
    const target = splitQualifiedName(qualifiedName, this.links.keys());
    if (!target) return null;
    const link = this.links.get(target.server)!;
    return link.connected ? null : unavailableText(link.report());
  }

  async callTool(qualifiedName: string, args: Record<string, unknown> | undefined, options: CallToolOptions = {}): Promise<CallToolResult> {
    const target = splitQualifiedName(qualifiedName, this.links.keys());
    if (!target) return errorResult(`unknown tool ${JSON.stringify(qualifiedName.slice(0, 100))}`);
    const link = this.links.get(target.server)!;
    const client = link.client;
    if (client === undefined) return errorResult(unavailableText(link.report()));
    try {
      // Its own signal (shared/request-signal.ts): the run's signal outlives the call, and the SDK
      // would leave a listener on it per call and cancel completed calls when the run is aborted.
      const result = await withRequestSignal(options.signal, (signal) =>
        client.callTool({ name: target.tool, arguments: args ?? {} }, undefined, {
          signal,
          timeout: options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        }),
      );
      // Results too, not only errors: a server may echo a credential in any text the model and the transcript get.
      return scrubValue(result) as CallToolResult;
    } catch (e) {
      if (options.signal?.aborted) throw e;
      const state = link.connected ? "" : ` (${unavailableText(link.report())})`;
      return errorResult(`tool ${JSON.stringify(qualifiedName)} failed: ${reasonOf(e)}${state}`);
    }
  }

  /**
   * A reload (serve/reload.ts): the pool serves `configs` from now on, in their order. A server no
   * longer in them is closed (stdio: stdin EOF, grace, process group swept); one named in `replace`
   * is closed, then connected anew from its new entry; a new one is connected; every other keeps its
   * connection untouched and takes its new entry (its `events`). Resolves once the closes are done
   * and every new connection's first attempt connected or failed (each bounded as in close() and
   * connect(); a failed one is retried with backoff). Never rejects; nothing starts once close() began.
   */
  async reconfigure(configs: readonly C[], replace: ReadonlySet<string>): Promise<void> {
    if (this.closing !== null) return;
    const ending: ServerLink[] = [];
    const starting: ServerLink[] = [];
    const next = new Map<string, ServerLink>();
    for (const config of configs) {
      const kept = this.links.get(config.name);
      if (kept !== undefined && !replace.has(config.name)) {
        next.set(config.name, kept);
        continue;
      }
      if (kept !== undefined) ending.push(kept);
      const fresh = this.linkFor(config);
      next.set(config.name, fresh);
      starting.push(fresh);
    }
    for (const [name, link] of this.links) {
      if (next.has(name)) continue;
      ending.push(link);
      // A removed server leaves no series behind (its state gauge is read from the links, so goes by itself).
      MCP.reconnects.forget("server", name);
    }
    // Swapped at once (no await before): a close() from now on closes the new links, not the ending ones.
    this.links.clear();
    for (const [name, link] of next) this.links.set(name, link);
    this.configs.clear();
    for (const config of configs) this.configs.set(config.name, config);
    // The old connection is gone before its replacement starts: never two of one server at once.
    await closeLinks(ending);
    await Promise.all(starting.map((link) => link.start()));
  }

  /**
   * Stops supervising and closes every connection in parallel: stdio servers get stdin EOF, a
   * grace, and their process groups swept; bounded by the slowest close bound + 2 s; idempotent;
   * never rejects. No server is started again once it began.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private shutdown(): Promise<void> {
    return closeLinks([...this.links.values()]);
  }

  private emit(event: ServerEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (e) {
        logLine(`MCP server ${JSON.stringify(event.server)}: a ${event.kind} listener failed: ${reasonOf(e)}`, { level: "error", server: event.server, code: "internal" });
      }
    }
  }
}

/**
 * Closes `links` in parallel, bounded by the slowest close bound + 2 s; a stdio server whose close
 * ran out of time has its process group SIGKILLed. Never rejects.
 */
async function closeLinks(links: readonly ServerLink[]): Promise<void> {
  const stdioBound = Math.max(0, ...links.map((l) => l.stdio?.closeBoundMs ?? 0));
  await within(Promise.allSettled(links.map((link) => link.close())), Math.max(stdioBound, HTTP_CLOSE_MS) + 2000);
  for (const link of links) {
    const stdio = link.stdio;
    if (stdio && stdio.status().state !== "closed" && stdio.pid !== null) signalGroup(stdio.pid, "SIGKILL");
  }
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
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
