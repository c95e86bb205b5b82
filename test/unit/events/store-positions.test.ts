/**
 * Subscription positions in the pending log (src/events/store/positions.ts): a page's cursor and
 * the ids its dedup window took ride in the log's append, the snapshot is a checkpoint written at
 * most once per CHECKPOINT_MS (and on close), and whatever a load starts from — snapshot plus the
 * log's positions above the one it covers — is exactly what the last durable append said.
 * The stores run on a frozen clock, so a checkpoint comes due only when a test moves it.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { COMMIT_DEBOUNCE_MS, type EventsStore, type EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import { CHECKPOINT_MS } from "../../../src/events/store/positions.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { setQuiet } from "../../../src/shared/log.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { LEDGER_SOURCE } from "../../helpers/events-ledger.ts";
import { logFile, snapFile, storeHarness } from "../../helpers/events-store.ts";
import { waitFor } from "../../helpers/wait.ts";

const DEFAULTS: EventsStoreOptions = { maxPending: 100_000, maxPendingBytes: 64 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-positions", DEFAULTS, () => setQuiet(false));
const KEY = subscriptionKey("srv", "ticket.updated", {});

const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => `e${from + i}`);
const entry = (id: string): Omit<PendingEntry, "seq"> => ({ action: "follow_up", server: "srv", name: "ticket.updated", arguments: {}, event: { eventId: id, data: { pad: "x".repeat(200) } } });
const logRecords = (dir: string) => readFileSync(logFile(dir), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, any>);
const snapshotOnDisk = (dir: string) => JSON.parse(readFileSync(snapFile(dir), "utf8")) as { version: string; position: number; subscriptions: Record<string, { cursor: string | null; recent: string[] }> };

/** A store on a frozen clock with one subscription record already on disk (its first snapshot). */
async function withRecord(dir: string, o: Partial<EventsStoreOptions> = {}): Promise<{ store: EventsStore; clock: FakeScheduler }> {
  const clock = new FakeScheduler();
  const store = await openStore(dir, { scheduler: clock, ...o });
  store.setSubscription(KEY, { cursor: null, recent: [] });
  await store.commit();
  return { store, clock };
}

/** One page: its events queued, then the subscription moved past them, then the commit. */
async function page(store: EventsStore, cursor: string, seen: string[], queue = true): Promise<void> {
  if (queue) for (const id of seen) store.tryAdd(entry(id));
  store.setPosition(KEY, cursor, seen);
  await store.commit();
}

describe("positions in the pending log", () => {
  test("pages move the cursor and window durably without a snapshot write each; a reopen starts after the last page", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    const snapshots = store.writes.snapshots;
    await page(store, "c1", ids(1, 3));
    await page(store, "c2", ids(4, 3));
    await page(store, "c3", ids(7, 2));
    expect(store.writes.snapshots).toBe(snapshots);
    expect(snapshotOnDisk(dir).subscriptions[KEY]).toEqual({ cursor: null, recent: [] });
    // The log says the rest, after each page's adds.
    const kinds = logRecords(dir).map((r) => Object.keys(r)[0]);
    expect(kinds.slice(-3)).toEqual(["add", "add", "position"]);
    expect(logRecords(dir).at(-1)!.position).toEqual({ n: 3, key: KEY, cursor: "c3", seen: ["e7", "e8"] });
    // What a kill -9 now restarts from (the reopen reads the files as they are).
    const again = await openStore(dir);
    expect(again.subscription(KEY)).toEqual({ cursor: "c3", recent: ids(1, 8) });
    expect(store.subscription(KEY)).toEqual({ cursor: "c3", recent: ids(1, 8) });
  });

  test("a checkpoint comes once CHECKPOINT_MS passed, by itself, and names the positions it covers", async () => {
    const dir = setup();
    const { store, clock } = await withRecord(dir);
    await page(store, "c1", ["a"]);
    await page(store, "c2", ["b"]);
    expect(snapshotOnDisk(dir).subscriptions[KEY]!.cursor).toBeNull();
    clock.advance(CHECKPOINT_MS + COMMIT_DEBOUNCE_MS);
    await waitFor(() => snapshotOnDisk(dir).subscriptions[KEY]!.cursor === "c2", { timeoutMs: 5000, label: "the checkpoint" });
    expect(snapshotOnDisk(dir)).toMatchObject({ version: "vigil.mcp-events.v3", position: 2 });
    // Nothing new: no further checkpoint is armed.
    const written = store.writes.snapshots;
    clock.advance(10 * CHECKPOINT_MS);
    await store.commit();
    expect(store.writes.snapshots).toBe(written);
  });

  test("positions a snapshot covers are not applied again, even when the log still holds them", async () => {
    const dir = setup();
    writeFileSync(snapFile(dir), `${JSON.stringify({ version: "vigil.mcp-events.v3", position: 5, subscriptions: { [KEY]: { cursor: "new", recent: ["x"] } }, last_client_ms: null })}\n`);
    const older = { position: { n: 4, key: KEY, cursor: "old", seen: ["y"] } };
    const newer = { position: { n: 6, key: KEY, cursor: "newest", seen: ["z"] } };
    const unknown = { position: { n: 7, key: "no such key", cursor: "c", seen: ["w"] } };
    writeFileSync(logFile(dir), `${[older, newer, unknown].map((r) => JSON.stringify(r)).join("\n")}\n`);
    const store = await openStore(dir, { scheduler: new FakeScheduler() });
    expect(store.subscription(KEY)).toEqual({ cursor: "newest", recent: ["x", "z"] });
    expect(store.subscription("no such key")).toBeUndefined();
    expect(store.skippedLines).toBe(0);
    // The numbering goes on past every number seen.
    store.setPosition(KEY, "next", []);
    await store.commit();
    expect(logRecords(dir).at(-1)!.position.n).toBe(8);
  });

  test("a window stays the newest 1,024 ids across positions and across a reopen", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    for (let i = 0; i < 5; i++) await page(store, `c${i}`, ids(i * 300, 300), false);
    const want = ids(1500 - 1024, 1024);
    expect(store.subscription(KEY)!.recent).toEqual(want);
    expect((await openStore(dir)).subscription(KEY)!.recent).toEqual(want);
  });

  test("a compaction keeps what the log's positions said: the rewrite carries the whole window", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    // Pages whose events are delivered at once: the log fills with dead records and is compacted.
    let n = 0;
    while (store.writes.compactions === 0) {
      const seen = ids(n, 50);
      n += 50;
      const seqs = seen.map((id) => store.tryAdd(entry(id))!.seq);
      store.setPosition(KEY, `c${n}`, seen);
      store.markDone(seqs);
      await store.commit();
    }
    expect(snapshotOnDisk(dir).subscriptions[KEY]!.cursor).not.toBe(`c${n}`);
    const whole = logRecords(dir).filter((r) => r.position !== undefined);
    expect(whole).toHaveLength(1);
    expect(whole[0]!.position).toMatchObject({ key: KEY, cursor: `c${n}`, whole: true });
    expect((await openStore(dir)).subscription(KEY)).toEqual({ cursor: `c${n}`, recent: ids(n - 1024, 1024) });
  });

  test("close writes the checkpoint: the snapshot alone then says the last position", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    await page(store, "c1", ["a"]);
    await page(store, "c2", ["b"]);
    await store.close();
    expect(snapshotOnDisk(dir)).toMatchObject({ position: 2, subscriptions: { [KEY]: { cursor: "c2", recent: ["a", "b"] } } });
  });

  test("a torn append that cut a page's position leaves the cursor before that page, never after it", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    await page(store, "c1", ["a"]);
    await page(store, "c2", ["b"]);
    await store.close();
    // The last line (the second page's position) cut short by a crash.
    const text = readFileSync(logFile(dir), "utf8");
    writeFileSync(logFile(dir), text.slice(0, text.length - 10));
    writeFileSync(snapFile(dir), readFileSync(snapFile(dir), "utf8").replace(/"position":\d+/, '"position":1').replace('"cursor":"c2","recent":["a","b"]', '"cursor":"c1","recent":["a"]'));
    const again = await openStore(dir);
    expect(again.subscription(KEY)).toEqual({ cursor: "c1", recent: ["a"] });
    expect(again.pending().map((e) => (e.event as { eventId: string }).eventId)).toEqual(["a", "b"]);
  });

  test("with the event ledger, a position after the last ledger record was never committed: set aside", async () => {
    setQuiet(true);
    const dir = setup();
    const ledger = { eventSource: LEDGER_SOURCE, sessionId: "s1" };
    const clock = new FakeScheduler();
    const store = await openStore(dir, { scheduler: clock, ledger });
    store.setSubscription(KEY, { cursor: null, recent: [] });
    store.tryAdd(entry("a"), { subscriptionKey: KEY, delivery: "poll" });
    store.setPosition(KEY, "c1", ["a"]);
    await store.commit();
    await store.close();
    // A later pass's add and position whose append was torn before its ledger record (its commit point).
    const torn = [{ add: { seq: 2, action: "follow_up", server: "srv", name: "ticket.updated", arguments: {}, event: { eventId: "b" } } }, { position: { n: 2, key: KEY, cursor: "c2", seen: ["b"] } }];
    writeFileSync(logFile(dir), `${readFileSync(logFile(dir), "utf8")}${torn.map((r) => JSON.stringify(r)).join("\n")}\n`);
    writeFileSync(snapFile(dir), readFileSync(snapFile(dir), "utf8").replace(/"position":\d+/, '"position":0').replace('"cursor":"c1","recent":["a"]', '"cursor":null,"recent":[]'));
    const again = await openStore(dir, { scheduler: new FakeScheduler(), ledger });
    expect(again.subscription(KEY)).toEqual({ cursor: "c1", recent: ["a"] });
    expect(again.pending().map((e) => e.seq)).toEqual([1]);
  });

  test("a position for an unknown key, or one the snapshot could not hold, is refused and records nothing", async () => {
    const dir = setup();
    const { store } = await withRecord(dir);
    const before = store.unwrittenBytes;
    expect(() => store.setPosition("other", "c", [])).toThrow("set one first");
    expect(() => store.setPosition(KEY, "c".repeat(65_537), [])).toThrow("cursor");
    expect(() => store.setPosition(KEY, "c", ["i".repeat(1025)])).toThrow("event id");
    expect(store.unwrittenBytes).toBe(before);
    expect(store.subscription(KEY)).toEqual({ cursor: null, recent: [] });
  });
});
