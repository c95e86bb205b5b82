/**
 * Decoding a verified webhook body (wire notes §12.1, §13; design notes §4.3 steps 7–8): each
 * kind, and hostile shapes that must come back as null (400) or bounded, never as a throw.
 */
import { expect, test } from "bun:test";
import { decodeWebhookBody } from "../../../src/events/webhook/body.ts";
import { SERVER_TEXT_LIMITS } from "../../../src/events/rules/server-text.ts";
import { REDACTED, registerSecrets } from "../../../src/shared/scrub.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const decode = (v: unknown) => decodeWebhookBody(enc(JSON.stringify(v)));

test("no top-level type: an event whose occurrence is the parsed object", () => {
  const event = { eventId: "evt_789", name: "incident.created", timestamp: "2026-02-19T16:00:00Z", data: { type: "nested is fine" }, cursor: "c" };
  expect(decode(event)).toEqual({ kind: "event", occurrence: event });
  expect(decode({})).toEqual({ kind: "event", occurrence: {} });
});

test("verification: the challenge echoed verbatim, bounded", () => {
  expect(decode({ type: "verification", challenge: "c2VjcmV0LW5vbmNl" })).toEqual({ kind: "verification", challenge: "c2VjcmV0LW5vbmNl" });
  expect(decode({ type: "verification", challenge: "x".repeat(1024) })).toEqual({ kind: "verification", challenge: "x".repeat(1024) });
  for (const challenge of ["x".repeat(1025), "x".repeat(500_000), "", 42, null, ["a"], { a: 1 }, undefined]) {
    expect(decode({ type: "verification", challenge })).toBeNull();
  }
});

test("gap: a string cursor, else null", () => {
  expect(decode({ type: "gap", cursor: "fresh-1" })).toEqual({ kind: "gap", cursor: "fresh-1" });
  expect(decode({ type: "gap", cursor: null })).toEqual({ kind: "gap", cursor: null });
  expect(decode({ type: "gap" })).toEqual({ kind: "gap", cursor: null });
  expect(decode({ type: "gap", cursor: 17 })).toEqual({ kind: "gap", cursor: null });
  expect(decode({ type: "gap", cursor: { evil: true } })).toEqual({ kind: "gap", cursor: null });
});

test("terminated: the error kept as a JSON-RPC error; null only when absent or not an object", () => {
  const error = { code: -32012, message: "Forbidden", data: { reason: "Access revoked" } };
  expect(decode({ type: "terminated", error })).toEqual({ kind: "terminated", error });
  expect(decode({ type: "terminated", error: { code: -32011, message: "gone" } })).toEqual({ kind: "terminated", error: { code: -32011, message: "gone" } });
  // A malformed code or message is filled in as a push termination's is; what the server said stays.
  expect(decode({ type: "terminated", error: { code: -32011 } })).toEqual({ kind: "terminated", error: { code: -32011, message: "terminated" } });
  expect(decode({ type: "terminated", error: { message: "revoked" } })).toEqual({ kind: "terminated", error: { code: -32603, message: "revoked" } });
  expect(decode({ type: "terminated", error: { code: "x", message: 7, data: { reason: "r" } } })).toEqual({
    kind: "terminated",
    error: { code: -32603, message: "terminated", data: { reason: "r" } },
  });
  expect(decode({ type: "terminated", error: { code: 1.5 } })).toEqual({ kind: "terminated", error: { code: -32603, message: "terminated" } });
  for (const bad of [undefined, null, "Forbidden", [], [{ code: 1 }], 42]) {
    expect(decode({ type: "terminated", error: bad })).toEqual({ kind: "terminated", error: null });
  }
});

test("terminated: a huge message and data are bounded, registered secrets in them scrubbed", () => {
  // A credential vigil holds for a server (scrub.ts registers them once, process-wide).
  const secret = "vigil-test-bearer-token-0f3a9c";
  registerSecrets([secret]);
  const got = decode({ type: "terminated", error: { code: -32012, message: `${"m".repeat(100_000)}`, data: { note: `leaked ${secret}`, blob: "d".repeat(200_000) } } });
  expect(got?.kind).toBe("terminated");
  const error = got?.kind === "terminated" ? got.error : null;
  expect(error?.message.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.textChars + 1);
  expect(JSON.stringify(error?.data).length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.dataJsonChars + 2);
  expect(JSON.stringify(error)).not.toContain(secret);
  const small = decode({ type: "terminated", error: { code: -32012, message: `bad ${secret}`, data: { note: `leaked ${secret}` } } });
  expect(JSON.stringify(small)).not.toContain(secret);
  expect(JSON.stringify(small)).toContain(REDACTED);
});

test("another string type: an ignored control, its type bounded", () => {
  expect(decode({ type: "heartbeat" })).toEqual({ kind: "control", type: "heartbeat" });
  expect(decode({ type: "" })).toEqual({ kind: "control", type: "" });
  const long = decode({ type: "t".repeat(50_000) });
  expect(long?.kind).toBe("control");
  expect(long?.kind === "control" ? long.type.length : 0).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.textChars + 1);
});

test("hostile shapes are null (400), never a throw", () => {
  for (const v of [[], [{ type: "verification", challenge: "c" }], "text", 42, null, true]) expect(decode(v)).toBeNull();
  for (const type of [{ type: "verification" }, ["verification"], 1, null, true]) expect(decode({ type, challenge: "c" })).toBeNull();
  for (const raw of ["", " ", "{", "{}x", "{'a':1}", "NaN", "\u0000", '{"a":1}{"b":2}']) expect(decodeWebhookBody(enc(raw))).toBeNull();
  expect(decodeWebhookBody(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).toBeNull(); // invalid UTF-8
  const deep = `${"[".repeat(200_000)}${"]".repeat(200_000)}`;
  expect(() => decodeWebhookBody(enc(deep))).not.toThrow();
  expect(decodeWebhookBody(enc(deep))).toBeNull();
});

test("decided on decoded JSON, not bytes: escapes and whitespace do not change the kind", () => {
  expect(decodeWebhookBody(enc(' {\n "\\u0074ype" : "verification", "challenge":"\\u0063"}\n'))).toEqual({ kind: "verification", challenge: "c" });
  // A duplicated key: JSON.parse keeps the last one, as every JSON reader of the body would.
  expect(decodeWebhookBody(enc('{"type":"gap","type":"verification","challenge":"z"}'))).toEqual({ kind: "verification", challenge: "z" });
  // __proto__ is an ordinary key of the occurrence, not a prototype.
  const got = decodeWebhookBody(enc('{"__proto__":{"type":"verification"},"eventId":"e"}'));
  expect(got?.kind).toBe("event");
});

test("terminated: a webhook secret the server echoes is scrubbed by its shape (never registered)", async () => {
  const { newWebhookSecret } = await import("../../../src/events/webhook/secret.ts");
  const secret = newWebhookSecret();
  const got = decode({ type: "terminated", error: { code: -32012, message: `bad secret ${secret}`, data: { secret } } });
  expect(JSON.stringify(got)).not.toContain(secret.slice(6));
  expect(JSON.stringify(got)).toContain(REDACTED);
});
