/** The events store: the pending queue, its bounds, the snapshot, and what each commit writes (serve.md §3, §6 item 5). */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { COMMIT_DEBOUNCE_MS, EventsStore, type EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import { EventsStoreError } from "../../../src/events/store/errors.ts";
import { serializeAdd } from "../../../src/events/store/pending-log.ts";
import type { PendingEntry, SubscriptionSpec } from "../../../src/events/types.ts";
import { EVENTS_SNAPSHOT_FILE } from "../../../src/events/store/files.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { waitUntil } from "../../helpers/fixture.ts";
import { logFile, rejection, snapFile, storeHarness } from "../../helpers/events-store.ts";

const DEFAULTS: EventsStoreOptions = { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-store", DEFAULTS);

function ev(i: number, pad = 0): Omit<PendingEntry, "seq"> {
  return { action: "follow_up", server: "srv", name: "changed", arguments: { repo: "a" }, event: { eventId: `e${i}`, data: "x".repeat(pad) } };
}
const lineBytes = (e: Omit<PendingEntry, "seq">, seq: number) => Buffer.byteLength(serializeAdd({ ...e, seq } as PendingEntry));
const ids = (s: EventsStore) => s.pending().map((e) => (e.event as { eventId: string }).eventId);

const SPEC: SubscriptionSpec = { server: "srv", name: "changed", arguments: { repo: "a" }, delivery: "poll", action: "follow_up", instructions: "triage" };


describe("nothing is written while there is nothing to persist", () => {
  test("open, commit, scheduled commit, no-op changes, close: no files", async () => {
    const dir = setup();
    const scheduler = new FakeScheduler();
    const s = await openStore(dir, { scheduler });
    s.markDone([1, 2]);
    s.forgetSubscription("nope");
    await s.commit();
    s.scheduleCommit();
    scheduler.advance(COMMIT_DEBOUNCE_MS);
    await s.commit(); // settles after the commit the timer started
    await s.close();
    expect(readdirSync(dir)).toEqual([]);
    expect(s.writes).toEqual({ logAppends: 0, logSyncs: 0, snapshots: 0, compactions: 0, logBytes: 0 });
  });

  test("a snapshot-only change writes the snapshot (0600) and no log", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.setLastClientMs(1_790_000_000_000);
    await s.commit();
    expect(readdirSync(dir)).toEqual([EVENTS_SNAPSHOT_FILE]);
    expect(lstatSync(snapFile(dir)).mode & 0o777).toBe(0o600);
    expect(s.writes.snapshots).toBe(1);
    await s.commit();
    expect(s.writes.snapshots).toBe(1);
  });
});

describe("the pending queue", () => {
  test("survives a reopen: adds minus dones, seq order, the next seq continues", async () => {
    const dir = setup();
    const a = await openStore(dir);
    const added = [1, 2, 3, 4].map((i) => a.tryAdd(ev(i)));
    expect(added.map((e) => e?.seq)).toEqual([1, 2, 3, 4]);
    a.markDone([2, 99, 4]);
    expect(a.pending().map((e) => e.seq)).toEqual([1, 3]);
    await a.commit();
    expect(lstatSync(logFile(dir)).mode & 0o777).toBe(0o600);
    await a.close();

    const b = await openStore(dir);
    expect(b.pending()).toEqual([{ seq: 1, ...ev(1) }, { seq: 3, ...ev(3) }]);
    expect(b.pendingBytes).toBe(lineBytes(ev(1), 1) + lineBytes(ev(3), 3));
    expect(b.tryAdd(ev(5))?.seq).toBe(5);
    await b.close();
    const c = await openStore(dir);
    expect(ids(c)).toEqual(["e1", "e3", "e5"]);
  });

  test("the stored entry is a private copy; a caller's later change does not reach it", async () => {
    const s = await openStore(setup());
    const input = ev(1);
    const stored = s.tryAdd(input);
    (input.event as { eventId: string }).eventId = "changed";
    (input.arguments as { repo: string }).repo = "changed";
    expect(stored).toEqual({ seq: 1, ...ev(1) });
    expect(s.pending()[0]).toEqual({ seq: 1, ...ev(1) });
    expect(() => s.tryAdd({ ...ev(2), event: 7 as never })).toThrow(EventsStoreError);
    expect(s.pendingCount).toBe(1);
  });

  test("unparseable log lines are skipped and counted", async () => {
    const dir = setup();
    const good = (seq: number) => serializeAdd({ ...ev(seq), seq } as PendingEntry);
    writeFileSync(logFile(dir), `${good(1)}not json\n{"add":{"seq":"x"}}\n${good(2)}{"done":[1]}\n`);
    const s = await openStore(dir);
    expect(s.skippedLines).toBe(2);
    expect(s.pending().map((e) => e.seq)).toEqual([2]);
  });

  test("back-pressure at the count cap records nothing", async () => {
    const s = await openStore(setup(), { maxPending: 3 });
    for (let i = 1; i <= 3; i++) expect(s.tryAdd(ev(i))).not.toBeNull();
    expect(s.tryAdd(ev(4))).toBeNull();
    await s.commit();
    expect(s.pendingCount).toBe(3);
    expect(s.writes.logBytes).toBe([1, 2, 3].reduce((n, i) => n + lineBytes(ev(i), i), 0));
    s.markDone([1]);
    expect(s.tryAdd(ev(4))?.seq).toBe(4); // the refusal did not use up a seq
  });

  test("back-pressure at the byte cap; one oversized entry still fits an empty queue", async () => {
    const line = lineBytes(ev(1, 100), 1);
    const s = await openStore(setup(), { maxPendingBytes: Math.floor(line * 2.5) });
    expect(s.tryAdd(ev(1, 100))).not.toBeNull();
    expect(s.tryAdd(ev(2, 100))).not.toBeNull();
    const before = s.writes;
    expect(s.tryAdd(ev(3, 100))).toBeNull();
    expect(s.pendingCount).toBe(2);
    expect(s.pendingBytes).toBe(line * 2);
    s.markDone([1, 2]);
    const big = s.tryAdd(ev(4, line * 10));
    expect(big?.seq).toBe(3);
    expect(s.pendingBytes).toBeGreaterThan(line * 2.5);
    expect(s.tryAdd(ev(5))).toBeNull();
    await s.commit();
    expect(s.writes.logAppends).toBe(before.logAppends + 1);
    s.markDone([3]);
    expect(s.tryAdd(ev(6))?.seq).toBe(4);
  });
});

describe("commits", () => {
  test("commit cost tracks the change, not the queue", async () => {
    const dir = setup();
    const s = await openStore(dir);
    for (let i = 1; i <= 300; i++) s.tryAdd(ev(i, 1000));
    await s.commit();
    const w0 = s.writes;
    const size0 = statSync(logFile(dir)).size;
    expect(size0).toBeGreaterThan(300_000);

    s.tryAdd(ev(301, 10));
    await s.commit();
    const added = lineBytes(ev(301, 10), 301);
    expect(s.writes.logBytes - w0.logBytes).toBe(added);
    expect(statSync(logFile(dir)).size - size0).toBe(added);
    expect(s.writes.logAppends - w0.logAppends).toBe(1);
    expect(s.writes.logSyncs - w0.logSyncs).toBe(1);

    s.markDone([7]);
    await s.commit();
    expect(s.writes.logBytes - w0.logBytes).toBe(added + '{"done":[7]}\n'.length);
  });

  test("concurrent commits share syncs", async () => {
    const dir = setup();
    const s = await openStore(dir);
    const commits: Promise<void>[] = [];
    for (let i = 1; i <= 20; i++) {
      s.tryAdd(ev(i));
      commits.push(s.commit());
    }
    await Promise.all(commits);
    expect(s.writes.logSyncs).toBeLessThan(20);
    await s.close();
    expect((await openStore(dir)).pendingCount).toBe(20);
  });

  test("a scheduled commit lands without anyone waiting", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.tryAdd(ev(1));
    s.setLastClientMs(5);
    s.scheduleCommit();
    expect(await waitUntil(() => existsSync(snapFile(dir)), 2000)).toBe(true);
    expect(s.writes.logAppends).toBe(1);
  });

  test("close writes once more, is idempotent, and refuses changes after", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.tryAdd(ev(1));
    await Promise.all([s.close(), s.close()]);
    await s.close();
    expect(() => s.tryAdd(ev(2))).toThrow(EventsStoreError);
    expect(() => s.setLastClientMs(1)).toThrow("closed");
    await s.commit(); // nothing left to write
    expect(ids(await openStore(dir))).toEqual(["e1"]);
  });
});

describe("the snapshot", () => {
  test("the newest snapshot wins; an unchanged one is not rewritten", async () => {
    const dir = setup();
    const s = await openStore(dir);
    for (let i = 0; i < 5; i++) {
      s.setSubscription("k", { cursor: String(i), recent: [`e${i}`] });
      await s.commit();
    }
    expect(s.writes.snapshots).toBe(5);
    s.setSubscription("k", { cursor: "4", recent: ["e4"] });
    await s.commit();
    expect(s.writes.snapshots).toBe(5);
    await s.close();
    const r = await openStore(dir);
    expect(r.subscription("k")).toEqual({ cursor: "4", recent: ["e4"] });
    expect(JSON.parse(readFileSync(snapFile(dir), "utf8")).version).toBe("vigil.mcp-events.v3");
  });

  test("records are copied, recent keeps the newest 1024, and an unreadable record is refused", async () => {
    const s = await openStore(setup());
    const recent = Array.from({ length: 1500 }, (_, i) => `e${i}`);
    const runtime = structuredClone(SPEC);
    s.setSubscription("k", { cursor: null, recent, runtime });
    recent.push("late");
    runtime.arguments.repo = "b";
    const got = s.subscription("k");
    expect(got?.recent.length).toBe(1024);
    expect(got?.recent[0]).toBe("e476");
    expect(got?.recent.at(-1)).toBe("e1499");
    expect(got?.runtime).toEqual(SPEC);
    got?.recent.push("mine");
    expect(s.subscription("k")?.recent.length).toBe(1024);
    expect(() => s.setSubscription("k2", { cursor: null, recent: ["x".repeat(1025)] })).toThrow(EventsStoreError);
    expect(() => s.setSubscription("__proto__", { cursor: null, recent: [] })).toThrow(EventsStoreError);
    expect(s.subscriptionKeys()).toEqual(["k"]);
  });

  test("forgetSubscription removes the whole record", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.setSubscription("gone\0a\0{}", { cursor: "c-secret-17", recent: ["gone-evt"], runtime: SPEC });
    s.setSubscription("kept", { cursor: "9", recent: [] });
    await s.commit();
    s.forgetSubscription("gone\0a\0{}");
    await s.commit();
    const text = readFileSync(snapFile(dir), "utf8");
    for (const needle of ["gone", "c-secret-17", "triage"]) expect(text).not.toContain(needle);
    await s.close();
    const r = await openStore(dir);
    expect(r.subscriptionKeys()).toEqual(["kept"]);
  });

  test("readSnapshot returns runtime specs and last_client_ms", async () => {
    const dir = setup();
    expect(await EventsStore.readSnapshot(dir)).toBeUndefined();
    const s = await openStore(dir);
    s.setSubscription("rt", { cursor: "3", recent: ["a"], runtime: SPEC });
    s.setSubscription("cfg", { cursor: null, recent: [] });
    s.setLastClientMs(1234);
    await s.commit();
    expect(await EventsStore.readSnapshot(dir)).toEqual({
      position: 0,
      subscriptions: { rt: { cursor: "3", recent: ["a"], runtime: SPEC }, cfg: { cursor: null, recent: [] } },
      server_keys: {},
      last_client_ms: 1234,
    });
    expect(readdirSync(dir)).toEqual([EVENTS_SNAPSHOT_FILE]);
  });

  const corrupt: Array<[string, string]> = [
    ["not JSON", "{"],
    ["another version", JSON.stringify({ version: "vigil.mcp-events.v0", subscriptions: {}, last_client_ms: null })],
    ["an unknown key", JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: {}, last_client_ms: null, extra: 1 })],
    ["a bad record", JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: { k: { cursor: 5, recent: [] } }, last_client_ms: null })],
    ["too long a window", JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: { k: { cursor: null, recent: Array(1025).fill("e") } }, last_client_ms: null })],
    ["a bad runtime spec", JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: { k: { cursor: null, recent: [], runtime: { ...SPEC, action: "shout" } } }, last_client_ms: null })],
  ];
  for (const [what, text] of corrupt) {
    test(`a snapshot with ${what} is refused with a clear error, and left alone`, async () => {
      const dir = setup();
      writeFileSync(snapFile(dir), text);
      for (const e of [await rejection(EventsStore.open(dir, DEFAULTS)), await rejection(EventsStore.readSnapshot(dir))]) {
        expect(e.kind).toBe("snapshot_invalid");
        expect(e.message).toContain(snapFile(dir));
        expect(e.message).toContain("invalid");
      }
      expect(readFileSync(snapFile(dir), "utf8")).toBe(text);
    });
  }
});
