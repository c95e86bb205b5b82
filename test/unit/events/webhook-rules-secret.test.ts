/**
 * Webhook secrets and route tokens (wire notes §9.1, §21; design notes §4.4): the shapes minted,
 * and the strict decoding of a `whsec_` secret into its HMAC key (24–64 bytes, canonical base64).
 */
import { expect, spyOn, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { newRouteToken, newWebhookSecret, webhookKey } from "../../../src/events/webhook/secret.ts";

test("a new secret is whsec_ + canonical base64 of 32 random bytes, and a library accepts it", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const s = newWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(webhookKey(s)?.length).toBe(32);
    seen.add(s);
  }
  expect(seen.size).toBe(50);
  const s = newWebhookSecret();
  const lib = new Webhook(s);
  const now = new Date();
  const headers = { "webhook-id": "evt_1", "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": lib.sign("evt_1", now, "{}") };
  expect(lib.verify("{}", headers)).toEqual({});
});

test("a new route token is 32 lowercase hex characters, unique", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const t = newRouteToken();
    expect(t).toMatch(/^[0-9a-f]{32}$/);
    seen.add(t);
  }
  expect(seen.size).toBe(50);
});

test("a failing CSPRNG is an error, never a fallback", () => {
  const spy = spyOn(crypto, "getRandomValues").mockImplementation(() => {
    throw new Error("no entropy");
  });
  try {
    expect(() => newWebhookSecret()).toThrow("no entropy");
    expect(() => newRouteToken()).toThrow("no entropy");
  } finally {
    spy.mockRestore();
  }
});

test("webhookKey decodes the bytes after the prefix (Appendix A secrets)", () => {
  const key = webhookKey("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
  expect(key).toEqual(new Uint8Array(Array.from({ length: 32 }, (_, i) => i)));
  expect(webhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?.length).toBe(24);
});

test("webhookKey accepts exactly 24–64 bytes", () => {
  const of = (n: number) => `whsec_${Buffer.alloc(n, 7).toString("base64")}`;
  expect(webhookKey(of(23))).toBeNull();
  expect(webhookKey(of(24))?.length).toBe(24);
  expect(webhookKey(of(25))?.length).toBe(25);
  expect(webhookKey(of(64))?.length).toBe(64);
  expect(webhookKey(of(65))).toBeNull();
  expect(webhookKey(of(0))).toBeNull();
  expect(webhookKey(`whsec_${"A".repeat(100_000)}`)).toBeNull();
});

test("webhookKey refuses a missing prefix and non-canonical base64", () => {
  const b64 = Buffer.alloc(32, 0xfb).toString("base64"); // contains + and /
  expect(webhookKey(`whsec_${b64}`)?.length).toBe(32);
  for (const bad of [
    b64, // no prefix (the library would take it; the profile does not)
    `WHSEC_${b64}`,
    ` whsec_${b64}`,
    `whsec_${b64} `,
    `whsec_${b64.replace(/=+$/, "")}`, // padding dropped
    `whsec_${b64.replace(/\+/g, "-").replace(/\//g, "_")}`, // base64url
    `whsec_${b64.slice(0, 20)}\n${b64.slice(20)}`,
    `whsec_${b64.slice(0, -2)}B=`, // non-zero pad bits: same bytes, another spelling
    `whsec_${b64}=`,
    "whsec_",
    "",
  ]) {
    expect(webhookKey(bad)).toBeNull();
  }
});
