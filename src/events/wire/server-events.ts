/**
 * The client side of the MCP Events wire for one configured server (serve.md §6 items 1–3), over
 * the server's SDK Client from the shared pool (stdio or streamable HTTP).
 *
 * - Support is read from the raw `initialize` result (the SDK strips a top-level `events`
 *   capability), in either location; no `events/*` request is ever sent to a server without the
 *   capability or without an `events` entry in the config.
 * - Custom requests use the SDK's loose ResultSchema, so unknown result keys (`resultType`, `_meta`,
 *   `hasMore`…) pass through untouched.
 * - `events/list` is paged with a loop guard and cached until `notifications/events/list_changed`,
 *   an explicit invalidation (re-discovery) or a new connection. One call at a time per server:
 *   subscriptions starting together share it (single-flight). On list_changed serve re-lists by
 *   itself, once per burst (list-refresh.ts), so `mcp_events_list` shows the new list. The notice
 *   comes from the pool (`events_list_changed`, serve/events-service.ts calls `listChanged`), the
 *   one route: the pool hears it on every message path, before the SDK client dispatches it.
 * - Every request has its own signal, derived from the caller's and let go of when it settles
 *   (shared/request-signal.ts): `notifications/cancelled` goes only to requests still in flight.
 * - Push: `openStream` registers the stream under the JSON-RPC id the SDK gives its request (seen
 *   through the transport's outgoing hook, matched by the params object's identity) and routes the
 *   stream's notifications by `_meta["io.modelcontextprotocol/subscriptionId"]`. Cancelling aborts
 *   the request: the SDK then sends `notifications/cancelled` (and over HTTP the response body is
 *   dropped by the connection, see http-connection.ts).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerPool } from "../../mcp/server-pool.ts";
import type { EventsServerConfig } from "../config.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { withRequestSignal } from "../../shared/request-signal.ts";
import { SingleFlight } from "../../shared/single-flight.ts";
import { type Scheduler, realScheduler } from "../../shared/time.ts";
import { scrubText } from "../../shared/scrub.ts";
import { eventsCapability } from "../rules/capability.ts";
import { boundText, boundValue } from "../rules/server-text.ts";
import { EventsRpcError } from "../rules/errors.ts";
import { SUBSCRIPTION_ID_META } from "../../shared/ndjson/message-head.ts";
import { type EventDescriptor, readAllPages } from "./list-pages.ts";
import { ListRefresh } from "./list-refresh.ts";
import { PushStream, type StreamNotification } from "./push-stream.ts";

/** Unary `events/*` requests (list, poll) give up after this long. */
export const RPC_TIMEOUT_MS = 30_000;
/** setTimeout's ceiling: a stream has no request timeout (its liveness is the idle watchdog). */
const NO_TIMEOUT_MS = 2_147_483_647;

/** Push streams over HTTP open in this process, and how many may be (VIGIL_EVENTS_MAX_HTTP_STREAMS). */
export interface StreamBudget {
  open: number;
  readonly max: number;
}

/** A refusal decided here, before anything is sent (unknown server, no extension, no config). */
export class EventsRefused extends Error {
  readonly permanent = true;
}

export class ServerEvents {
  private cache: { generation: number; events: EventDescriptor[] } | null = null;
  private generation = 0;
  private readonly streams = new Map<string, PushStream>();
  private readonly expected = new WeakMap<object, (id: string | number) => void>();
  private hooked: { client: Client; off: () => void } | null = null;
  /** The capability as read from the `initialize` result of this connection (`supports`). */
  private capable: { client: Client; supported: boolean } | null = null;
  private droppedIds = 0;
  private readonly listing = new SingleFlight<EventDescriptor[]>();
  private readonly refresh: ListRefresh;

  constructor(
    private readonly pool: McpServerPool<EventsServerConfig>,
    readonly server: string,
    private readonly budget: StreamBudget = { open: 0, max: Number.POSITIVE_INFINITY },
    scheduler: Scheduler = realScheduler,
  ) {
    this.refresh = new ListRefresh(() => this.relist(), scheduler);
  }

  /** Over streamable HTTP each stream holds a fetch slot: false once the process-wide budget is spent. */
  get canStream(): boolean {
    return !this.overHttp || this.budget.open < this.budget.max;
  }

  private get overHttp(): boolean {
    return this.pool.serverConfig(this.server)?.transport === "http";
  }

  /** Whether the config opts this server in (an `events` entry, possibly empty). */
  get configured(): boolean {
    return this.pool.serverConfig(this.server)?.events !== undefined;
  }

  /** Throws EventsRefused when no `events/*` request may go to this server now. */
  private connection(): Client {
    const config = this.pool.serverConfig(this.server);
    if (config === undefined) throw new EventsRefused(`unknown MCP server ${JSON.stringify(this.server)}`);
    if (config.events === undefined) {
      throw new EventsRefused(`MCP server ${JSON.stringify(this.server)} has no "events" entry in the config (add "events": [] to allow runtime subscriptions)`);
    }
    const client = this.pool.client(this.server);
    if (client === undefined) {
      const status = this.pool.status(this.server);
      const why = status === undefined ? "" : ` (${status.state}${status.error === undefined ? "" : `: ${status.error}`})`;
      throw new EventsRpcError(-32603, `MCP server ${JSON.stringify(this.server)} is not connected${why}`, undefined);
    }
    if (!this.supports(client)) {
      throw new EventsRefused(`MCP server ${JSON.stringify(this.server)} does not support the MCP Events extension (no events capability)`);
    }
    this.hook(client);
    return client;
  }

  /**
   * Whether this connection's `initialize` result offers the extension. Read once per connection:
   * the result is fixed for a connection's life, and reading it is a deep copy (server-pool.ts) —
   * once per poll it was a structured clone of the whole result per page (issue 16).
   */
  private supports(client: Client): boolean {
    if (this.capable?.client === client) return this.capable.supported;
    const raw = this.pool.rawInitializeResult(this.server);
    const supported = eventsCapability(raw).supported;
    // Not cached before the result is known: a connection is never judged on a missing answer.
    if (raw !== undefined) this.capable = { client, supported };
    return supported;
  }

  /** The event types the server offers (cached; one `events/list` in flight at a time, shared). */
  async list(signal?: AbortSignal): Promise<EventDescriptor[]> {
    this.connection();
    const fresh = this.fresh();
    if (fresh !== null) return fresh;
    const generation = this.generation;
    // A caller that waited for an older call may find the list cached by the time it is its turn.
    return this.listing.run(generation, async (shared) => this.fresh() ?? this.fetchList(generation, shared), signal);
  }

  private fresh(): EventDescriptor[] | null {
    return this.cache !== null && this.cache.generation === this.generation ? this.cache.events : null;
  }

  private async fetchList(generation: number, signal: AbortSignal): Promise<EventDescriptor[]> {
    const client = this.connection();
    const events = await readAllPages((cursor) => this.request(client, "events/list", cursor === undefined ? {} : { cursor }, signal));
    if (generation === this.generation) this.cache = { generation, events };
    return events;
  }

  /** Forgets the cached list (re-discovery, list_changed). */
  invalidate(): void {
    this.generation++;
  }

  /** `notifications/events/list_changed` (the pool's `events_list_changed`): stale now, re-listed shortly without a client asking. */
  listChanged(): void {
    this.invalidate();
    this.refresh.changed();
  }

  private async relist(): Promise<void> {
    try {
      await this.list();
    } catch (e) {
      // The cache stays stale: the next subscription or `mcp_events_list` asks again.
      logLine(`serve: events: MCP server ${JSON.stringify(this.server)}: re-listing events after list_changed failed: ${serverText(errorMessage(e))}`, { level: "warn", server: this.server, code: "events_relist_failed" });
    }
  }

  /** One `events/poll`; the raw result (validated by the caller). A long poll's request timeout sits above its hold time. */
  poll(params: Record<string, unknown>, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const hold = typeof params.timeoutMs === "number" ? params.timeoutMs : 0;
    return this.request(this.connection(), "events/poll", params, signal, RPC_TIMEOUT_MS + hold);
  }

  /**
   * One `events/subscribe` (webhook mode; a refresh is the same call with the same key): the raw
   * result, validated by the caller (webhook/webhook-loop.ts). The server verifies the callback
   * inside this call, so it is a unary request with the RPC timeout like a poll.
   */
  subscribe(params: Record<string, unknown>, signal?: AbortSignal): Promise<Record<string, unknown>> {
    return this.request(this.connection(), "events/subscribe", params, signal);
  }

  /** One `events/unsubscribe`, bounded by `timeoutMs` (a graceful stop must not hang on a slow server). */
  unsubscribe(params: Record<string, unknown>, signal: AbortSignal | undefined, timeoutMs: number): Promise<Record<string, unknown>> {
    return this.request(this.connection(), "events/unsubscribe", params, signal, timeoutMs);
  }

  /**
   * The origin (`https://host:port`) of the server's configured HTTP URL, whose published keys bind
   * `v1a` signatures (design notes §4.6); null for stdio servers (no identity to enforce).
   */
  get origin(): string | null {
    const config = this.pool.serverConfig(this.server);
    if (config?.transport !== "http" || !URL.canParse(config.url)) return null;
    return new URL(config.url).origin;
  }

  /**
   * Opens one `events/stream`. Its notifications arrive in the returned stream's queue (bounded by
   * `capacity`), then its end. `close()` on the stream cancels the request.
   */
  openStream(params: Record<string, unknown>, capacity: number): PushStream {
    const client = this.connection();
    const counted = this.overHttp;
    if (counted && this.budget.open >= this.budget.max) {
      throw new EventsRpcError(-32603, `${this.budget.max} push streams are open over HTTP (VIGIL_EVENTS_MAX_HTTP_STREAMS; raise it together with BUN_CONFIG_MAX_HTTP_REQUESTS)`);
    }
    if (counted) this.budget.open++;
    const controller = new AbortController();
    let id: string | null = null;
    const stream = new PushStream(capacity, () => {
      if (counted) this.budget.open--;
      if (id !== null && this.streams.get(id) === stream) this.streams.delete(id);
      if (!controller.signal.aborted) controller.abort(new Error("stream closed by vigil"));
    }, undefined, this.pool.transport(this.server)?.readGate ?? null);
    const requestParams = { ...params };
    this.expected.set(requestParams, (assigned) => {
      id = JSON.stringify(assigned);
      this.streams.set(id, stream);
    });
    client
      .request({ method: "events/stream", params: requestParams }, ResultSchema, { signal: controller.signal, timeout: NO_TIMEOUT_MS })
      .then(
        () => stream.finish({ kind: "final" }),
        (e) => stream.finish(endOf(e, controller.signal.aborted)),
      );
    if (id === null) {
      // The transport never saw the request (not connected): nothing will be routed to it.
      this.expected.delete(requestParams);
    }
    return stream;
  }

  /** Open streams (for tests and status). */
  get openStreams(): number {
    return this.streams.size;
  }

  private async request(
    client: Client,
    method: string,
    params: Record<string, unknown>,
    signal?: AbortSignal,
    timeout = RPC_TIMEOUT_MS,
  ): Promise<Record<string, unknown>> {
    try {
      const result = await withRequestSignal(signal, (own) => client.request({ method, params }, ResultSchema, { timeout, signal: own }));
      return result as Record<string, unknown>;
    } catch (e) {
      // Server and transport messages, and the error's data, reach frames, logs and state: no secret may.
      if (e instanceof McpError) throw new EventsRpcError(e.code, serverText(stripPrefix(e.message)), serverValue(e.data));
      throw new EventsRpcError(-32603, serverText(errorMessage(e)), undefined);
    }
  }

  /** Installs the notification router and the outgoing-id hook on this server's client (once per client). */
  private hook(client: Client): void {
    if (this.hooked?.client === client) return;
    // A new connection (a reconnect): what the old one listed may no longer hold.
    if (this.hooked !== null) this.invalidate();
    this.hooked?.off();
    const transport = this.pool.transport(this.server);
    const off = transport?.onOutgoing((message: JSONRPCMessage) => {
      if (!("method" in message) || message.method !== "events/stream" || !("id" in message)) return;
      const params = message.params as object | undefined;
      if (params === undefined) return;
      const bind = this.expected.get(params);
      if (bind === undefined) return;
      this.expected.delete(params);
      bind(message.id);
    }) ?? (() => {});
    // Stream notifications are routed as the transport reads them (not after the SDK's dispatch):
    // a stream that fills holds the read gate before the next message is read.
    transport?.setClaimer((message) => {
      if (!("method" in message) || "id" in message || !message.method.startsWith("notifications/events/")) return false;
      if (message.method === "notifications/events/list_changed") return false;
      this.route(message as StreamNotification);
      return true;
    });
    const offAll = () => {
      off();
      transport?.setClaimer(null);
    };
    const previous = client.fallbackNotificationHandler;
    client.fallbackNotificationHandler = async (notification) => {
      // list_changed is the pool's to report (see the header); the rest belong to push streams.
      if (notification.method === "notifications/events/list_changed") return;
      if (notification.method.startsWith("notifications/events/")) this.route(notification as StreamNotification);
      else await previous?.(notification);
    };
    this.hooked = { client, off: offAll };
  }

  private route(notification: StreamNotification): void {
    const raw = (notification.params ?? {}) as Record<string, unknown>;
    // An error or termination notice carries server text into frames and logs: scrubbed and cut here (event payloads stay verbatim).
    const params = notification.method !== "notifications/events/event" && "error" in raw ? { ...raw, error: serverValue(raw.error) } : raw;
    const meta = params._meta as Record<string, unknown> | undefined;
    const routing = meta?.[SUBSCRIPTION_ID_META] ?? params.requestId;
    if (typeof routing === "string" || typeof routing === "number") {
      this.streams.get(JSON.stringify(routing))?.offer({ method: notification.method, params });
      return;
    }
    // An over-cap stand-in whose head did not reach its routing: every open stream of this server
    // hears of it, stamped with one id so the model is told once.
    if (params.$oversized === true) {
      const stamped = { ...params, $dropped_id: `${this.server}#${++this.droppedIds}` };
      for (const stream of [...this.streams.values()]) stream.offer({ method: notification.method, params: stamped });
    }
  }
}

function endOf(e: unknown, aborted: boolean) {
  if (aborted) return { kind: "closed" as const, reason: "cancelled" };
  if (e instanceof McpError && e.code !== -32000 && e.code !== -32001) {
    return { kind: "rpc_error" as const, code: e.code, message: serverText(stripPrefix(e.message)), data: serverValue(e.data) };
  }
  return { kind: "closed" as const, reason: serverText(errorMessage(e)) };
}

/**
 * Text from the server or its transport, as it may go on: secrets scrubbed, then cut to a bounded
 * length (rules/server-text.ts). The one way such text enters the events client.
 */
function serverText(text: string): string {
  return boundText(scrubText(text));
}

/** A server's `error` object or error `data`, the same way (every string in it, and its size), in one walk. */
function serverValue(value: unknown): unknown {
  return boundValue(value, scrubText);
}

/** The SDK prefixes "MCP error <code>: " to server messages; the code is reported separately. */
function stripPrefix(message: string): string {
  return message.replace(/^MCP error -?\d+: /, "");
}
