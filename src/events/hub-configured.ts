/**
 * What a reload (SIGHUP in serve's daemon mode) does to the configured subscriptions of the hub that
 * owns them, first step: a subscription removed from the config stops (a webhook one unsubscribes
 * from its server on the way out, as at any graceful stop) and its record goes — cursor, dedup
 * window, webhook token (410 from now on) — as after an explicit unsubscribe; a changed one stops
 * and keeps where it stood, so that its successor, started with the new spec, goes on from its
 * cursor; one added back after an explicit unsubscribe may start again. The hub's
 * `startConfigured` then starts whatever is configured and not running (after the pool took the
 * new servers), changed ones included.
 *
 * Runtime subscriptions are left alone, one with the same key as a removed configured one included.
 */
import { within } from "../shared/time.ts";
import type { EventsHub } from "./hub.ts";
import type { Subscription } from "./subscription/subscription.ts";

/** As long as a hub waits for its subscriptions to stop (theirs: unsubscribes are bounded too). */
const STOP_BOUND_MS = 5000;

/** Subscription keys (rules/key.ts) added to, changed in and removed from the config. */
export interface ConfiguredChange {
  added: readonly string[];
  changed: readonly string[];
  removed: readonly string[];
}

type OwnerHub = Pick<EventsHub, "ownsConfigured" | "unsubscribedConfigured" | "registry" | "retired" | "forget" | "persist" | "commit">;

/** The first step of a reload on the hub that owns the configured subscriptions (see above); bounded. */
export async function retireConfigured(hub: OwnerHub, change: ConfiguredChange): Promise<void> {
  if (!hub.ownsConfigured) return;
  for (const key of change.added) hub.unsubscribedConfigured.delete(key);
  const registry = hub.registry();
  const removed = new Set(change.removed);
  const ending: Subscription[] = [];
  for (const key of [...change.removed, ...change.changed]) {
    const sub = registry.find(key);
    if (sub?.origin === "configured") ending.push(sub);
  }
  if (ending.length === 0) return;
  await within(Promise.allSettled(ending.map((sub) => sub.stop())), STOP_BOUND_MS);
  for (const sub of ending) {
    hub.retired(sub);
    if (removed.has(sub.key)) hub.forget(sub);
    else hub.persist(sub);
  }
  await hub.commit();
}
