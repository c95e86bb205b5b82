/**
 * The snapshot joined from per-record texts (store/snapshot-table.ts) is byte for byte what
 * JSON.stringify of the whole snapshot object writes, through every change a store makes: a record
 * set again keeps its place, a forgotten one is gone, one set after it was forgotten goes last.
 * And a store with many subscriptions writes a snapshot that reloads to the same records; one whose
 * dedup windows outgrow the bound its reader accepts writes them trimmed (newest ids kept) rather
 * than a file it would refuse at the next start.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { EventsStoreError } from "../../../src/events/store/errors.ts";
import { SubscriptionTable, fairShare } from "../../../src/events/store/snapshot-table.ts";
import { SNAPSHOT_LIMITS, SNAPSHOT_VERSION, type ServerKeysData, type SubscriptionRecord } from "../../../src/events/store/snapshot.ts";
import { type EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import { snapFile, storeHarness } from "../../helpers/events-store.ts";

const { setup, openStore } = storeHarness("vigil-unit-events-snapshot-table", { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 } satisfies EventsStoreOptions);

/** The format's definition: the whole object through JSON.stringify (members in insertion order). */
function oracle(records: Map<string, SubscriptionRecord>, lastClientMs: number | null, serverKeys: ServerKeysData, position = 0): string {
  const subscriptions: Record<string, SubscriptionRecord> = {};
  for (const [key, record] of records) subscriptions[key] = record;
  const keys = Object.keys(serverKeys).length > 0 ? { server_keys: serverKeys } : {};
  return `${JSON.stringify({ version: SNAPSHOT_VERSION, position, subscriptions, ...keys, last_client_ms: lastClientMs })}\n`;
}

const key = (name: string, args = "{}") => `srv\u0000${name}\u0000${args}`;
const RECORDS: [string, SubscriptionRecord][] = [
  [key("ticket.updated"), { cursor: "c-1", recent: ["evt-1", "evt-2"] }],
  [key("déjà \u2028 \"vu\"", '{"q":"\\u0000 é"}'), { cursor: null, recent: [] }],
  [key("runtime"), {
    cursor: "7",
    recent: ["a\nb", "\u{1F600}"],
    runtime: { server: "srv", name: "runtime", arguments: { z: 1, a: [null, true] }, delivery: "poll", action: "follow_up" },
  } as SubscriptionRecord],
  [key("hooked"), {
    cursor: "9",
    recent: ["x"],
    webhook: { token: "0123456789abcdef0123456789abcdef", secret: `whsec_${"A".repeat(43)}=`, subscription_id: "sub-1" },
  } as SubscriptionRecord],
];

test("every change leaves the joined text equal to JSON.stringify of the whole snapshot", () => {
  const table = new SubscriptionTable();
  const mirror = new Map<string, SubscriptionRecord>();
  const check = (lastClientMs: number | null, serverKeys: ServerKeysData = {}) => {
    const want = oracle(mirror, lastClientMs, serverKeys);
    expect(table.serialize(0, lastClientMs, serverKeys)).toBe(want);
    // Far under the bound, what the store writes is the same text.
    expect(table.fitted(0, lastClientMs, serverKeys)).toBe(want);
  };

  check(null);
  for (const [k, r] of RECORDS) {
    table.set(k, r);
    mirror.set(k, r);
    check(1700000000000);
  }
  check(null, { "https://events.example.com:8443": ["k1", "k2"] });
  // Set again: same place, new text.
  const moved: SubscriptionRecord = { cursor: "c-2", recent: ["evt-2", "evt-3"] };
  table.set(RECORDS[0]![0], moved);
  mirror.set(RECORDS[0]![0], moved);
  check(5);
  // Forgotten, then set again: gone, then last.
  expect(table.delete(RECORDS[1]![0])).toBe(true);
  mirror.delete(RECORDS[1]![0]);
  check(5);
  expect(table.delete(RECORDS[1]![0])).toBe(false);
  table.set(RECORDS[1]![0], RECORDS[1]![1]);
  mirror.set(RECORDS[1]![0], RECORDS[1]![1]);
  check(5);
  expect(table.keys()).toEqual([...mirror.keys()]);
  expect(table.size).toBe(4);
  expect(table.get(RECORDS[0]![0])).toBe(moved);
});

test("records read back seed the table in the file's order", () => {
  const initial = Object.fromEntries(RECORDS);
  const table = new SubscriptionTable(initial);
  expect(table.serialize(0, 3)).toBe(oracle(new Map(RECORDS), 3, {}));
});

test("a store with 300 subscriptions, one changed per commit, writes a snapshot that reloads to every record", async () => {
  const dir = setup();
  const s = await openStore(dir);
  const window = (n: number) => Array.from({ length: 1024 }, (_, i) => `evt-${n}-${i}`);
  for (let i = 0; i < 300; i++) s.setSubscription(key("t", `{"i":${i}}`), { cursor: `c-${i}`, recent: window(i) });
  await s.commit();
  for (let page = 0; page < 5; page++) {
    s.setSubscription(key("t", `{"i":${page * 7}}`), { cursor: `moved-${page}`, recent: window(1000 + page) });
    await s.commit();
  }
  const written = readFileSync(snapFile(dir), "utf8");
  await s.close();

  const again = await openStore(dir);
  expect(again.subscriptionKeys().length).toBe(300);
  expect(again.subscription(key("t", '{"i":28}'))).toEqual({ cursor: "moved-4", recent: window(1004) });
  expect(again.subscription(key("t", '{"i":299}'))).toEqual({ cursor: "c-299", recent: window(299) });
  // Nothing changed since the reload: a commit rewrites nothing, and the text is the one on disk.
  const records = new Map(again.subscriptionKeys().map((k) => [k, again.subscription(k)!]));
  expect(written).toBe(oracle(records, again.lastClientMs, again.serverKeys));
  await again.close();
});

test("fairShare: the largest common cap that fits, windows under it kept whole", () => {
  expect(fairShare([10, 20, 300], 100)).toBe(70);
  expect(fairShare([300, 10, 20], 30)).toBe(10);
  expect(fairShare([5, 5], 100)).toBe(Number.POSITIVE_INFINITY);
  expect(fairShare([50, 50], 0)).toBe(0);
});

describe("a snapshot over the bound its reader accepts", () => {
  const ids = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${String(i).padStart(4, "0")}`);

  test("is written with the windows trimmed to a common share, newest ids kept, small windows whole", () => {
    const table = new SubscriptionTable({}, "test", 4096);
    table.set(key("small"), { cursor: "s", recent: ids("s", 3) });
    table.set(key("big"), { cursor: "b", recent: ids("b", 400) });
    table.set(key("bigger"), { cursor: "g", recent: ids("g", 1000) });
    const whole = table.serialize(0, null);
    expect(Buffer.byteLength(whole)).toBeGreaterThan(4096);
    const fitted = table.fitted(0, null);
    if (typeof fitted !== "string") throw fitted;
    expect(Buffer.byteLength(fitted)).toBeLessThanOrEqual(4096);
    // Close to the bound: nothing was cut that fitted (a share is at most one id short of it).
    expect(Buffer.byteLength(fitted)).toBeGreaterThan(4096 - 2 * 12);
    const subs = JSON.parse(fitted).subscriptions as Record<string, SubscriptionRecord>;
    expect(subs[key("small")]!.recent).toEqual(ids("s", 3));
    const big = subs[key("big")]!.recent;
    const bigger = subs[key("bigger")]!.recent;
    expect(big).toEqual(ids("b", 400).slice(-big.length));
    expect(bigger).toEqual(ids("g", 1000).slice(-bigger.length));
    expect(Math.abs(big.length - bigger.length)).toBeLessThanOrEqual(1);
    // The records themselves are whole: only the text written is trimmed.
    expect(table.get(key("bigger"))!.recent.length).toBe(1000);
    // Under the bound again: whole windows.
    table.delete(key("bigger"));
    table.set(key("big"), { cursor: "b", recent: ids("b", 10) });
    expect(table.fitted(0, null)).toBe(table.serialize(0, null));
  });

  test("that cannot fit even without windows is an error naming the sizes, not a write", () => {
    const table = new SubscriptionTable({}, "test", 300);
    for (let i = 0; i < 3; i++) table.set(key(`t${i}`), { cursor: "c".repeat(200), recent: ["x"] });
    const fitted = table.fitted(0, null);
    expect(fitted).toBeInstanceOf(EventsStoreError);
    expect((fitted as EventsStoreError).kind).toBe("write_failed");
    expect((fitted as EventsStoreError).message).toContain("over the 300-byte bound even without dedup windows");
  });

  test("a store whose windows outgrow the 64 MiB bound still reopens, with each window's newest ids", async () => {
    const dir = setup();
    const s = await openStore(dir);
    const long = (k: number, i: number) => `${"x".repeat(990)}-${k}-${i}`;
    for (let k = 0; k < 70; k++) s.setSubscription(key("t", `{"k":${k}}`), { cursor: `c-${k}`, recent: Array.from({ length: 1024 }, (_, i) => long(k, i)) });
    await s.commit();
    expect(statSync(snapFile(dir)).size).toBeLessThanOrEqual(SNAPSHOT_LIMITS.fileBytes);
    await s.close();

    const again = await openStore(dir);
    expect(again.subscriptionKeys().length).toBe(70);
    const r = again.subscription(key("t", '{"k":69}'))!;
    expect(r.cursor).toBe("c-69");
    expect(r.recent.length).toBeGreaterThan(900);
    expect(r.recent.length).toBeLessThan(1024);
    expect(r.recent.at(-1)).toBe(long(69, 1023));
  });
});
