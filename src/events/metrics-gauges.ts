/**
 * The MCP Events gauges read at scrape time (issue 15 item 1; names in shared/metrics/catalog.ts
 * `EVENTS_COLLECTED`): pending events and pending bytes by session, subscriptions by server, mode
 * and state. Nothing is mirrored on the hot path: each open hub is in one process-wide set, and
 * one collector per family reads them all when scraped. A hub leaves the set as it closes, so a
 * closed session's series are gone from the next scrape (a daemon opens and closes thousands of
 * sessions over months: nothing of them stays behind).
 */
import { EVENTS_COLLECTED, METRICS } from "../shared/metrics/catalog.ts";
import type { CollectedSample } from "../shared/metrics/registry.ts";
import { NO_MODE } from "./metrics.ts";

/** What a subscription shows the gauges (subscription.ts `Subscription`). */
export interface MeteredSubscription {
  readonly spec: { readonly server: string };
  readonly mode: string | null;
  readonly phase: { readonly kind: string };
}

/** What an open hub shows the gauges. */
export interface MeteredHub {
  readonly session: string;
  readonly store: { readonly pendingCount: number; readonly pendingBytes: number };
  subscriptions(): Iterable<MeteredSubscription>;
}

const live = new Set<MeteredHub>();
let registered = false;

/** Adds an open hub to the gauges; the function returned removes it (idempotent). */
export function meterHub(hub: MeteredHub): () => void {
  registerCollectors();
  live.add(hub);
  return () => {
    live.delete(hub);
  };
}

/** Hubs in the gauges now (for tests: nothing must stay behind a closed session). */
export function meteredHubs(): number {
  return live.size;
}

/** The state label: the mcp_events_list state (`up` is `active`), `refused` kept apart from `retrying`. */
export function stateLabel(phase: { kind: string }): string {
  return phase.kind === "up" ? "active" : phase.kind;
}

/** Pending events or bytes by session (two hubs of one name while one closes: summed, one series). */
export function pendingSamples(hubs: Iterable<MeteredHub>, what: "pendingCount" | "pendingBytes"): CollectedSample[] {
  const bySession = new Map<string, number>();
  for (const h of hubs) bySession.set(h.session, (bySession.get(h.session) ?? 0) + h.store[what]);
  return Array.from(bySession, ([session, value]) => ({ labels: { session }, value }));
}

/** Subscriptions counted by (server, mode, state), over every hub. */
export function subscriptionSamples(hubs: Iterable<MeteredHub>): CollectedSample[] {
  const counts = new Map<string, { labels: { server: string; mode: string; state: string }; value: number }>();
  for (const h of hubs) {
    for (const s of h.subscriptions()) {
      const labels = { server: s.spec.server, mode: s.mode ?? NO_MODE, state: stateLabel(s.phase) };
      const key = `${labels.server}\u0000${labels.mode}\u0000${labels.state}`;
      const found = counts.get(key);
      if (found !== undefined) found.value++;
      else counts.set(key, { labels, value: 1 });
    }
  }
  return [...counts.values()];
}

/** Once per process, as the first hub opens (none while metrics are off): one collector per name reads the whole set. */
function registerCollectors(): void {
  if (registered || !METRICS.enabled) return;
  registered = true;
  METRICS.collect({ kind: "gauge", name: EVENTS_COLLECTED.pending, help: "Events waiting in a session's durable queue", read: () => pendingSamples(live, "pendingCount") });
  METRICS.collect({ kind: "gauge", name: EVENTS_COLLECTED.pendingBytes, help: "Bytes of the events waiting in a session's durable queue", read: () => pendingSamples(live, "pendingBytes") });
  METRICS.collect({ kind: "gauge", name: EVENTS_COLLECTED.subscriptions, help: "MCP Events subscriptions, by server, delivery mode and state", read: () => subscriptionSamples(live) });
}
