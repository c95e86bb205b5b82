/**
 * The webhook receiver on the daemon's listener (serve.md §6 item 4; events design notes §4.1–§4.3;
 * wire notes §12–§16), present only when `--mcp-events-callback-url` is set:
 *
 *   POST <callback path>/_vigil/mcp-events/<token>    one delivery
 *   GET|HEAD /.well-known/mcp-webhook-receiver.json   the receiver document (wire notes §15)
 *
 * `<callback path>` is the callback URL's path without its trailing slash, so a callback of
 * `https://edge.example.com/agent` is served under `/agent/_vigil/mcp-events/` (the front door
 * forwards the path unchanged). Checks before any body byte is read, in this order: method (405),
 * token (410 gone; 503 reserved or restoring), Content-Length (411 missing — a chunked body has
 * none —, 413 over 1 MiB or not a decimal). A body that may not be read is never drained: the
 * sender announced it, we answer before it is sent. Then the body, under one deadline
 * (VIGIL_EVENTS_BODY_TIMEOUT_MS: 408 and the connection closed, nothing kept); then the signature
 * rules (events/webhook/signature.ts: 400/401), the subscription id once known (401), the JSON (400),
 * the route's stage (a pending route answers only its verification: events get 503), and the
 * route's own answer. A refusal says no more than a stable code; it is counted and logged at most
 * once a minute per kind, never with a secret, a header value or a body.
 */
import type { Server } from "bun";
import { logLine } from "../../shared/log.ts";
import { EVENTS } from "../../shared/metrics/catalog.ts";
import { readAnnounced, readWithin } from "../../shared/read-within.ts";
import { decodeWebhookBody } from "../../events/webhook/body.ts";
import { verifyDelivery } from "../../events/webhook/signature.ts";
import {
  WEBHOOK_LIMITS,
  WEBHOOK_PATH_SEGMENT,
  type ServerKeys,
  type WebhookAnswer,
  type WebhookRefusal,
  type WebhookRoute,
  type WebhookRoutes,
} from "../../events/webhook/types.ts";
import { RefusalLog } from "./webhook-refusal-log.ts";

export const RECEIVER_DOCUMENT_PATH = "/.well-known/mcp-webhook-receiver.json";
const TOKEN = /^[0-9a-f]{32}$/;
/** A 503 asks the server to come back in this many seconds (the restart window, a pending route, a full queue). */
const RETRY_AFTER_SECONDS = "5";
/** The idle timer of a webhook request is set to its own bounds plus this margin (seconds). */
const IDLE_MARGIN_SECONDS = 5;
/** Bun's per-request idle timeout cannot exceed this; past it our own deadlines are the bound. */
const BUN_MAX_IDLE_SECONDS = 255;

export interface WebhookReceiverOptions {
  routes: WebhookRoutes;
  keys: ServerKeys;
  /** `--mcp-events-callback-url`. */
  callbackUrl: URL;
  /** The deadline of a whole body (VIGIL_EVENTS_BODY_TIMEOUT_MS). */
  bodyTimeoutMs: number;
  /** How long a route may take to answer (VIGIL_EVENTS_ACK_TIMEOUT_MS), so the listener's idle timer does not cut it off. */
  answerTimeoutMs?: number;
  /** Milliseconds (timestamps are judged in seconds of it). */
  now?: () => number;
  log?: (line: string) => void;
}

export interface WebhookReceiver {
  /** The answer for a receiver path; null for any other path (the caller goes on). */
  handle(req: Request, url: URL, server: Server<undefined>): Promise<Response> | null;
}

/** `/agent/_vigil/mcp-events/` for a callback of `https://edge.example.com/agent/`. */
export function receiverPrefix(callbackUrl: URL): string {
  return `${callbackUrl.pathname.replace(/\/+$/, "")}${WEBHOOK_PATH_SEGMENT}`;
}

/** The announced body length, or why it cannot be read (the listener checks of design notes §4.2). */
export function announcedLength(header: string | null): number | "no_length" | "too_large" {
  if (header === null) return "no_length";
  if (!/^[0-9]{1,16}$/.test(header)) return "too_large";
  const n = Number(header);
  return n > WEBHOOK_LIMITS.bodyBytes ? "too_large" : n;
}

const REFUSALS: Record<WebhookRefusal, { status: number; code: string }> = {
  method: { status: 405, code: "method_not_allowed" },
  unknown_token: { status: 410, code: "gone" },
  held: { status: 503, code: "retry" },
  no_length: { status: 411, code: "length_required" },
  too_large: { status: 413, code: "too_large" },
  body_timeout: { status: 408, code: "timeout" },
  headers: { status: 400, code: "bad_request" },
  timestamp: { status: 400, code: "bad_request" },
  signature: { status: 401, code: "unauthorized" },
  identity: { status: 401, code: "unauthorized" },
  subscription_id: { status: 401, code: "unauthorized" },
  not_json: { status: 400, code: "bad_request" },
  not_routable: { status: 503, code: "retry" },
  not_stored: { status: 503, code: "retry" },
};

export function createWebhookReceiver(o: WebhookReceiverOptions): WebhookReceiver {
  const now = o.now ?? Date.now;
  const prefix = receiverPrefix(o.callbackUrl);
  const document = JSON.stringify({ receivers: [prefix] });
  const refusals = new RefusalLog(now, o.log ?? logLine);
  const idleSeconds = Math.ceil((o.bodyTimeoutMs + (o.answerTimeoutMs ?? 0)) / 1000) + IDLE_MARGIN_SECONDS;

  function refuse(why: WebhookRefusal, status = REFUSALS[why].status): Response {
    o.routes.refused(why);
    refusals.note(why);
    const headers: Record<string, string> = { "cache-control": "no-store" };
    if (status === 405) headers.allow = "POST";
    if (status === 503) headers["retry-after"] = RETRY_AFTER_SECONDS;
    // The rest of a stalled body is never read: the connection ends with the answer, not at its idle timer.
    if (why === "body_timeout") headers.connection = "close";
    return Response.json({ error: { code: REFUSALS[why].code } }, { status, headers });
  }

  function receiverDocument(req: Request): Response {
    if (req.method !== "GET" && req.method !== "HEAD") {
      return Response.json({ error: { code: "method_not_allowed" } }, { status: 405, headers: { allow: "GET, HEAD" } });
    }
    return new Response(req.method === "HEAD" ? null : document, {
      headers: { "content-type": "application/json", "cache-control": "max-age=300" },
    });
  }

  async function delivery(req: Request, token: string, server: Server<undefined>, receivedMs: number): Promise<Response> {
    if (req.method !== "POST") return refuse("method");
    const found = lookup(token);
    if (found instanceof Response) return found;
    const length = announcedLength(req.headers.get("content-length"));
    if (typeof length !== "number") return refuse(length);
    // The listener's idle timer (30 s) must not end a slow body or a slow store before our own
    // deadlines answer it; past Bun's maximum our deadlines alone bound the request.
    server.timeout(req, idleSeconds <= BUN_MAX_IDLE_SECONDS ? idleSeconds : 0);
    // Content-Length framing bounds the body to what was announced (≤ 1 MiB, checked above): the
    // runtime reads it whole in one step. Both framings at once is not trusted: read as it grows.
    const body = req.headers.has("transfer-encoding")
      ? await readWithin(req.body, { maxBytes: length, deadlineMs: o.bodyTimeoutMs })
      : await readAnnounced(req, { deadlineMs: o.bodyTimeoutMs });
    if (body.kind === "timeout") return refuse("body_timeout");
    // More bytes than announced, or a body that ended short (the sender went away): a malformed request.
    if (body.kind === "too_large") return refuse("too_large", 400);
    if (body.kind === "failed" || body.bytes.byteLength !== length) return refuse("headers");
    // The route may have changed while the body arrived (unsubscribed, replaced): judge the current one.
    const current = lookup(token);
    if (current instanceof Response) return current;
    return verified(req, current, body.bytes, receivedMs);
  }

  function lookup(token: string): WebhookRoute | Response {
    const found = TOKEN.test(token) ? o.routes.lookup(token) : ({ kind: "gone" } as const);
    if (found.kind === "gone") return refuse("unknown_token");
    if (found.kind === "held") return refuse("held");
    return found.route;
  }

  async function verified(req: Request, route: WebhookRoute, bytes: Uint8Array, receivedMs: number): Promise<Response> {
    const h = req.headers;
    const check = verifyDelivery({
      id: h.get("webhook-id"),
      timestamp: h.get("webhook-timestamp"),
      signature: h.get("webhook-signature"),
      body: bytes,
      secrets: route.secrets(),
      keys: route.origin === null ? [] : o.keys.keys(route.origin),
      nowSeconds: Math.floor(now() / 1000),
    });
    if (!check.ok) return refuse(check.why, check.status);
    // Not before the id is known: the verification challenge arrives inside events/subscribe.
    if (route.subscriptionId !== null && h.get("x-mcp-subscription-id") !== route.subscriptionId) return refuse("subscription_id");
    const decoded = decodeWebhookBody(bytes);
    if (decoded === null) return refuse("not_json");
    // A pending route (subscribe answer not stored yet) is routable for its verification only.
    if (route.stage === "pending" && decoded.kind !== "verification") return refuse("not_routable");
    const answer = await answerOf(route, decoded, receivedMs);
    if (answer.status >= 200 && answer.status < 300) {
      o.routes.succeeded(decoded.kind === "verification" ? "verifications" : answer.duplicate === true ? "duplicates" : "accepted");
    } else {
      o.routes.refused("not_stored");
      refusals.note("not_stored");
    }
    const headers: Record<string, string> = { "cache-control": "no-store" };
    if (answer.status === 503) headers["retry-after"] = RETRY_AFTER_SECONDS;
    return Response.json(answer.body ?? {}, { status: answer.status, headers });
  }

  return {
    handle(req, url, server) {
      if (url.pathname === RECEIVER_DOCUMENT_PATH) return Promise.resolve(receiverDocument(req));
      if (!url.pathname.startsWith(prefix)) return null;
      // Every answered delivery request is counted by its status (vigil_webhook_deliveries_total).
      return delivery(req, url.pathname.slice(prefix.length), server, performance.now()).then(countDelivery, countFailure);
    },
  };
}

/** The route's answer; the contract says it never rejects, and if it did the server must retry. */
async function answerOf(route: WebhookRoute, body: Parameters<WebhookRoute["deliver"]>[0], receivedMs: number): Promise<WebhookAnswer> {
  try {
    return await route.deliver(body, receivedMs);
  } catch {
    return { status: 503 };
  }
}

/** Counts an answered delivery by its status (a handful of codes: the label stays bounded). */
function countDelivery(res: Response): Response {
  EVENTS.webhookDeliveries.at(String(res.status)).inc();
  return res;
}

/** A delivery that threw is answered 500 by the listener's error handler (run.ts): counted as such. */
function countFailure(e: unknown): never {
  EVENTS.webhookDeliveries.at("500").inc();
  throw e;
}
