/**
 * The answers to `mcp_events_list`, `mcp_events_subscribe` and `mcp_events_unsubscribe`
 * (serve.md §6 item 7). They run beside the session's run, so they are answered mid-run.
 *
 * - subscribe first checks that the subscription could be stored at all (key length, spec bounds,
 *   bounded arguments); a request that fails is answered `invalid_params` before anything is
 *   started or registered.
 * - subscribe is an idempotent upsert: the same spec answers the live status; a changed spec
 *   replaces the old subscription (same cursor and dedup window) once the new one is up, and the
 *   old one is put back if the new one fails. The command waits (≤ 20 s) for the first success;
 *   a failure before it answers the error and keeps nothing.
 * - unsubscribe stops the loops and forgets the position (cursor, dedup window, runtime spec);
 *   for a configured subscription it also stops the retries until the next start.
 *
 * The hub hands these commands a `SubscriptionRegistry` (defined here, so the hub depends on this
 * file and not the other way round): what they may do to its subscriptions and stored positions.
 */
import { canonicalJson } from "../shared/canonical-json.ts";
import { errorMessage } from "../shared/errors.ts";
import {
  type EventsCommand,
  type EventsResponse,
  type EventsSubscribeCommand,
  type EventsUnsubscribeCommand,
  eventsError,
  eventsOk,
} from "./commands.ts";
import type { AvailableEvents, McpEventsListData, SubscriptionStatus, UnestablishedSubscription } from "./frames.ts";
import type { EventsServices } from "./ports.ts";
import { subscriptionKey } from "./rules/key.ts";
import { checkSubscriptionSpec } from "./storable-spec.ts";
import type { Subscription } from "./subscription/subscription.ts";
import type { SubscriptionSpec } from "./types.ts";

/** The design sketch the wire follows (the client reports it in `mcp_events_list`). */
export const SPEC_COMMIT = "6682596d65eec778fe0b8b1f43b4e89d2fe2c546";
export const READY_TIMEOUT_MS = 20_000;

/**
 * What the commands may do to a hub's subscriptions. The commands decide (idempotency, configured
 * keys, what to answer); the hub keeps its subscriptions and their stored positions consistent.
 */
export interface SubscriptionRegistry {
  /** This session starts the configured subscriptions. */
  readonly ownsConfigured: boolean;
  /** Events queued and not yet delivered to the model. */
  pendingCount(): number;
  /** The subscriptions held now, in the order they started. */
  list(): Iterable<Subscription>;
  find(key: string): Subscription | undefined;
  /**
   * Starts `spec` as a runtime subscription from the position stored under its key, in place of
   * the one held there (stopped first, its position kept), and waits at most `readyMs` for it to
   * come up. Up: its position and the client's time are made durable, and it is returned. Not up:
   * it is stopped, the one it replaced comes back (else the key's position is forgotten), and the
   * failure is returned.
   */
  upsert(spec: SubscriptionSpec, readyMs: number): Promise<Subscription | Error>;
  /**
   * Stops and takes out the subscription under `key` (a configured one is not started again until
   * the session reopens) and durably forgets its stored position. True when there was either.
   */
  remove(key: string): Promise<boolean>;
}

export interface HubCommandContext {
  registry: SubscriptionRegistry;
  services: EventsServices;
}

export async function answerEventsCommand(ctx: HubCommandContext, command: EventsCommand): Promise<EventsResponse> {
  try {
    switch (command.type) {
      case "mcp_events_list":
        return eventsOk(command, await list(ctx, command.server));
      case "mcp_events_subscribe":
        return await subscribe(ctx, command);
      case "mcp_events_unsubscribe":
        return await unsubscribe(ctx, command);
    }
  } catch (e) {
    return eventsError(command, "internal", errorMessage(e));
  }
}

/** Two specs ask for the same thing (delivery, action, instructions, max age). */
export function sameSpec(a: SubscriptionSpec, b: SubscriptionSpec): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

async function list(ctx: HubCommandContext, server: string | undefined): Promise<McpEventsListData> {
  const { registry } = ctx;
  const subscriptions: SubscriptionStatus[] = [];
  const unestablished: UnestablishedSubscription[] = [];
  for (const sub of registry.list()) {
    if (server !== undefined && sub.spec.server !== server) continue;
    const { kind } = sub.phase;
    if (kind === "up") subscriptions.push(sub.status());
    else if (kind === "starting" || kind === "retrying" || kind === "refused") {
      unestablished.push({
        server: sub.spec.server,
        name: sub.spec.name,
        arguments: sub.spec.arguments,
        state: kind,
        last_error: sub.lastError,
      });
    }
  }
  const names = server !== undefined ? [server] : ctx.services.eventServers();
  const available: AvailableEvents[] = await Promise.all(
    names.map(async (name): Promise<AvailableEvents> => {
      try {
        return { server: name, supported: true, events: await ctx.services.wire(name).list() };
      } catch (e) {
        return { server: name, supported: false, error: errorMessage(e) };
      }
    }),
  );
  return {
    spec_commit: SPEC_COMMIT,
    webhook: ctx.services.webhook.available,
    owns_configured: registry.ownsConfigured,
    subscriptions,
    unestablished,
    available,
    pending: registry.pendingCount(),
  };
}

async function subscribe(ctx: HubCommandContext, command: EventsSubscribeCommand): Promise<EventsResponse> {
  const { registry } = ctx;
  const spec: SubscriptionSpec = {
    server: command.server,
    name: command.name,
    arguments: command.arguments ?? {},
    action: command.action ?? "follow_up",
    ...(command.delivery !== undefined ? { delivery: command.delivery } : {}),
    ...(command.instructions !== undefined ? { instructions: command.instructions } : {}),
    ...(command.max_age_ms !== undefined ? { max_age_ms: command.max_age_ms } : {}),
  };
  // The same check as a configured subscription's at config load (storable-spec.ts).
  const check = checkSubscriptionSpec(spec);
  if (!check.ok) return eventsError(command, "invalid_params", check.problem);
  const key = check.key;
  const existing = registry.find(key);
  if (existing !== undefined && existing.origin === "configured") {
    if (sameSpec(existing.spec, spec)) return eventsOk(command, existing.status());
    return eventsError(command, "refused", "a configured subscription has this server, name and arguments; change it in the config");
  }
  if (existing !== undefined && sameSpec(existing.spec, spec) && existing.live) {
    return eventsOk(command, existing.status());
  }
  // A changed spec replaces the old one, which comes back if the new one fails.
  const sub = await registry.upsert(spec, READY_TIMEOUT_MS);
  if (sub instanceof Error) return eventsError(command, "refused", sub.message);
  return eventsOk(command, sub.status());
}

async function unsubscribe(ctx: HubCommandContext, command: EventsUnsubscribeCommand): Promise<EventsResponse> {
  const removed = await ctx.registry.remove(subscriptionKey(command.server, command.name, command.arguments ?? {}));
  return eventsOk(command, { removed });
}
