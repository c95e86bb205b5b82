/**
 * The events snapshot since v2 (webhook records and server keys; v3 adds the position it covers):
 * golden files that pin what is read and written, and refusals that name the field without ever
 * quoting a secret.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { type EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import type { WebhookRecord } from "../../../src/events/webhook/types.ts";
import { rejection, snapFile, storeHarness } from "../../helpers/events-store.ts";

const DEFAULTS: EventsStoreOptions = { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-snapshot-v2", DEFAULTS);

const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const PREVIOUS = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const WEBHOOK: WebhookRecord = {
  token: "0123456789abcdef0123456789abcdef",
  secret: SECRET,
  previous: PREVIOUS,
  subscription_id: "sub-1",
  refresh_before: "2030-01-01T00:00:00Z",
};
const KEY_X = Buffer.alloc(32, 3).toString("base64url");

/** A v2 file exactly as the version before positions wrote it (still read). */
const GOLDEN_V2 = `${JSON.stringify({
  version: "vigil.mcp-events.v2",
  subscriptions: {
    "srv\u0000changed\u0000{}": {
      cursor: "c-9",
      recent: ["e1", "e2"],
      runtime: { server: "srv", name: "changed", arguments: {}, delivery: "webhook", action: "follow_up" },
      webhook: WEBHOOK,
    },
    "srv\u0000other\u0000{}": { cursor: null, recent: [] },
  },
  server_keys: { "https://events.example.com:8443": [KEY_X] },
  last_client_ms: 1700000000000,
})}\n`;

/** The same state as this version writes it: v3, naming the highest pending-log position it covers. */
const GOLDEN_V3 = GOLDEN_V2.replace('{"version":"vigil.mcp-events.v2",', '{"version":"vigil.mcp-events.v3","position":0,');

describe("events snapshot v2 and v3", () => {
  test("a v1 file still loads (no webhook, no server keys), and the next write is v3", async () => {
    const dir = setup();
    writeFileSync(snapFile(dir), JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: { k: { cursor: "3", recent: ["a"] } }, last_client_ms: 5 }));
    const s = await openStore(dir);
    expect(s.subscription("k")).toEqual({ cursor: "3", recent: ["a"] });
    expect(s.serverKeys).toEqual({});
    expect(s.lastClientMs).toBe(5);
    s.setSubscription("k", { cursor: "4", recent: ["a"], webhook: WEBHOOK });
    await s.commit();
    expect(JSON.parse(readFileSync(snapFile(dir), "utf8")).version).toBe("vigil.mcp-events.v3");
  });

  test("a v1 file may not carry the v2 fields", async () => {
    const dir = setup();
    writeFileSync(snapFile(dir), JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: { k: { cursor: null, recent: [], webhook: WEBHOOK } }, last_client_ms: null }));
    const e = await rejection(openStore(dir));
    expect(e.kind).toBe("snapshot_invalid");
    expect(e.message).toContain("subscriptions.k.webhook: unknown key");
    expect(e.message).not.toContain(SECRET);
  });

  test("a v2 file with webhook records and server keys loads whole, and is written again as v3", async () => {
    const dir = setup();
    writeFileSync(snapFile(dir), GOLDEN_V2);
    const s = await openStore(dir);
    const record = s.subscription("srv\u0000changed\u0000{}");
    expect(record?.webhook).toEqual(WEBHOOK);
    expect(s.serverKeys).toEqual({ "https://events.example.com:8443": [KEY_X] });
    s.setLastClientMs(1);
    await s.commit();
    s.setLastClientMs(1700000000000);
    await s.commit();
    expect(readFileSync(snapFile(dir), "utf8")).toBe(GOLDEN_V3);
  });

  test("a v3 file round-trips byte for byte", async () => {
    const dir = setup();
    writeFileSync(snapFile(dir), GOLDEN_V3);
    const s = await openStore(dir);
    // A change and its undo: the store rewrites the file, and the text is what it read.
    s.setLastClientMs(1);
    await s.commit();
    s.setLastClientMs(1700000000000);
    await s.commit();
    expect(readFileSync(snapFile(dir), "utf8")).toBe(GOLDEN_V3);
    // Records set again through the store (copies of what it handed out) are written the same way.
    for (const key of s.subscriptionKeys()) s.setSubscription(key, s.subscription(key)!);
    s.setServerKeys(s.serverKeys);
    s.setLastClientMs(2);
    await s.commit();
    s.setLastClientMs(1700000000000);
    await s.commit();
    expect(readFileSync(snapFile(dir), "utf8")).toBe(GOLDEN_V3);
  });

  test("a v3 file without its position, or with a negative one, is refused", async () => {
    for (const bad of [GOLDEN_V3.replace('"position":0,', ""), GOLDEN_V3.replace('"position":0', '"position":-1')]) {
      const dir = setup();
      writeFileSync(snapFile(dir), bad);
      const e = await rejection(openStore(dir));
      expect(e.kind).toBe("snapshot_invalid");
      expect(e.message).toContain("position");
    }
  });

  test("the records a caller gets are copies", async () => {
    const s = await openStore(setup());
    s.setSubscription("k", { cursor: null, recent: [], webhook: { ...WEBHOOK } });
    const got = s.subscription("k")!;
    got.webhook!.secret = "changed";
    expect(s.subscription("k")?.webhook).toEqual(WEBHOOK);
    const keys = { "https://a.example": [KEY_X] };
    s.setServerKeys(keys);
    keys["https://a.example"].push("x");
    s.serverKeys["https://a.example"]!.push("y");
    expect(s.serverKeys).toEqual({ "https://a.example": [KEY_X] });
  });

  const badRecords: Array<[string, Partial<Record<keyof WebhookRecord, unknown>>, string]> = [
    ["a token that is not 32 lowercase hex", { token: "0123456789ABCDEF0123456789ABCDEF" }, "webhook.token"],
    ["a secret without whsec_", { secret: SECRET.slice("whsec_".length) }, "webhook.secret"],
    ["a secret over 128 characters", { secret: `whsec_${"A".repeat(200)}` }, "webhook.secret"],
    ["a previous secret that is not base64", { previous: `${SECRET}!` }, "webhook.previous"],
    ["a subscription id over 1024 characters", { subscription_id: "s".repeat(1025) }, "webhook.subscription_id"],
    ["a refresh_before over 64 characters", { refresh_before: "2".repeat(65) }, "webhook.refresh_before"],
    ["an unknown key", { extra: SECRET } as never, "webhook.extra"],
  ];
  for (const [what, change, field] of badRecords) {
    test(`a webhook record with ${what} is refused naming the field, never the value`, async () => {
      const dir = setup();
      const webhook = { ...WEBHOOK, ...change };
      writeFileSync(snapFile(dir), GOLDEN_V2.replace(JSON.stringify(WEBHOOK), JSON.stringify(webhook)));
      const e = await rejection(openStore(dir));
      expect(e.kind).toBe("snapshot_invalid");
      expect(e.message).toContain(field);
      for (const secret of [SECRET, PREVIOUS, SECRET.slice("whsec_".length)]) expect(e.message).not.toContain(secret);
      // The same check guards what the store is asked to write.
      const s = await openStore(setup());
      let refused: Error | null = null;
      try {
        s.setSubscription("k", { cursor: null, recent: [], webhook: webhook as WebhookRecord });
      } catch (err) {
        refused = err as Error;
      }
      expect(refused?.message).toContain(field);
      for (const secret of [SECRET, PREVIOUS]) expect(refused?.message).not.toContain(secret);
    });
  }

  const badKeys: Array<[string, unknown, string]> = [
    ["more than 64 keys for an origin", { "https://a.example": Array.from({ length: 65 }, () => KEY_X) }, "at most 64 keys per origin"],
    ["a key that is not base64url", { "https://a.example": ["a+b/"] }, "expected a base64url key"],
    ["a key over 64 characters", { "https://a.example": ["A".repeat(65)] }, "at most 64 characters"],
    ["more than 1024 origins", Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`https://h${i}.example`, [KEY_X]])), "at most 1024 server origins"],
  ];
  for (const [what, keys, message] of badKeys) {
    test(`server_keys with ${what} are refused`, async () => {
      const dir = setup();
      writeFileSync(snapFile(dir), JSON.stringify({ version: "vigil.mcp-events.v2", subscriptions: {}, server_keys: keys, last_client_ms: null }));
      const e = await rejection(openStore(dir));
      expect(e.message).toContain("server_keys");
      expect(e.message).toContain(message);
    });
  }
});
