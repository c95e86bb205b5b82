/**
 * Webhook secrets and routing tokens (wire notes §9.1, §21; design notes §4.1, §4.4).
 *
 * - A secret is `whsec_` + standard base64 of 32 CSPRNG bytes (the profile allows 24–64). The
 *   server never makes one: the client sends a fresh one with every subscribe and refresh.
 * - A token is 16 CSPRNG bytes in lowercase hex: the last segment of the callback URL. It only
 *   routes; the HMAC authenticates.
 * `crypto.getRandomValues` throws when the system cannot provide randomness: that error goes up,
 * there is no weaker fallback.
 */
const PREFIX = "whsec_";
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;
const SECRET_BYTES = 32;
const TOKEN_BYTES = 16;
/** Canonical standard base64 (padding included), as the profile serializes secrets. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}

export function newWebhookSecret(): string {
  return PREFIX + Buffer.from(randomBytes(SECRET_BYTES)).toString("base64");
}

export function newRouteToken(): string {
  return Buffer.from(randomBytes(TOKEN_BYTES)).toString("hex");
}

/**
 * The HMAC key of a `whsec_` secret: the decoded bytes after the prefix (keying the HMAC with the
 * literal string is a known bug pattern, wire notes §12.2). null: not a secret of the profile
 * (no prefix, not canonical base64, or a key outside 24–64 bytes).
 */
export function webhookKey(secret: string): Uint8Array | null {
  if (typeof secret !== "string" || !secret.startsWith(PREFIX)) return null;
  const text = secret.slice(PREFIX.length);
  // 64 bytes encode to 88 characters: anything longer is refused before it is decoded.
  if (text.length > 88 || !BASE64.test(text)) return null;
  const key = Buffer.from(text, "base64");
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) return null;
  // Non-zero padding bits decode "successfully" to the same bytes as another text: not canonical.
  if (key.toString("base64") !== text) return null;
  return new Uint8Array(key);
}
