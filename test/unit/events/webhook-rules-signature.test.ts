/**
 * Standard Webhooks verification of a delivery (wire notes §12.2, §12.3, §21, Appendix A; design
 * notes §4.3 steps 2–5): the published vectors, the `standardwebhooks` library as an independent
 * signer, rotation lists, the 8-entry cap, the ±300 s window and hostile timestamps, and v1a.
 */
import { describe, expect, test } from "bun:test";
import { createHmac, generateKeyPairSync, sign as edSign } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { type DeliveryInput, type DeliveryVerdict, verifyDelivery } from "../../../src/events/webhook/signature.ts";
import { newWebhookSecret } from "../../../src/events/webhook/secret.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const OK: DeliveryVerdict = { ok: true };
const HEADERS: DeliveryVerdict = { ok: false, status: 400, why: "headers" };
const TIMESTAMP: DeliveryVerdict = { ok: false, status: 400, why: "timestamp" };
const SIGNATURE: DeliveryVerdict = { ok: false, status: 401, why: "signature" };
const IDENTITY: DeliveryVerdict = { ok: false, status: 401, why: "identity" };

const SECRET_A = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET_B = "whsec_ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";
const EVENT_BODY =
  '{"eventId":"evt_789","name":"incident.created","timestamp":"2026-02-19T16:00:00Z","data":{"incidentId":"INC-1234","severity":"P1"},"cursor":"cursor_xyz"}';
const SIG_A = "v1,u5ioNyT4/kV1AuuMANtQq5P6hVmteAEuqaMjCNrDpc4=";
const SIG_B = "v1,7feWiXXrvRsyJ+VdEov24LL3zOpXtLdvINaBNwKwk48=";
const T = 1739980800;

function input(over: Partial<DeliveryInput> = {}): DeliveryInput {
  return { id: "evt_789", timestamp: String(T), signature: SIG_A, body: enc(EVENT_BODY), secrets: [SECRET_A], keys: [], nowSeconds: T, ...over };
}

/** Our own HMAC signer (the reference snippet of Appendix A), for entries the library cannot make. */
function hmac(secret: string, id: string, ts: string, body: Uint8Array): string {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return `v1,${createHmac("sha256", key).update(Buffer.concat([Buffer.from(`${id}.${ts}.`), body])).digest("base64")}`;
}

describe("Appendix A vectors", () => {
  test("1: the canonical Standard Webhooks vector (24-byte secret)", () => {
    const body = enc('{"test": 2432232314}');
    const v = input({ id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330", nowSeconds: 1614265330, body });
    expect(body.length).toBe(20);
    expect(verifyDelivery({ ...v, secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" })).toEqual(OK);
  });

  test("2: the MCP event delivery (153 bytes, exact)", () => {
    expect(enc(EVENT_BODY).length).toBe(153);
    expect(verifyDelivery(input())).toEqual(OK);
  });

  test("3: the rotated secret, alone and dual-signed in either order", () => {
    expect(verifyDelivery(input({ secrets: [SECRET_B], signature: SIG_B }))).toEqual(OK);
    expect(verifyDelivery(input({ secrets: [SECRET_B], signature: `${SIG_B} ${SIG_A}` }))).toEqual(OK);
    expect(verifyDelivery(input({ secrets: [SECRET_A], signature: `${SIG_B} ${SIG_A}` }))).toEqual(OK);
    expect(verifyDelivery(input({ secrets: [SECRET_B], signature: SIG_A }))).toEqual(SIGNATURE);
  });

  test("4: the verification envelope", () => {
    const body = enc('{"type":"verification","challenge":"c2VjcmV0LW5vbmNl"}');
    const v = input({ id: "msg_verification_01", body, signature: "v1,1ugiIximz1onsb8vbD3On5Q1jwc92mSI4MfasS9fnSc=" });
    expect(verifyDelivery(v)).toEqual(OK);
    // The same signature over the event body does not verify: it covers the bytes.
    expect(verifyDelivery({ ...v, body: enc(EVENT_BODY) })).toEqual(SIGNATURE);
  });

  test("the HMAC is keyed with the decoded bytes, not the whsec_ text (wire notes §12.2 bug pattern)", () => {
    const wrong = `v1,${createHmac("sha256", SECRET_A).update(`evt_789.${T}.${EVENT_BODY}`).digest("base64")}`;
    expect(verifyDelivery(input({ signature: wrong }))).toEqual(SIGNATURE);
  });
});

describe("cross-check with the standardwebhooks library", () => {
  const now = new Date(T * 1000);
  for (const secret of [SECRET_A, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", newWebhookSecret()]) {
    test(`library-signed deliveries verify, and one tampered byte is 401 (${secret.length} chars)`, () => {
      const lib = new Webhook(secret);
      for (const payload of [EVENT_BODY, '{"type":"gap","cursor":"c-9"}', '{"data":"é ✓ 𝄞"}']) {
        const signature = lib.sign("evt_x1", now, payload);
        const body = enc(payload);
        const v = input({ id: "evt_x1", secrets: [secret], signature, body });
        expect(verifyDelivery(v)).toEqual(OK);
        for (const at of [0, Math.floor(body.length / 2), body.length - 1]) {
          const tampered = body.slice();
          tampered[at] = tampered[at]! ^ 0x01;
          expect(verifyDelivery({ ...v, body: tampered })).toEqual(SIGNATURE);
        }
        expect(verifyDelivery({ ...v, id: "evt_x2" })).toEqual(SIGNATURE);
        // A timestamp one second later (still in the window) is not what was signed.
        expect(verifyDelivery({ ...v, timestamp: String(T + 1) })).toEqual(SIGNATURE);
        // The library agrees with our signer byte for byte.
        expect(signature).toBe(hmac(secret, "evt_x1", String(T), body));
      }
    });
  }

  test("a signature whose encoded text is tampered (one character) is 401", () => {
    const signature = new Webhook(SECRET_A).sign("evt_789", now, EVENT_BODY);
    const flipped = signature.slice(0, 5) + (signature[5] === "A" ? "B" : "A") + signature.slice(6);
    expect(verifyDelivery(input({ signature: flipped }))).toEqual(SIGNATURE);
  });
});

describe("rotation: the secrets list", () => {
  const [current, previous, pending, older] = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
  const body = enc(EVENT_BODY);
  const signedBy = (s: string) => hmac(s, "evt_789", String(T), body);

  test("current, previous and pending each verify; a secret not in the list is 401", () => {
    const secrets = [current, previous, pending];
    for (const s of secrets) expect(verifyDelivery(input({ secrets, signature: signedBy(s) }))).toEqual(OK);
    expect(verifyDelivery(input({ secrets, signature: signedBy(older) }))).toEqual(SIGNATURE);
    expect(verifyDelivery(input({ secrets: [current, previous], signature: signedBy(pending) }))).toEqual(SIGNATURE);
  });

  test("a dual-signed header verifies when either half is accepted", () => {
    expect(verifyDelivery(input({ secrets: [current], signature: `${signedBy(older)} ${signedBy(current)}` }))).toEqual(OK);
    expect(verifyDelivery(input({ secrets: [previous], signature: `${signedBy(previous)} ${signedBy(older)}` }))).toEqual(OK);
  });

  test("no secrets, or only unusable ones, verify nothing", () => {
    expect(verifyDelivery(input({ secrets: [] }))).toEqual(SIGNATURE);
    const bare = SECRET_A.slice("whsec_".length);
    expect(verifyDelivery(input({ secrets: [bare, "whsec_", "whsec_AAAA"] }))).toEqual(SIGNATURE);
  });
});

describe("signature header entries", () => {
  const junk = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

  test("a valid entry at positions 1–8 verifies; at position 9 it is ignored (401)", () => {
    for (let pos = 1; pos <= 8; pos++) {
      const entries = Array.from({ length: pos - 1 }, () => junk).concat(SIG_A);
      expect(verifyDelivery(input({ signature: entries.join(" ") }))).toEqual(OK);
    }
    const nine = Array.from({ length: 8 }, () => junk).concat(SIG_A).join(" ");
    expect(verifyDelivery(input({ signature: nine }))).toEqual(SIGNATURE);
  });

  test("other versions and malformed entries never match, and never throw", () => {
    const raw = SIG_A.slice(3);
    for (const bad of [
      raw,
      `v2,${raw}`,
      `V1,${raw}`,
      `v1a,${raw}`,
      `v1,${raw.slice(0, -1)}`, // padding dropped: not canonical
      `v1,${raw.replace(/\+/g, "-").replace(/\//g, "_")}`, // base64url
      `v1,${raw} `.trim() + "==",
      "v1,",
      "v1,!!!!",
      "v1,AAAA", // decodes, wrong length
      ",",
      "v1",
    ]) {
      expect(verifyDelivery(input({ signature: bad }))).toEqual(SIGNATURE);
    }
  });

  test("extra spaces between entries are not entries", () => {
    expect(verifyDelivery(input({ signature: `  ${SIG_B}   ${SIG_A}  ` }))).toEqual(OK);
  });

  test("a huge header costs nothing beyond the first 8 entries", () => {
    const header = Array.from({ length: 5000 }, () => junk).join(" ");
    expect(verifyDelivery(input({ signature: header, secrets: Array.from({ length: 3 }, newWebhookSecret) }))).toEqual(SIGNATURE);
  });
});

describe("headers", () => {
  test("a missing or empty webhook-id / webhook-signature, or a missing timestamp, is 400 headers", () => {
    expect(verifyDelivery(input({ id: null }))).toEqual(HEADERS);
    expect(verifyDelivery(input({ timestamp: null }))).toEqual(HEADERS);
    expect(verifyDelivery(input({ signature: null }))).toEqual(HEADERS);
    expect(verifyDelivery(input({ id: "" }))).toEqual(HEADERS);
    expect(verifyDelivery(input({ signature: "" }))).toEqual(HEADERS);
  });

  test("headers are judged before the timestamp, the timestamp before the signature", () => {
    expect(verifyDelivery(input({ id: null, timestamp: "nope" }))).toEqual(HEADERS);
    expect(verifyDelivery(input({ timestamp: "nope", signature: "garbage" }))).toEqual(TIMESTAMP);
  });
});

describe("timestamp window (±300 s)", () => {
  const at = (offset: number, nowSeconds = T) => {
    const ts = String(T + offset);
    return verifyDelivery(input({ timestamp: ts, signature: hmac(SECRET_A, "evt_789", ts, enc(EVENT_BODY)), nowSeconds }));
  };

  test("300 s old or ahead is accepted; 301 s either way is 400", () => {
    expect(at(0)).toEqual(OK);
    expect(at(-300)).toEqual(OK);
    expect(at(300)).toEqual(OK);
    expect(at(-301)).toEqual(TIMESTAMP);
    expect(at(301)).toEqual(TIMESTAMP);
    expect(at(-86_400)).toEqual(TIMESTAMP);
    expect(at(86_400)).toEqual(TIMESTAMP);
  });

  test("a fractional now is compared as given", () => {
    expect(at(300, T + 0.5)).toEqual(OK);
    expect(at(-300, T + 0.5)).toEqual(TIMESTAMP);
  });

  test("hostile timestamps are a plain 400, never a throw", () => {
    for (const ts of [
      "-9223372036854775808",
      "9223372036854775807",
      "99999999999999999999999999",
      "9".repeat(10_000),
      "1e9",
      " 123",
      "123 ",
      "0x10",
      "+1739980800",
      "1739980800.0",
      "",
      "-",
      "١٧٣٩٩٨٠٨٠٠", // Arabic-Indic digits
      "NaN",
      "Infinity",
      `-${T}`,
    ]) {
      expect(() => verifyDelivery(input({ timestamp: ts }))).not.toThrow();
      expect(verifyDelivery(input({ timestamp: ts }))).toEqual(TIMESTAMP);
    }
  });

  test("a timestamp in the window with leading zeros is judged by its value (and signed as written)", () => {
    const ts = `000${T}`;
    expect(verifyDelivery(input({ timestamp: ts, signature: hmac(SECRET_A, "evt_789", ts, enc(EVENT_BODY)) }))).toEqual(OK);
    expect(verifyDelivery(input({ timestamp: `${"0".repeat(40)}${T}`, signature: SIG_A }))).toEqual(SIGNATURE);
  });
});

describe("v1a server identity", () => {
  const pair = generateKeyPairSync("ed25519");
  const other = generateKeyPairSync("ed25519");
  const raw = (k: typeof pair.publicKey) => new Uint8Array(Buffer.from(k.export({ format: "jwk" }).x as string, "base64url"));
  const signed = Buffer.concat([Buffer.from(`evt_789.${T}.`), Buffer.from(EVENT_BODY)]);
  const v1a = (key = pair.privateKey, content: Buffer = signed) => `v1a,${edSign(null, content, key).toString("base64")}`;
  const keys = [raw(pair.publicKey)];

  test("with keys known, a valid v1a next to a valid v1 is accepted, under any of the keys", () => {
    expect(verifyDelivery(input({ keys, signature: `${SIG_A} ${v1a()}` }))).toEqual(OK);
    expect(verifyDelivery(input({ keys: [raw(other.publicKey), ...keys], signature: `${v1a()} ${SIG_A}` }))).toEqual(OK);
  });

  test("a v1a forged with another key, over other content, or tampered is 401 identity", () => {
    expect(verifyDelivery(input({ keys, signature: `${SIG_A} ${v1a(other.privateKey)}` }))).toEqual(IDENTITY);
    expect(verifyDelivery(input({ keys, signature: `${SIG_A} ${v1a(pair.privateKey, Buffer.from("evt_789.1.{}"))}` }))).toEqual(IDENTITY);
    const good = v1a();
    const flipped = good.slice(0, 10) + (good[10] === "A" ? "B" : "A") + good.slice(11);
    expect(verifyDelivery(input({ keys, signature: `${SIG_A} ${flipped}` }))).toEqual(IDENTITY);
    expect(verifyDelivery(input({ keys, signature: `${SIG_A} v1a,${Buffer.alloc(64).toString("base64")}` }))).toEqual(IDENTITY);
  });

  test("with keys known, a missing v1a is 401 identity; a v1a past the 8th entry does not count", () => {
    expect(verifyDelivery(input({ keys }))).toEqual(IDENTITY);
    const filler = Array.from({ length: 7 }, () => SIG_B);
    expect(verifyDelivery(input({ keys, signature: [SIG_A, ...filler, v1a()].join(" ") }))).toEqual(IDENTITY);
    expect(verifyDelivery(input({ keys, signature: [SIG_A, ...filler.slice(1), v1a()].join(" ") }))).toEqual(OK);
  });

  test("a v1a alone never replaces the HMAC: 401 signature first", () => {
    expect(verifyDelivery(input({ keys, signature: v1a() }))).toEqual(SIGNATURE);
  });

  test("with the key set empty, v1a entries are ignored, valid or not", () => {
    expect(verifyDelivery(input({ keys: [], signature: SIG_A }))).toEqual(OK);
    expect(verifyDelivery(input({ keys: [], signature: `${SIG_A} ${v1a(other.privateKey)}` }))).toEqual(OK);
    expect(verifyDelivery(input({ keys: [], signature: `${SIG_A} v1a,garbage` }))).toEqual(OK);
  });

  test("a known key of the wrong size verifies nothing (fails closed)", () => {
    expect(verifyDelivery(input({ keys: [new Uint8Array(31)], signature: `${SIG_A} ${v1a()}` }))).toEqual(IDENTITY);
  });
});
