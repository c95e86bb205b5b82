/**
 * Standard Webhooks verification of one delivery (serve.md §6 item 4; wire notes §12.2, §12.3,
 * §21; design notes §4.3 steps 2–5). Pure: the receiver hands in the header values, the raw body,
 * the secrets its route accepts now and the keys known for the server's origin.
 *
 * In order:
 *   1. a missing `webhook-id`, `webhook-timestamp` or `webhook-signature` → 400 "headers";
 *   2. a timestamp that is not a decimal integer, or more than 300 s off now in either direction
 *      → 400 "timestamp" (compared without overflow: an absurd value is refused by its length
 *      before it is ever turned into a number);
 *   3. HMAC-SHA256 with the decoded key of any accepted secret over `id.timestamp.` + the raw body
 *      bytes must equal some `v1,` entry → else 401 "signature";
 *   4. when keys are known for the origin, some `v1a,` entry must verify (Ed25519) under one of
 *      them → else 401 "identity".
 * Only the first 8 space-separated entries are examined, so a hostile header buys at most
 * 8 × (secrets + keys) operations. Comparisons are constant-time; a malformed entry just does not
 * match.
 */
import { type KeyObject, createHmac, createPublicKey, verify } from "node:crypto";
import { WEBHOOK_LIMITS } from "./types.ts";
import { webhookKey } from "./secret.ts";

export interface DeliveryInput {
  id: string | null;
  timestamp: string | null;
  signature: string | null;
  body: Uint8Array;
  secrets: readonly string[];
  keys: readonly Uint8Array[];
  nowSeconds: number;
}

export type DeliveryVerdict = { ok: true } | { ok: false; status: 400 | 401; why: "headers" | "timestamp" | "signature" | "identity" };

const STRICT_BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** An integer of more digits than this is far outside any window around now (no float arithmetic on it). */
const MAX_TIMESTAMP_DIGITS = 15;
const ED25519_SIGNATURE_BYTES = 64;
const KEY_CACHE_MAX = 1024;
const keyObjects = new Map<string, KeyObject>();
/** Decoded HMAC keys by secret (bounded like the KeyObjects): a route's secrets change only at a rotation. */
const hmacKeys = new Map<string, Uint8Array | null>();

export function verifyDelivery(input: DeliveryInput): DeliveryVerdict {
  const { id, timestamp, signature } = input;
  if (id === null || timestamp === null || signature === null || id === "" || signature === "") {
    return { ok: false, status: 400, why: "headers" };
  }
  if (!withinTolerance(timestamp, input.nowSeconds)) return { ok: false, status: 400, why: "timestamp" };
  const entries = signature.split(" ").filter((e) => e !== "").slice(0, WEBHOOK_LIMITS.signatureEntries);
  const prefix = Buffer.from(`${id}.${timestamp}.`, "utf8");
  if (!hmacMatches(entries, prefix, input.body, input.secrets)) return { ok: false, status: 401, why: "signature" };
  // Ed25519 signs one message: only this check needs the body copied behind its prefix.
  if (input.keys.length > 0 && !identityMatches(entries, Buffer.concat([prefix, input.body]), input.keys)) return { ok: false, status: 401, why: "identity" };
  return { ok: true };
}

/** A decimal integer (a leading '-' allowed only to be judged) within ±300 s of now. */
export function withinTolerance(timestamp: string, nowSeconds: number): boolean {
  const m = /^(-?)([0-9]+)$/.exec(timestamp);
  if (m === null) return false;
  const digits = m[2]!.replace(/^0+(?=[0-9])/, "");
  if (digits.length > MAX_TIMESTAMP_DIGITS) return false;
  const value = Number(digits) * (m[1] === "-" ? -1 : 1);
  return Math.abs(value - nowSeconds) <= WEBHOOK_LIMITS.toleranceSeconds;
}

function decodeEntry(entry: string, version: string, bytes: number): Buffer | null {
  if (!entry.startsWith(version)) return null;
  const text = entry.slice(version.length);
  if (!STRICT_BASE64.test(text)) return null;
  const raw = Buffer.from(text, "base64");
  // Canonical only (padding present, zero pad bits), as the library compares the encoded text.
  return raw.length === bytes && raw.toString("base64") === text ? raw : null;
}

/** HMAC-SHA256 over `prefix` then `body` (the signed content `id.timestamp.body`, without concatenating it). */
function hmacMatches(entries: readonly string[], prefix: Buffer, body: Uint8Array, secrets: readonly string[]): boolean {
  // Compared as text with the canonical base64 of the expected MAC: exactly the entries that decode
  // canonically (padded, zero pad bits) to it, as decodeEntry + a byte compare would find, without
  // decoding and re-encoding every entry of every delivery.
  const given = entries.filter((e) => e.startsWith("v1,")).map((e) => e.slice(3));
  if (given.length === 0) return false;
  let matched = false;
  for (const secret of secrets) {
    const key = decodedKey(secret);
    if (key === null) continue;
    const expected = createHmac("sha256", key).update(prefix).update(body).digest("base64");
    // Every entry is compared (no early exit), so timing says nothing about which one matched.
    for (const g of given) if (sameText(g, expected)) matched = true;
  }
  return matched;
}

/** Constant-time for equal lengths (a length is no secret: every MAC's encoding is 44 characters). */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function identityMatches(entries: readonly string[], signed: Buffer, keys: readonly Uint8Array[]): boolean {
  const given = entries.map((e) => decodeEntry(e, "v1a,", ED25519_SIGNATURE_BYTES)).filter((b): b is Buffer => b !== null);
  for (const raw of keys) {
    const key = publicKey(raw);
    if (key === null) continue;
    for (const g of given) {
      try {
        if (verify(null, signed, key, g)) return true;
      } catch {
        // A signature the library cannot even parse does not verify.
      }
    }
  }
  return false;
}

/** webhookKey(secret), decoded once per secret (cached, bounded). */
function decodedKey(secret: string): Uint8Array | null {
  const cached = hmacKeys.get(secret);
  if (cached !== undefined) return cached;
  const key = webhookKey(secret);
  if (hmacKeys.size >= KEY_CACHE_MAX) hmacKeys.delete(hmacKeys.keys().next().value!);
  hmacKeys.set(secret, key);
  return key;
}

/** The KeyObject of a raw 32-byte Ed25519 public key (cached, bounded); null for anything else. */
function publicKey(raw: Uint8Array): KeyObject | null {
  if (raw.length !== 32) return null;
  const x = Buffer.from(raw).toString("base64url");
  const cached = keyObjects.get(x);
  if (cached !== undefined) return cached;
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x }, format: "jwk" });
  } catch {
    return null;
  }
  if (keyObjects.size >= KEY_CACHE_MAX) keyObjects.delete(keyObjects.keys().next().value!);
  keyObjects.set(x, key);
  return key;
}
