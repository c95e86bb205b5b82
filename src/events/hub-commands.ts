/**
 * The answers to `mcp_events_list`, `mcp_events_subscribe` and `mcp_events_unsubscribe`
 * (serve.md §6 item 7). They run beside the session's run, so they are answered mid-run.
 *
 * - subscribe is an idempotent upsert: the same spec answers the live status; a changed spec
 *   replaces the old subscription (same cursor and dedup window) once the new one is up, and the
 *   old one is put back if the new one fails. The command waits (≤ 20 s) for the first success;
 *   a failure before it answers the error and keeps nothing.
 * - unsubscribe stops the loops and forgets the position (cursor, dedup window, runtime spec);
 *   for a configured subscription it also stops the retries until the next start.
 */
import { errorMessage } from "../shared/errors.ts";
import {
  type AvailableEvents,
  type McpEventsListData,
  type ResponseFrame,
  type UnestablishedSubscription,
  errorResponse,
  okResponse,
} from "../serve/protocol/frames.ts";
import type { EventsCommand } from "../serve/session/types.ts";
import { type EventsHub, type HubServices, sameSpec } from "./hub.ts";
import { subscriptionKey } from "./rules/key.ts";
import type { SubscriptionSpec } from "./types.ts";

/** The design sketch the wire follows (the client reports it in `mcp_events_list`). */
export const SPEC_COMMIT = "6682596d65eec778fe0b8b1f43b4e89d2fe2c546";
export const READY_TIMEOUT_MS = 20_000;

export interface HubCommandContext {
  hub: EventsHub;
  services: HubServices;
  now: () => number;
}

export async function answerEventsCommand(ctx: HubCommandContext, command: EventsCommand): Promise<ResponseFrame> {
  try {
    switch (command.type) {
      case "mcp_events_list":
        return okResponse(command.id, command.type, await list(ctx, command.server));
      case "mcp_events_subscribe":
        return await subscribe(ctx, command);
      case "mcp_events_unsubscribe":
        return await unsubscribe(ctx, command);
    }
  } catch (e) {
    return errorResponse(command.id, command.type, "internal", errorMessage(e));
  }
}

async function list(ctx: HubCommandContext, server: string | undefined): Promise<McpEventsListData> {
  const { hub } = ctx;
  const subscriptions = [];
  const unestablished: UnestablishedSubscription[] = [];
  for (const sub of hub.subs.values()) {
    if (server !== undefined && sub.spec.server !== server) continue;
    if (sub.state === "active" && !sub.refused) subscriptions.push(sub.status());
    else if (sub.state === "starting" || sub.state === "retrying") {
      unestablished.push({
        server: sub.spec.server,
        name: sub.spec.name,
        arguments: sub.spec.arguments,
        state: sub.refused ? "refused" : sub.state,
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
    webhook: ctx.services.canWebhook,
    owns_configured: hub.ownsConfigured,
    subscriptions,
    unestablished,
    available,
    pending: hub.pendingCount(),
  };
}

async function subscribe(ctx: HubCommandContext, command: Extract<EventsCommand, { type: "mcp_events_subscribe" }>): Promise<ResponseFrame> {
  const { hub } = ctx;
  const spec: SubscriptionSpec = {
    server: command.server,
    name: command.name,
    arguments: command.arguments ?? {},
    action: command.action ?? "follow_up",
    ...(command.delivery !== undefined ? { delivery: command.delivery } : {}),
    ...(command.instructions !== undefined ? { instructions: command.instructions } : {}),
    ...(command.max_age_ms !== undefined ? { max_age_ms: command.max_age_ms } : {}),
  };
  const key = subscriptionKey(spec.server, spec.name, spec.arguments);
  const existing = hub.subs.get(key);
  if (existing !== undefined && existing.origin === "configured") {
    if (sameSpec(existing.spec, spec)) return okResponse(command.id, command.type, existing.status());
    return errorResponse(command.id, command.type, "refused", "a configured subscription has this server, name and arguments; change it in the config");
  }
  if (existing !== undefined && sameSpec(existing.spec, spec) && existing.live) {
    return okResponse(command.id, command.type, existing.status());
  }
  // A changed spec: the old loops stop first (they share the cursor and dedup window through the
  // store), and come back if the new spec fails.
  if (existing !== undefined) {
    await existing.stop();
    hub.store.setSubscription(key, hub.record(existing));
  }
  const sub = hub.startSubscription(spec, "runtime");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failure = await Promise.race([
    sub.ready,
    new Promise<Error>((done) => (timer = setTimeout(() => done(new Error(`the subscription did not come up within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  if (failure !== null) {
    await sub.stop();
    hub.retired(sub);
    if (existing !== undefined) hub.startSubscription(existing.spec, "runtime", true);
    else if (existing === undefined) hub.store.forgetSubscription(key);
    return errorResponse(command.id, command.type, "refused", failure.message);
  }
  hub.store.setSubscription(key, hub.record(sub));
  hub.store.setLastClientMs(ctx.now());
  await hub.store.commit();
  return okResponse(command.id, command.type, sub.status());
}

async function unsubscribe(ctx: HubCommandContext, command: Extract<EventsCommand, { type: "mcp_events_unsubscribe" }>): Promise<ResponseFrame> {
  const { hub } = ctx;
  const key = subscriptionKey(command.server, command.name, command.arguments ?? {});
  const sub = hub.subs.get(key);
  const persisted = hub.store.subscription(key) !== undefined;
  if (sub !== undefined) {
    await sub.stop();
    hub.retired(sub);
    if (sub.origin === "configured") hub.noteUnsubscribedConfigured(key);
  }
  if (persisted) {
    hub.store.forgetSubscription(key);
    await hub.store.commit();
  }
  return okResponse(command.id, command.type, { removed: sub !== undefined || persisted });
}
