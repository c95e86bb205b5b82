/**
 * What a reload (SIGHUP in daemon mode, reload.ts) changes, decided on data alone: the config in
 * force and its policy's digest against the config just loaded and its policy's digest.
 *
 * Reloadable: the policy (the file `policy` names, re-read every time, so an edited file counts
 * even when the path did not change), `mcp_servers` and the configured subscriptions in their
 * `events`. Everything else (`model`, `system_prompt`, `evidence`) stays as it was started and is
 * named in `notReloaded`: those are wired into every open session's runner and evidence chain, so
 * applying them would mean reopening sessions, which a reload must not do.
 *
 * - A server is `changed` when anything but its `events` differs (transport, URL, headers,
 *   command, args, env, cwd): only then is its connection replaced. A change to its `events`
 *   alone leaves the connection alone and shows up in `subscriptions`.
 * - A subscription is identified as everywhere (server, event name, canonical arguments:
 *   rules/key.ts); it is `changed` when its delivery, action, instructions or max_age_ms differ.
 */
import { configuredSpec } from "../events/storable-spec.ts";
import { subscriptionKey } from "../events/rules/key.ts";
import type { SubscriptionSpec } from "../events/types.ts";
import { canonicalJson } from "../shared/canonical-json.ts";
import type { McpServerConfig, ServeConfig } from "./config/schema.ts";

/** A config with the digest of the policy it names (null: no policy). */
export interface Reloadable {
  config: ServeConfig;
  policyDigest: string | null;
}

/** Added, changed and removed: server names, or subscription keys. */
export interface Changes {
  added: string[];
  changed: string[];
  removed: string[];
}

export interface ReloadPlan {
  policyChanged: boolean;
  servers: Changes;
  subscriptions: Changes;
  /** Top-level config members that differ and are not applied (restart to apply), in config order. */
  notReloaded: string[];
  /** The config in force after the reload: the new policy path and `mcp_servers` over the old rest. */
  config: ServeConfig;
}

/** The members a reload applies; every other top-level member is left as it was started. */
const RELOADED = new Set(["policy", "mcp_servers"]);

export function diffReloadable(old: Reloadable, next: Reloadable): ReloadPlan {
  const notReloaded: string[] = [];
  for (const key of unionKeys(old.config, next.config)) {
    if (RELOADED.has(key)) continue;
    if (canonicalJson(member(old.config, key) ?? null) !== canonicalJson(member(next.config, key) ?? null)) notReloaded.push(key);
  }
  const { policy: _oldPolicy, mcp_servers: _oldServers, ...kept } = old.config;
  const config: ServeConfig = { ...kept, ...(next.config.policy === undefined ? {} : { policy: next.config.policy }), mcp_servers: next.config.mcp_servers };
  return {
    policyChanged: old.policyDigest !== next.policyDigest,
    servers: diffBy(byName(old.config.mcp_servers), byName(next.config.mcp_servers), connectionOf),
    subscriptions: diffBy(specsByKey(old.config), specsByKey(next.config), (spec) => spec),
    notReloaded,
    config,
  };
}

/** `+1 ~0 -2`: how many were added, changed and removed. */
export function countsText(c: Changes): string {
  return `+${c.added.length} ~${c.changed.length} -${c.removed.length}`;
}

/** The configured subscriptions of a config, by key (the config schema refuses two with one key). */
function specsByKey(config: ServeConfig): Map<string, SubscriptionSpec> {
  const out = new Map<string, SubscriptionSpec>();
  for (const server of config.mcp_servers) {
    for (const entry of server.events ?? []) {
      const spec = configuredSpec(server.name, entry);
      out.set(subscriptionKey(spec.server, spec.name, spec.arguments), spec);
    }
  }
  return out;
}

function diffBy<T>(old: Map<string, T>, next: Map<string, T>, compared: (item: T) => unknown): Changes {
  const changes: Changes = { added: [], changed: [], removed: [] };
  for (const [key, item] of next) {
    const before = old.get(key);
    if (before === undefined) changes.added.push(key);
    else if (canonicalJson(compared(before)) !== canonicalJson(compared(item))) changes.changed.push(key);
  }
  for (const key of old.keys()) if (!next.has(key)) changes.removed.push(key);
  return changes;
}

function byName(servers: readonly McpServerConfig[]): Map<string, McpServerConfig> {
  return new Map(servers.map((s) => [s.name, s]));
}

/** What the connection is made from: the entry without its `events`. */
function connectionOf(server: McpServerConfig): Omit<McpServerConfig, "events"> {
  const { events: _events, ...connection } = server;
  return connection;
}

function unionKeys(a: object, b: object): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])];
}

function member(config: ServeConfig, key: string): unknown {
  return (config as Record<string, unknown>)[key];
}
