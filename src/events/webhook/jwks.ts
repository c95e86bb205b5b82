/**
 * The v1a key fetch (events design notes §4.6; wire notes §12.3): `<origin>/.well-known/mcp-webhook-jwks.json`
 * on the MCP server's own origin — the origin vigil already dials, never one a delivery names.
 *
 * - One deadline covers the response headers and the whole body: a server that sends its headers
 *   and then stalls is cut off at the deadline, the read cancelled and the connection dropped, so
 *   nothing is left waiting behind a refused subscribe (seed: "a stalled JWKS body times out").
 * - A redirect is a failure (`redirect: "manual"`): the keys must come from the origin itself.
 * - Only 404/410 mean "not published" (the server does not sign); any other failure is a failure,
 *   and `ensureServerKeys` decides what a failure costs: nothing once a key is known (keys only
 *   grow, server-keys.ts), a refused subscribe while none is.
 */
import * as v from "valibot";
import { errorMessage } from "../../shared/errors.ts";
import { readWithin } from "../../shared/read-within.ts";
import { parseStrictJson } from "../../shared/strict-json.ts";
import { abortableSleep } from "../subscription/sleep.ts";
import { type ServerKeys, WEBHOOK_LIMITS } from "./types.ts";

export const JWKS_PATH = "/.well-known/mcp-webhook-jwks.json";

/** Attempts while no key is known for the origin, and the sleeps between them (design notes §4.6). */
export const JWKS_ATTEMPTS = 3;
export const JWKS_RETRY_SLEEPS_MS = [500, 1000] as const;

export type JwksResult = { kind: "keys"; xs: string[] } | { kind: "not_published" } | { kind: "failed"; reason: string };

export interface FetchJwksOptions {
  /** The one deadline over headers and body. */
  timeoutMs: number;
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

/** The key set (RFC 7517 §5); entries are judged one by one, so a key of another type is ignored, not fatal. */
const JwkSetSchema = v.object({ keys: v.array(v.unknown()) });
/** An Ed25519 public key (RFC 8037 §2): the only kind that binds `v1a`. `x` is checked strictly by the store. */
const Ed25519JwkSchema = v.object({ kty: v.literal("OKP"), crv: v.literal("Ed25519"), x: v.string() });

class Deadline extends Error {}

export async function fetchJwks(origin: string, o: FetchJwksOptions): Promise<JwksResult> {
  if (o.signal?.aborted) return { kind: "failed", reason: "cancelled" };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Deadline("deadline")), Math.max(0, o.timeoutMs));
  const forward = () => controller.abort(o.signal?.reason);
  o.signal?.addEventListener("abort", forward, { once: true });
  try {
    return await fetchWithin(new URL(JWKS_PATH, origin), controller.signal, o.fetch ?? fetch, Math.max(0, o.timeoutMs));
  } catch (e) {
    return { kind: "failed", reason: failureReason(e, controller.signal) };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", forward);
    // Whatever is still open (a body not read to its end) goes with the request.
    controller.abort(new Deadline("done"));
  }
}

async function fetchWithin(url: URL, signal: AbortSignal, doFetch: typeof fetch, timeoutMs: number): Promise<JwksResult> {
  const response = await doFetch(url, { method: "GET", redirect: "manual", signal, headers: { accept: "application/json" } });
  if (response.status === 404 || response.status === 410) {
    await discard(response);
    return { kind: "not_published" };
  }
  if (response.status < 200 || response.status > 299) {
    await discard(response);
    return { kind: "failed", reason: response.status >= 300 && response.status < 400 ? `redirected (HTTP ${response.status})` : `HTTP ${response.status}` };
  }
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > WEBHOOK_LIMITS.jwksBytes) {
    await discard(response);
    return { kind: "failed", reason: tooLarge() };
  }
  // Grown as bytes arrive, capped; the one deadline (the signal) also ends a stalled body.
  const body = await readWithin(response.body, { maxBytes: WEBHOOK_LIMITS.jwksBytes, deadlineMs: timeoutMs });
  if (body.kind === "too_large") return { kind: "failed", reason: tooLarge() };
  if (body.kind !== "ok") throw new Error("the body did not arrive whole");
  return decodeJwks(body.bytes);
}

/** The `x` of every Ed25519 key in a JWK set; anything that is not a JWK set is a failure. */
export function decodeJwks(body: Uint8Array): JwksResult {
  const parsed = parseStrictJson(body);
  if (!parsed.ok) return { kind: "failed", reason: "not JSON" };
  const set = v.safeParse(JwkSetSchema, parsed.value);
  if (!set.success) return { kind: "failed", reason: "not a JWK set" };
  const xs: string[] = [];
  for (const entry of set.output.keys) {
    const key = v.safeParse(Ed25519JwkSchema, entry);
    if (key.success) xs.push(key.output.x);
  }
  return { kind: "keys", xs };
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

function tooLarge(): string {
  return `larger than ${WEBHOOK_LIMITS.jwksBytes / 1024} KiB`;
}

function failureReason(e: unknown, signal: AbortSignal): string {
  if (signal.aborted) return signal.reason instanceof Deadline ? "timed out" : "cancelled";
  // A connection error's message names the host and port at most; it never carries a secret.
  return `unreachable (${errorMessage(e).slice(0, 120)})`;
}

/** The first subscribe to an origin found no key and could not learn whether the server signs. */
export class JwksUnavailable extends Error {
  readonly code = "jwks_unavailable" as const;
  readonly reason: string;

  constructor(origin: string, reason: string, attempts: number) {
    super(
      `could not fetch the server's webhook-signing keys from ${origin}${JWKS_PATH} (${reason}; ${attempts} attempts); ` +
        "refusing to subscribe without knowing whether to enforce its identity",
    );
    this.name = "JwksUnavailable";
    this.reason = reason;
  }
}

export interface EnsureServerKeysOptions extends FetchJwksOptions {
  /** The wait between attempts (tests inject one that does not wait). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Before each subscribe and refresh: fetch the origin's keys and add what is found (so a rotation,
 * published beside the old key, is picked up). A failure costs nothing once a key is known; while
 * none is, up to 3 attempts (500 ms, then 1 s apart), then `JwksUnavailable`. A clean 404/410 while
 * none is known means the server does not sign. An abort of `signal` ends the attempts: it throws
 * the abort reason when no key is known (never a subscribe on unknown terms).
 */
export async function ensureServerKeys(origin: string, keys: ServerKeys, o: EnsureServerKeysOptions): Promise<void> {
  const signal = o.signal ?? new AbortController().signal;
  const sleep = o.sleep ?? ((ms: number) => abortableSleep(ms, signal));
  let reason = "not fetched";
  for (let attempt = 1; attempt <= JWKS_ATTEMPTS; attempt++) {
    const result = await fetchJwks(origin, { timeoutMs: o.timeoutMs, signal, ...(o.fetch === undefined ? {} : { fetch: o.fetch }) });
    if (result.kind === "keys") keys.add(origin, result.xs);
    if (result.kind !== "failed" || keys.keys(origin).length > 0) return;
    signal.throwIfAborted();
    reason = result.reason;
    if (attempt < JWKS_ATTEMPTS) await sleep(JWKS_RETRY_SLEEPS_MS[attempt - 1] ?? 1000);
    signal.throwIfAborted();
  }
  throw new JwksUnavailable(origin, reason, JWKS_ATTEMPTS);
}
