/**
 * The process-wide table of webhook callback routes (serve.md §6 item 4; events design notes
 * §4.1, §4.5): token → the route of one subscription, plus the two mechanisms that keep a server's
 * retries across a restart from being told to stop (503 rather than 410):
 *
 * - a reservation: a persisted token whose subscription is coming back holds until its route
 *   registers or the restore window (600 s since this table was made, i.e. since the process
 *   started) has passed, whichever is first;
 * - the restoring flag: between `beginRestoring` and `endRestoring` (the daemon waking its boot
 *   sessions, each of which reserves its tokens while it opens) every unknown token is held, again
 *   never past the restore window.
 *
 * Afterwards an unknown token is gone (410) at once. The table is bounded (routes and reservations
 * together), so a runaway caller cannot grow it without limit; past the bound it refuses with a
 * typed error. Time comes from an injected clock (unit tests use a fake one).
 */
import { WEBHOOK_LIMITS, type TokenLookup, type WebhookRefusal, type WebhookRoute, type WebhookRoutes } from "./types.ts";

/** Routes and reservations together never exceed this (1,000 subscriptions is the benchmarked scale). */
export const MAX_WEBHOOK_ROUTES = 100_000;

/** What the receiver counts besides refusals. */
export type WebhookSuccess = "accepted" | "duplicates" | "verifications";

type Counters = Record<WebhookRefusal | WebhookSuccess, number>;

const COUNTER_NAMES: readonly (keyof Counters)[] = [
  "method",
  "unknown_token",
  "held",
  "no_length",
  "too_large",
  "body_timeout",
  "headers",
  "timestamp",
  "signature",
  "identity",
  "subscription_id",
  "not_json",
  "not_routable",
  "not_stored",
  "accepted",
  "duplicates",
  "verifications",
];

/** The table is at its bound: a new route or reservation is refused (existing ones are untouched). */
export class WebhookRoutesFull extends Error {
  readonly code = "webhook_routes_full";
  constructor(readonly max: number) {
    super(`the webhook route table is full (${max} routes and reservations): no new webhook subscription can be routed`);
    this.name = "WebhookRoutesFull";
  }
}

export interface WebhookRouteTableOptions {
  /** Milliseconds; the default is Date.now. */
  now?: () => number;
  /** How long after construction reservations and the restoring flag may hold (default 600 s). */
  restoreWindowMs?: number;
  /** Routes plus reservations at most (default MAX_WEBHOOK_ROUTES). */
  maxEntries?: number;
}

export class WebhookRouteTable implements WebhookRoutes {
  private readonly routes = new Map<string, WebhookRoute>();
  private readonly reservations = new Set<string>();
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly restoreWindowMs: number;
  private readonly maxEntries: number;
  private restoring = false;
  private readonly counts: Counters;

  constructor(o: WebhookRouteTableOptions = {}) {
    this.now = o.now ?? Date.now;
    this.startedAt = this.now();
    this.restoreWindowMs = o.restoreWindowMs ?? WEBHOOK_LIMITS.restoreWindowMs;
    this.maxEntries = o.maxEntries ?? MAX_WEBHOOK_ROUTES;
    this.counts = Object.fromEntries(COUNTER_NAMES.map((n) => [n, 0])) as Counters;
  }

  register(route: WebhookRoute): void {
    const known = this.routes.has(route.token) || this.reservations.has(route.token);
    if (!known) this.ensureRoom();
    this.reservations.delete(route.token);
    this.routes.set(route.token, route);
  }

  unregister(route: WebhookRoute): void {
    // Only the route object registered now: a replacement that took over the token stays.
    if (this.routes.get(route.token) === route) this.routes.delete(route.token);
  }

  reserve(token: string): void {
    if (this.routes.has(token) || this.reservations.has(token)) return;
    this.ensureRoom();
    this.reservations.add(token);
  }

  release(token: string): void {
    this.reservations.delete(token);
  }

  /** The daemon starts waking the sessions it restores: unknown tokens are held (503) meanwhile. */
  beginRestoring(): void {
    this.restoring = true;
  }

  /** Every boot session has opened (and reserved its tokens): unknown tokens are gone (410) again. */
  endRestoring(): void {
    this.restoring = false;
  }

  lookup(token: string): TokenLookup {
    const route = this.routes.get(token);
    if (route !== undefined) return { kind: "route", route };
    const inWindow = this.now() - this.startedAt < this.restoreWindowMs;
    if (this.reservations.has(token)) {
      if (inWindow) return { kind: "held", reason: "reserved" };
      // The window is over: a subscription that has not come back by now is not held any longer.
      this.reservations.delete(token);
    }
    if (this.restoring && inWindow) return { kind: "held", reason: "restoring" };
    return { kind: "gone" };
  }

  inUse(token: string): boolean {
    return this.routes.has(token) || this.reservations.has(token);
  }

  refused(why: WebhookRefusal): void {
    this.counts[why]++;
  }

  /** Counts a delivery the receiver answered 2xx (surfaced beside the refusals). */
  succeeded(what: WebhookSuccess): void {
    this.counts[what]++;
  }

  get counters(): Readonly<Counters> {
    return { ...this.counts };
  }

  /** Registered routes and live reservations now (`/v1/health`). */
  get size(): { routes: number; reserved: number } {
    return { routes: this.routes.size, reserved: this.reservations.size };
  }

  private ensureRoom(): void {
    if (this.routes.size + this.reservations.size >= this.maxEntries) throw new WebhookRoutesFull(this.maxEntries);
  }
}
