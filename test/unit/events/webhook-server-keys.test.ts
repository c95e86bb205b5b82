/**
 * The v1a key store (events design notes §4.6): strict base64url `x`, keys per origin that only
 * grow, stable arrays, the snapshot export, and the bounds (logged once).
 */
import { expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { ServerKeyStore, decodeEd25519X, isOrigin } from "../../../src/events/webhook/server-keys.ts";

function ed25519X(): string {
  const jwk = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
  return jwk.x as string;
}

const ORIGIN = "https://events.example.com";
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** The 43rd character carries 2 unused bits; setting one spells the same 32 bytes differently. */
function alias(x: string): string {
  const last = ALPHABET.indexOf(x.charAt(42));
  return `${x.slice(0, 42)}${ALPHABET.charAt(last + 1)}`;
}

test("a key's x decodes to its 32 raw bytes; any other spelling is refused", () => {
  const x = ed25519X();
  expect(decodeEd25519X(x)).toEqual(new Uint8Array(Buffer.from(x, "base64url")));
  expect(decodeEd25519X(x)?.length).toBe(32);
  const bytes = Buffer.alloc(32, 0xab);
  const canonical = bytes.toString("base64url");
  for (const bad of [
    "",
    `${canonical}=`, // padded
    Buffer.from(bytes).toString("base64"), // standard alphabet with padding
    canonical.slice(0, 42), // 31 bytes and a bit
    Buffer.alloc(33, 1).toString("base64url"), // 33 bytes
    alias(canonical), // unused low bits set: the same bytes under another spelling
    `${canonical.slice(0, 40)}+/==`,
    ` ${canonical.slice(1)}`,
  ]) {
    expect(decodeEd25519X(bad)).toBeNull();
  }
});

test("origins are taken only as URL.origin spells them", () => {
  expect(isOrigin("http://127.0.0.1:8080")).toBe(true);
  expect(isOrigin(ORIGIN)).toBe(true);
  for (const bad of ["", "https://events.example.com/", "https://events.example.com/mcp", "https://events.example.com:443", "ftp://x", "not a url", "https://u:p@events.example.com"]) {
    expect(isOrigin(bad)).toBe(false);
  }
});

test("keys are kept per origin, added once each, bad values ignored, in the order first seen", () => {
  const store = new ServerKeyStore({ log: () => {} });
  const [a, b, c] = [ed25519X(), ed25519X(), ed25519X()];
  expect(store.keys(ORIGIN)).toEqual([]);
  expect(store.add(ORIGIN, [a, "nope", a])).toBe(true);
  expect(store.add(ORIGIN, [a])).toBe(false);
  expect(store.add(ORIGIN, ["nope", 7 as unknown as string])).toBe(false);
  expect(store.add(ORIGIN, [b, a])).toBe(true);
  expect(store.add("http://127.0.0.1:9", [c])).toBe(true);
  expect(store.add("https://events.example.com/path", [c])).toBe(false);
  expect(store.exported()).toEqual({ [ORIGIN]: [a, b], "http://127.0.0.1:9": [c] });
  expect(store.keys(ORIGIN).map((k) => Buffer.from(k).toString("base64url"))).toEqual([a, b]);
});

test("there is no way to shrink a set: an empty add changes nothing", () => {
  const store = new ServerKeyStore({ log: () => {} });
  const a = ed25519X();
  store.add(ORIGIN, [a]);
  expect(store.add(ORIGIN, [])).toBe(false);
  expect(store.exported()).toEqual({ [ORIGIN]: [a] });
});

test("an array handed out by keys() never changes under its holder", () => {
  const store = new ServerKeyStore({ log: () => {} });
  store.add(ORIGIN, [ed25519X()]);
  const held = store.keys(ORIGIN);
  expect(store.keys(ORIGIN)).toBe(held);
  store.add(ORIGIN, [ed25519X()]);
  expect(held.length).toBe(1);
  expect(store.keys(ORIGIN).length).toBe(2);
  expect(Object.isFrozen(held)).toBe(true);
  const exported = store.exported();
  exported[ORIGIN]?.push("tampered");
  expect(store.exported()[ORIGIN]?.length).toBe(2);
});

test("past the bounds new keys and origins are ignored, known ones kept, and each bound is logged once", () => {
  const lines: string[] = [];
  const store = new ServerKeyStore({ bounds: { keysPerOrigin: 2, origins: 2 }, log: (l) => lines.push(l) });
  const [a, b, c, d] = [ed25519X(), ed25519X(), ed25519X(), ed25519X()];
  expect(store.add(ORIGIN, [a, b, c])).toBe(true);
  expect(store.add(ORIGIN, [d])).toBe(false);
  expect(store.exported()[ORIGIN]).toEqual([a, b]);
  expect(store.add("http://127.0.0.1:1", [c])).toBe(true);
  expect(store.add("http://127.0.0.1:2", [d])).toBe(false);
  expect(store.add("http://127.0.0.1:3", [d])).toBe(false);
  expect(Object.keys(store.exported())).toEqual([ORIGIN, "http://127.0.0.1:1"]);
  expect(lines.length).toBe(2);
  expect(lines.join("\n")).not.toContain(a);
});
