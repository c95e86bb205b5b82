import { describe, expect, test } from "bun:test";
import { MIN_SECRET_CHARS, REDACTED, Scrubber, TRUNCATED, registerSecrets, scrubText, scrubValue, secretForms } from "../../../src/shared/scrub.ts";

const TOKEN = "tok-SECRET-8f3a91c2";

describe("Scrubber.text", () => {
  test("every occurrence of every secret, longest first", () => {
    const s = new Scrubber([TOKEN, `Bearer ${TOKEN}`, "sk-other-key-123"]);
    expect(s.text(`a Bearer ${TOKEN} b ${TOKEN} c sk-other-key-123`)).toBe(`a ${REDACTED} b ${REDACTED} c ${REDACTED}`);
  });

  test("the token after a scheme, JSON-escaped and URL-encoded forms", () => {
    const quoted = 'pa"ss\\word/+=x';
    const s = new Scrubber([`Bearer ${TOKEN}`, quoted]);
    expect(s.text(`token ${TOKEN} revoked`)).toBe(`token ${REDACTED} revoked`);
    expect(s.text(JSON.stringify({ m: quoted }))).toBe(`{"m":"${REDACTED}"}`);
    expect(s.text(`?k=${encodeURIComponent(quoted)}`)).toBe(`?k=${REDACTED}`);
  });

  test(`values shorter than ${MIN_SECRET_CHARS} characters are not secrets`, () => {
    const s = new Scrubber(["1", "true", "info", "debug", "Bearer abc"]);
    expect(s.empty).toBe(false); // "Bearer abc" itself is long enough; its token is not
    expect(s.text("debug info: true 1 abc")).toBe("debug info: true 1 abc");
    expect(secretForms("short")).toEqual([]);
    expect(new Scrubber(["", "ro"]).empty).toBe(true);
  });
});

describe("Scrubber.value", () => {
  const s = new Scrubber([TOKEN]);

  test("every string, keys included, in a copy; other values kept; key order kept", () => {
    const input = { reason: `token ${TOKEN} revoked`, n: 3, ok: true, none: null, list: [TOKEN, { [TOKEN]: "x" }], z: "plain" };
    const out = s.value(input) as Record<string, unknown>;
    expect(out).toEqual({ reason: `token ${REDACTED} revoked`, n: 3, ok: true, none: null, list: [REDACTED, { [REDACTED]: "x" }], z: "plain" });
    expect(Object.keys(out)).toEqual(Object.keys(input));
    expect(input.reason).toContain(TOKEN);
  });

  test("a __proto__ key stays a plain member", () => {
    const input = JSON.parse(`{"__proto__": {"polluted": "${TOKEN}"}}`);
    const out = s.value(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe(`{"__proto__":{"polluted":"${REDACTED}"}}`);
  });

  test("nesting past maxDepth is replaced, without recursion (100,000 levels)", () => {
    let deep: unknown = TOKEN;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const out = JSON.stringify(s.value(deep, { maxDepth: 3, maxNodes: 1000 }));
    expect(out).toBe(`[[["${TRUNCATED}"]]]`);
    expect(JSON.stringify(s.value(deep))).not.toContain(TOKEN);
  });

  test("a container whose members exceed the node budget is replaced, not passed unchecked", () => {
    const out = s.value({ small: [TOKEN], big: Array.from({ length: 50 }, () => TOKEN) }, { maxDepth: 10, maxNodes: 20 });
    expect(out).toEqual({ small: [REDACTED], big: TRUNCATED });
  });

  test("with no secret the value is returned as it is", () => {
    const input = { a: [1] };
    expect(new Scrubber([]).value(input)).toBe(input);
  });
});

describe("the process-wide set", () => {
  test("registered secrets are scrubbed by scrubText and scrubValue", () => {
    const secret = `proc-${crypto.randomUUID()}`;
    expect(scrubText(secret)).toBe(secret);
    registerSecrets([secret, "tiny"]);
    expect(scrubText(`x ${secret} tiny`)).toBe(`x ${REDACTED} tiny`);
    expect(scrubValue({ data: { reason: secret } })).toEqual({ data: { reason: REDACTED } });
  });
});

test("webhook secrets are scrubbed by shape, also with no secret registered", async () => {
  const { Scrubber, REDACTED } = await import("../../../src/shared/scrub.ts");
  const s = new Scrubber([]);
  expect(s.text("sent whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8= to it")).toBe(`sent ${REDACTED} to it`);
  expect(s.text("the word whsec_ alone stays")).toBe("the word whsec_ alone stays");
});
