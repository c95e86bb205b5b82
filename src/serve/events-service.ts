/**
 * The MCP Events client of one `vigil serve` process (serve.md §6): one wire per configured server
 * (shared by every session), one hub per open session, which session owns the configured
 * subscriptions, and which sessions a daemon wakes at boot.
 *
 * - Configured subscriptions belong to one session: the stdio session, or in daemon mode
 *   `--mcp-events-session` (default `mcp-events`), started at boot when any `events` are configured.
 * - Runtime subscriptions are restored by their own session when it opens; at boot the daemon
 *   opens at most VIGIL_EVENTS_MAX_RESTORED_SESSIONS sessions whose snapshots hold runtime specs
 *   within VIGIL_EVENTS_RUNTIME_TTL_MS of their last client command, most recently used first.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { McpServerPool } from "../mcp/server-pool.ts";
import { errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { ServeTuning } from "./config/tuning.ts";
import { isValidSessionName } from "./state/paths.ts";
import { EventsHub } from "../events/hub.ts";
import type { EventsServices, EventsSession, FaultReport } from "../events/ports.ts";
import { type EventLedger, EventsStore, type LedgerOptions } from "../events/store/events-store.ts";
import { type ConfiguredChange, retireConfigured } from "../events/hub-configured.ts";
import { configuredSpec } from "../events/storable-spec.ts";
import type { SubscriptionSpec } from "../events/types.ts";
import { ServerEvents, type StreamBudget } from "../events/wire/server-events.ts";
import type { Scheduler } from "../shared/time.ts";
import type { WebhookAbility } from "../events/webhook/types.ts";
import { webhookAbility } from "./webhook-ability.ts";

export const DEFAULT_EVENTS_SESSION = "mcp-events";

export interface EventsServiceOptions {
  pool: McpServerPool;
  config: ServeConfig;
  tuning: ServeTuning;
  stateDir: string;
  /** The session that owns the configured subscriptions. */
  owner: string;
  /** `--mcp-events-reapable`: live subscriptions no longer keep a session from the reaper. */
  reapable: boolean;
  /** `--mcp-events-callback-url` (daemon mode only; null or absent: no webhook delivery). */
  callbackUrl?: URL | null;
  /** Daemon mode (a listener exists); stdio mode cannot take webhook deliveries. */
  daemon?: boolean;
  now?: () => number;
  /** The timers of the wires (the list_changed debounce); tests inject a fake one. */
  scheduler?: Scheduler;
}

export class EventsService implements EventsServices {
  readonly tuning: ServeTuning;
  /** One route table and one server-key store per process when webhook delivery is possible. */
  readonly webhook: WebhookAbility;
  /** The callback base the receiver serves under (daemon mode with a callback URL), else null. */
  readonly callbackBase: URL | null;
  readonly owner: string;
  private readonly wires = new Map<string, ServerEvents>();
  private readonly streamBudget: StreamBudget;
  private readonly hubs = new Map<string, EventsHub>();
  private readonly now: () => number;
  /** The config in force: the one started with, then each reload's (`reconfigure`). */
  private config: ServeConfig;

  constructor(private readonly o: EventsServiceOptions) {
    this.config = o.config;
    this.tuning = o.tuning;
    this.owner = o.owner;
    this.now = o.now ?? Date.now;
    const daemon = o.daemon === true;
    this.callbackBase = daemon ? (o.callbackUrl ?? null) : null;
    this.webhook = webhookAbility(this.callbackBase, daemon);
    this.streamBudget = { open: 0, max: o.tuning.maxHttpStreams };
    // The pool lives as long as this service. A server connected again: every session's
    // subscriptions to it resume from their cursors now, not after their own retry backoff
    // (serve.md §6 item 10). Its events list changed — heard on whatever path the notice came,
    // a poll's SSE response included — the wire re-lists, once per burst (list-refresh.ts); a
    // server nobody listed yet has no wire and nothing to refresh.
    o.pool.onServerEvent((e) => {
      if (e.kind === "connected") for (const hub of this.hubs.values()) hub.wakeServer(e.server);
      else if (e.kind === "events_list_changed") this.wires.get(e.server)?.listChanged();
    });
  }

  /** Any configured subscription exists (the daemon then starts the owner session at boot). */
  get hasConfigured(): boolean {
    return this.configured().length > 0;
  }

  wire(server: string): ServerEvents {
    let wire = this.wires.get(server);
    if (wire === undefined) {
      wire = new ServerEvents(this.o.pool, server, this.streamBudget, this.o.scheduler);
      this.wires.set(server, wire);
    }
    return wire;
  }

  configured(): SubscriptionSpec[] {
    const specs: SubscriptionSpec[] = [];
    for (const server of this.config.mcp_servers) {
      // The same mapping the config check used (storable-spec.ts): what was checked is what runs.
      for (const e of server.events ?? []) specs.push(configuredSpec(server.name, e));
    }
    return specs;
  }

  eventServers(): string[] {
    return this.config.mcp_servers.filter((s) => s.events !== undefined).map((s) => s.name);
  }

  /**
   * A reload (reload.ts) with `config` in force from now on: the owner's configured subscriptions
   * removed or changed stop first (a webhook one unsubscribes over the connection it still has:
   * events/hub-configured.ts), then the config moves on and `servers` runs (the pool takes the new
   * servers), then whatever is configured and not running starts, changed ones with their new spec.
   * The owner not open: nothing to stop, and its hub starts what is configured when it opens.
   */
  async reconfigure(config: ServeConfig, change: ConfiguredChange, servers: () => Promise<void>): Promise<void> {
    const owner = this.hubs.get(this.owner);
    if (owner !== undefined) await retireConfigured(owner, change);
    this.config = config;
    await servers();
    this.hubs.get(this.owner)?.startConfigured();
  }

  /**
   * Opens a session's events state the way `attach` would, starting nothing: stdio mode refuses a
   * damaged `mcp-events.json` or `mcp-events.log` (an EventsStoreError) before any MCP server
   * starts, then hands the store to `attach`. A torn log tail is repaired here as on any open.
   * `ledger` (with evidence configured): the session's event ledger `events.ndjson` is kept too.
   */
  static openState(dir: string, tuning: ServeTuning, ledger?: LedgerOptions): Promise<EventsStore> {
    return EventsHub.openStore(dir, tuning, ledger);
  }

  /**
   * Builds the hub of a freshly opened session (restores its pending events and runtime
   * subscriptions). `onFault`: the session's containment boundary, for what escapes the hub's own
   * async roots (its coalescer's timer, its subscriptions' loops, a server-connected wake).
   * `ledger`: as for `openState` (unused when `opened` is given: that store was opened with it).
   */
  async attach(session: EventsSession, dir: string, opened?: EventsStore, onFault?: FaultReport, ledger?: LedgerOptions): Promise<EventsHub> {
    const hub = await EventsHub.open(session, dir, this, session.name === this.owner, this.now, opened, onFault, ledger);
    this.hubs.set(session.name, hub);
    return hub;
  }

  /**
   * The event ledger of an attached session (null without evidence, or when it is not attached):
   * a CheckpointSource whose head is what is written and synced, and its pending seqs. It stays
   * readable after `detach` (the final commit's head), for a stop statement.
   */
  ledgerOf(name: string): EventLedger | null {
    return this.hubs.get(name)?.ledger ?? null;
  }

  /** Stops a session's subscriptions before the session closes. */
  async beforeClose(name: string): Promise<void> {
    await this.hubs.get(name)?.stopSubscriptions();
  }

  /** After the session closed: writes what is left of its events state. */
  async detach(name: string): Promise<void> {
    const hub = this.hubs.get(name);
    if (hub === undefined) return;
    this.hubs.delete(name);
    await hub.close();
  }

  /**
   * A session that failed must come back (issue 12 item F): the owner of the configured
   * subscriptions, or one with live subscriptions or pending events (even with --mcp-events-reapable:
   * a failure is not idleness).
   */
  restartsAfterFailure(name: string): boolean {
    if (name === this.owner && this.hasConfigured) return true;
    return this.hubs.get(name)?.keepsAlive() ?? false;
  }

  /** The reaper must not close this session. */
  keepsAlive(name: string): boolean {
    if (this.o.reapable) return false;
    return this.hubs.get(name)?.keepsAlive() ?? false;
  }


  /** Sessions a daemon opens at boot: the owner (when events are configured), then runtime restores. */
  async bootSessions(): Promise<string[]> {
    const names: string[] = [];
    if (this.hasConfigured) names.push(this.owner);
    const ranked: { name: string; last: number }[] = [];
    let entries: string[] = [];
    try {
      entries = await readdir(join(this.o.stateDir, "sessions"));
    } catch {
      return names;
    }
    for (const name of entries.slice(0, 100_000)) {
      if (!isValidSessionName(name) || name === this.owner) continue;
      try {
        const snapshot = await EventsStore.readSnapshot(join(this.o.stateDir, "sessions", name));
        if (snapshot === undefined || snapshot.last_client_ms === null) continue;
        if (!Object.values(snapshot.subscriptions).some((r) => r.runtime !== undefined)) continue;
        if (this.now() - snapshot.last_client_ms > this.tuning.runtimeTtlMs) continue;
        ranked.push({ name, last: snapshot.last_client_ms });
      } catch (e) {
        logLine(`serve: events: session ${JSON.stringify(name)}: its events state cannot be read: ${errorMessage(e)}`, { level: "warn", session: name, code: "events_state_unreadable" });
      }
    }
    ranked.sort((a, b) => b.last - a.last);
    for (const r of ranked.slice(0, this.tuning.maxRestoredSessions)) names.push(r.name);
    return names;
  }
}
