/**
 * The contracts of webhook delivery (serve.md §6 item 4; events design notes §4; wire notes
 * §9–§17), shared by the modules that implement it:
 *
 *   secret.ts, signature.ts, body.ts, refresh-schedule.ts   pure rules (no I/O)
 *   server-keys.ts, jwks.ts                                  v1a key policy: keys per origin, fetched, only growing
 *   routes.ts                                                token → route, reservations, the restart window
 *   webhook-loop.ts, route.ts                                subscribe / refresh / rotation / unsubscribe, and one
 *                                                            subscription's answer to a verified delivery
 *   serve/daemon/webhook-receiver.ts                         the HTTP checks on the listener, in order
 *
 * Data only: every module imports these types, none imports another's internals through here.
 */

/** A decoded webhook body (the receiver decides on decoded JSON, after the signature checks). */
export type WebhookBody =
  /** `{"type":"verification","challenge":…}`: echoed as `200 {"challenge":…}`. */
  | { kind: "verification"; challenge: string }
  /** `{"type":"gap","cursor":…}`: a gap, its fresh cursor persisted. */
  | { kind: "gap"; cursor: string | null }
  /** `{"type":"terminated","error":…}`: the server ended the subscription (`error` bounded and scrubbed, null when absent or not an object). */
  | { kind: "terminated"; error: { code: number; message: string; data?: unknown } | null }
  /** A control envelope of another `type`: `200 {}`, ignored. */
  | { kind: "control"; type: string }
  /** No top-level `type`: one event occurrence (checked by the route's owner, rules/occurrence.ts). */
  | { kind: "event"; occurrence: unknown };

/** What the receiver answers a delivery. `body` is sent as JSON (absent: `{}`). */
export interface WebhookAnswer {
  status: number;
  body?: Record<string, unknown>;
  /** A 2xx for an event that was stored already (counted as a duplicate, not as accepted). */
  duplicate?: true;
}

/** `pending`: registered before `events/subscribe` is sent — only a verification is answered, events get 503. */
export type RouteStage = "pending" | "active";

/** One subscription's callback, as the receiver sees it. */
export interface WebhookRoute {
  /** 32 lowercase hex characters (16 CSPRNG bytes): the last path segment of the callback URL. It routes; the HMAC authenticates. */
  readonly token: string;
  /** The `whsec_` secrets that verify a delivery now: the confirmed one and exactly one generation beside it (a pending new one not yet confirmed, else the previous one). */
  secrets(): readonly string[];
  /** The server-derived id once the subscribe answer is stored; from then on `X-MCP-Subscription-Id` must equal it. */
  readonly subscriptionId: string | null;
  /** The MCP server's origin (`https://host:port`) whose published keys bind `v1a`; null for stdio servers (no identity to enforce). */
  readonly origin: string | null;
  readonly stage: RouteStage;
  /** Answers one delivery whose signature and subscription id were checked. Never rejects: a failure is a 503. `receivedMs`: the request's arrival (`performance.now()`). */
  deliver(body: WebhookBody, receivedMs?: number): Promise<WebhookAnswer>;
}

/** What a token names right now. */
export type TokenLookup =
  | { kind: "route"; route: WebhookRoute }
  /** 503: a reserved token (its subscription is coming back after a restart) or the daemon is still restoring. */
  | { kind: "held"; reason: "reserved" | "restoring" }
  /** 410: no such subscription — do not retry. */
  | { kind: "gone" };

/** Why the receiver refused a delivery (counted; never told to the sender beyond its status). */
export type WebhookRefusal =
  | "method"
  | "unknown_token"
  | "held"
  | "no_length"
  | "too_large"
  | "body_timeout"
  | "headers"
  | "timestamp"
  | "signature"
  | "identity"
  | "subscription_id"
  | "not_json"
  | "not_routable"
  | "not_stored";

/**
 * The process-wide table of callback routes (routes.ts implements it). Daemon mode with
 * `--mcp-events-callback-url` has one; every session's hub shares it.
 */
export interface WebhookRoutes {
  /** Registers (or replaces) the route of its token; a reservation of that token ends. */
  register(route: WebhookRoute): void;
  /** Removes the route if it is still the one registered under its token. */
  unregister(route: WebhookRoute): void;
  /**
   * A persisted token whose subscription will be resubscribed (after a restart): it answers 503
   * until its route registers, for at most the restore window since the process started (600 s).
   */
  reserve(token: string): void;
  /** The subscription behind a reserved token is not coming back (forgotten, refused): 410 from now on. */
  release(token: string): void;
  lookup(token: string): TokenLookup;
  /** Daemon boot: every unknown token is held (503) until `endRestoring`, at most the restore window since the process started. */
  beginRestoring(): void;
  endRestoring(): void;
  /** Every token minted or reserved in this process is unique: true when `token` is already in use. */
  inUse(token: string): boolean;
  /** Counts a refusal (surfaced in `/v1/health` and, later, metrics). */
  refused(why: WebhookRefusal): void;
  /** Counts a delivery answered 2xx: the receiver counts `accepted` and `verifications`; `duplicates` whoever knows one. */
  succeeded(what: "accepted" | "duplicates" | "verifications"): void;
  readonly counters: Readonly<Record<WebhookRefusal | "accepted" | "duplicates" | "verifications", number>>;
}

/**
 * The v1a keys known per MCP server origin (server-keys.ts): process-wide, seeded from every
 * session's snapshot, persisted in them, and only ever growing (a later 404, empty document or
 * failed fetch never removes a key).
 */
export interface ServerKeys {
  /** Raw 32-byte Ed25519 public keys known for the origin (empty: its deliveries need no v1a). */
  keys(origin: string): readonly Uint8Array[];
  /** Adds keys (base64url `x` values, as JWKS and the snapshot hold them); returns true when any was new. */
  add(origin: string, xs: readonly string[]): boolean;
  /** Every origin's keys as base64url `x` values (the snapshot's `server_keys`). */
  exported(): Record<string, string[]>;
}

/**
 * A webhook subscription's state as the snapshot keeps it (`SubscriptionRecord.webhook`), so a
 * delivery the server retries across a crash still finds its route and verifies.
 */
export interface WebhookRecord {
  /** The callback's routing token (WebhookRoute.token). */
  token: string;
  /** The last secret the server confirmed (for a subscription never confirmed yet: the one sent first). */
  secret: string;
  /** The confirmed secret before it (exactly one previous generation), or null. */
  previous: string | null;
  /**
   * A new secret a refresh sent that the server has not confirmed yet (absent: none). Stored before
   * the refresh is sent, so after a crash mid-rotation deliveries signed with it still verify and
   * the restarted refresh re-sends it unchanged.
   */
  pending?: string;
  /** The server-derived id from the last stored subscribe answer, or null before one. */
  subscription_id: string | null;
  /** The last grant's `refreshBefore` (ISO 8601), or null (no expiry, or before one). */
  refresh_before: string | null;
}

/** What the webhook loop and the receiver need from the process (serve's events service provides it). */
export type WebhookAbility =
  | {
      readonly available: true;
      readonly routes: WebhookRoutes;
      readonly keys: ServerKeys;
      /** The callback URL of a token: `<--mcp-events-callback-url without trailing slash>/_vigil/mcp-events/<token>`. */
      callbackUrl(token: string): string;
    }
  /** Webhook delivery is off; `missing` names the flag(s) to add, e.g. "--mcp-events-callback-url". */
  | { readonly available: false; readonly missing: string };

/** The path segment the receiver serves under the callback base. */
export const WEBHOOK_PATH_SEGMENT = "/_vigil/mcp-events/";

/** Bounds of the receiver (serve.md §6 item 4). */
export const WEBHOOK_LIMITS = {
  /** A delivery body over this is refused with 413 before it is read. */
  bodyBytes: 1024 * 1024,
  /** Only the first 8 entries of `webhook-signature` are examined. */
  signatureEntries: 8,
  /** A timestamp more than this many seconds off now, in either direction, is refused (400). */
  toleranceSeconds: 300,
  /** After a restart, persisted tokens answer 503 (never 410) for at most this long since start. */
  restoreWindowMs: 600_000,
  /** A JWKS document is read up to this many bytes. */
  jwksBytes: 64 * 1024,
  /** `events/unsubscribe` at shutdown gives up after this long. */
  unsubscribeTimeoutMs: 3000,
} as const;
