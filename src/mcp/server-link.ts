/**
 * One supervised MCP server of the pool (serve.md §6 item 10): its current connection (an SDK
 * Client over a stdio process group or streamable HTTP), kept up for as long as serve runs.
 *
 * - A failed attempt, a stdio server that exits, an HTTP connection that is lost or whose MCP
 *   session expired (http-connection.ts `watchedFetch`): the link waits (supervision.ts backoff,
 *   on the injected scheduler) and connects anew — a new process group for stdio, after the old
 *   group is swept; a fresh `initialize` for HTTP.
 * - Each connection lists its tools once (cached) and again on `notifications/tools/list_changed`.
 * - Two moves are reported to `onEvent`, for the events client (serve/events-service.ts):
 *   `connected` (every session's subscriptions to the server resume at once) and
 *   `events_list_changed`, heard on any message path, a poll's SSE response included (the
 *   server's events are listed again). Nobody needs to hear of a drop or a tools change: the
 *   link re-lists its own tools, and states are read with `report()`.
 * - close() is final: no attempt starts after it, and one in flight is ended by it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Implementation, JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { BackoffPolicy } from "../shared/backoff.ts";
import { logLine } from "../shared/log.ts";
import { MCP } from "../shared/metrics/catalog.ts";
import { groupAlive, signalGroup } from "../shared/process-group.ts";
import { type Scheduler, type TimerHandle, within } from "../shared/time.ts";
import { createHttpTransport } from "./http-connection.ts";
import { ObservedTransport } from "./observed-transport.ts";
import { reasonOf } from "./reason.ts";
import type { McpServerConfig } from "./server-config.ts";
import { StdioMcpTransport } from "./stdio-transport.ts";
import {
  type LinkEvent,
  type ServerStateReport,
  type Supervision,
  initialSupervision,
  nextSupervision,
  reportSupervision,
} from "./supervision.ts";
import { type PoolTool, listServerTools } from "./tool-listing.ts";

export type ServerEventKind = "connected" | "events_list_changed";

export interface LinkOptions {
  clientInfo: Implementation;
  connectTimeoutMs: number;
  maxMessageBytes?: number;
  graceMs?: number;
  backoff: BackoffPolicy;
  scheduler: Scheduler;
  onEvent: (kind: ServerEventKind) => void;
}

/** A client that does not close within this long is left to the process-exit sweep. */
const CLIENT_CLOSE_MS = 1000;

export class ServerLink {
  private supervision: Supervision;
  private current: { client: Client; observed: ObservedTransport; stdio: StdioMcpTransport | null } | null = null;
  /** Identity of the current attempt: late news of an older connection is ignored. */
  private generation = 0;
  private timer: TimerHandle | null = null;
  private closeRequested = false;
  private tools: PoolTool[] | null = null;
  private toolsVersion = 0;
  private listing: Promise<PoolTool[]> | null = null;

  constructor(
    readonly config: McpServerConfig,
    private readonly o: LinkOptions,
  ) {
    this.supervision = initialSupervision(o.scheduler.now());
    MCP.reconnects.at(config.name); // the series shows from 0, so increase() sees the first reconnect
  }

  get name(): string {
    return this.config.name;
  }

  get connected(): boolean {
    return this.supervision.phase.kind === "connected" && this.current !== null;
  }

  /** The client of the live connection, or undefined while not connected. */
  get client(): Client | undefined {
    return this.connected ? this.current?.client : undefined;
  }

  get observed(): ObservedTransport | undefined {
    return this.connected ? this.current?.observed : undefined;
  }

  /** The stdio transport of the latest connection (live, or not yet ended), for the shutdown sweep. */
  get stdio(): StdioMcpTransport | null {
    return this.current?.stdio ?? null;
  }

  /** The `initialize` result of the live connection as received; undefined while not connected (a dead one's says nothing any more). */
  get rawInitializeResult(): Record<string, unknown> | undefined {
    return this.observed?.rawInitializeResult;
  }

  report(): ServerStateReport {
    return reportSupervision(this.name, this.config.transport, this.supervision, this.o.scheduler.now(), isoOf);
  }

  /** The first attempt; resolves once it connected or failed (a failure schedules the next). */
  start(): Promise<void> {
    return this.attempt();
  }

  /** The tools of the live connection (listed once per connection; [] while not connected or when listing fails). */
  listTools(timeoutMs: number): Promise<PoolTool[]> {
    const client = this.client;
    if (client === undefined) return Promise.resolve([]);
    if (this.tools !== null) return Promise.resolve(this.tools);
    if (this.listing !== null) return this.listing;
    const version = this.toolsVersion;
    const listing = listServerTools(client, this.name, { timeoutMs }).then(
      (tools) => {
        if (version === this.toolsVersion && client === this.client) this.tools = tools;
        return tools;
      },
      (e) => {
        logLine(`MCP server ${JSON.stringify(this.name)}: tools/list failed: ${reasonOf(e)}`, { level: "warn", server: this.name, code: "tools_list_failed" });
        return [] as PoolTool[];
      },
    );
    this.listing = listing;
    void listing.finally(() => {
      if (this.listing === listing) this.listing = null;
    });
    return listing;
  }

  /** Ends the connection and stops supervising; final and idempotent. */
  close(): Promise<void> {
    this.closeRequested = true;
    if (this.timer !== null) this.o.scheduler.clearTimeout(this.timer);
    this.timer = null;
    this.move({ type: "close", at: this.o.scheduler.now() });
    return this.endConnection();
  }

  private async attempt(): Promise<void> {
    const generation = ++this.generation;
    // Whatever the last connection left (its process group above all) is gone before a new one starts.
    await this.endConnection();
    if (this.closeRequested || generation !== this.generation) return;
    const { observed, stdio } = this.transportFor(generation);
    const client = new Client(this.o.clientInfo, { capabilities: {} });
    // Transport notes (skipped lines, over-cap answers) are logged where they happen; the client needs no more.
    client.onerror = () => {};
    this.current = { client, observed, stdio };
    this.invalidateTools();
    observed.onIncoming((message) => this.heard(generation, message));
    // Set before connect: a server that dies in the moment after its answer is still noticed (see below).
    client.onclose = () => this.lost(generation, "the connection ended");
    const timeoutMs = this.o.connectTimeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer to initialize within ${timeoutMs} ms`)), timeoutMs);
      });
      await Promise.race([client.connect(observed, { timeout: timeoutMs }), deadline]);
    } catch (e) {
      if (this.closeRequested) return;
      const reason = reasonOf(e);
      await this.endConnection();
      this.move({ type: "failed", at: this.o.scheduler.now(), error: reason });
      logLine(`MCP server ${JSON.stringify(this.name)}: failed to connect: ${reason}; ${this.retryNote()}`, { level: "warn", server: this.name, code: "server_connect_failed" });
      this.scheduleAttempt();
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.closeRequested) return; // close() ran meanwhile: it closes this client too
    const again = this.supervision.restarts > 0;
    this.move({ type: "connected", at: this.o.scheduler.now() });
    if (stdio !== null && stdio.status().state !== "open") {
      this.lost(generation, "the connection ended");
      return;
    }
    if (again) logLine(`MCP server ${JSON.stringify(this.name)}: connected again (restart ${this.supervision.restarts})`, { server: this.name, code: "server_reconnected" });
    this.o.onEvent("connected");
    // Listed again on every (re)connect, before the model asks, so a broken listing shows in the log at once.
    void this.listTools(this.o.connectTimeoutMs);
  }

  private transportFor(generation: number): { observed: ObservedTransport; stdio: StdioMcpTransport | null } {
    const config = this.config;
    if (config.transport === "stdio") {
      const stdio = new StdioMcpTransport({
        name: config.name,
        command: config.command,
        args: config.args,
        env: config.env,
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        ...(this.o.maxMessageBytes !== undefined ? { maxMessageBytes: this.o.maxMessageBytes } : {}),
        ...(this.o.graceMs !== undefined ? { graceMs: this.o.graceMs } : {}),
      });
      return { observed: new ObservedTransport(stdio, { name: config.name, readGate: stdio.readGate }), stdio };
    }
    const observed = createHttpTransport({
      name: config.name,
      url: config.url,
      headers: config.headers,
      ...(this.o.maxMessageBytes !== undefined ? { maxMessageBytes: this.o.maxMessageBytes } : {}),
      onConnectionLost: (reason) => this.lost(generation, reasonOf(reason)),
    });
    return { observed, stdio: null };
  }

  /** The live connection `generation` ended (or was found lost): reconnect with backoff. */
  private lost(generation: number, reason: string): void {
    if (generation !== this.generation || this.closeRequested || this.supervision.phase.kind !== "connected") return;
    this.move({ type: "dropped", at: this.o.scheduler.now(), error: reason });
    this.invalidateTools();
    logLine(`MCP server ${JSON.stringify(this.name)}: ${reason}; ${this.retryNote()}`, { level: "warn", server: this.name, code: "server_connection_lost" });
    // An HTTP client still holds requests in flight: closing it fails them now instead of at their timeouts.
    void this.endConnection();
    this.scheduleAttempt();
  }

  private heard(generation: number, message: JSONRPCMessage): void {
    if (generation !== this.generation || !("method" in message) || "id" in message) return;
    if (message.method === "notifications/tools/list_changed") {
      this.invalidateTools();
      if (this.connected) void this.listTools(this.o.connectTimeoutMs);
    } else if (message.method === "notifications/events/list_changed") {
      this.o.onEvent("events_list_changed");
    }
  }

  private invalidateTools(): void {
    this.toolsVersion++;
    this.tools = null;
    this.listing = null;
  }

  private scheduleAttempt(): void {
    const phase = this.supervision.phase;
    if (phase.kind !== "waiting" || this.closeRequested) return;
    const delay = Math.max(0, phase.retryAt - this.o.scheduler.now());
    this.timer = this.o.scheduler.setTimeout(
      () => {
        this.timer = null;
        if (this.closeRequested) return;
        this.move({ type: "attempt", at: this.o.scheduler.now() });
        void this.attempt();
      },
      delay,
      { unref: true },
    );
  }

  private retryNote(): string {
    const r = this.report();
    return `retrying in ${r.retry_in_ms ?? 0} ms`;
  }

  private move(event: LinkEvent): void {
    const restarts = this.supervision.restarts;
    this.supervision = nextSupervision(this.supervision, event, this.o.backoff);
    // `vigil_mcp_server_reconnects_total` counts what `restarts` counts: every attempt after the first.
    if (this.supervision.restarts !== restarts) MCP.reconnects.at(this.name).inc();
  }

  /**
   * Closes the latest connection: the client (bounded) and, for stdio, the transport (stdin EOF,
   * grace, group sweep: bounded by its closeBoundMs), then SIGKILLs the group if anything of it is
   * still there. Idempotent per connection. Once ended it is forgotten (unless a newer attempt
   * took its place meanwhile): nothing of a dead connection stays visible.
   */
  private async endConnection(): Promise<void> {
    const conn = this.current;
    if (conn === null) return;
    try {
      await within(conn.client.close(), CLIENT_CLOSE_MS);
    } catch (e) {
      logLine(`MCP server ${JSON.stringify(this.name)}: close failed: ${reasonOf(e)}`, { level: "warn", server: this.name, code: "server_close_failed" });
    }
    // Client.close() closes the transport; one that was never handed to a client (or outlived it) closes here.
    if (conn.stdio !== null) {
      await conn.stdio.close();
      const pid = conn.stdio.pid;
      if (pid !== null && groupAlive(pid)) signalGroup(pid, "SIGKILL");
    }
    if (this.current === conn) this.current = null;
  }
}

function isoOf(ms: number): string {
  return new Date(ms).toISOString();
}
