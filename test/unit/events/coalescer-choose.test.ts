/**
 * What one coalescer firing chooses (coalescer.ts `chooseBatch`), against a real EventsStore: steer
 * events first wherever they sit in the queue, follow-ups only when the session is idle, at most
 * MAX_BATCH, never an entry already in a batch — and the store's steer count, which lets a firing
 * skip the search for steer events, follows adds, completions and a reopen.
 */
import { afterEach, expect, test } from "bun:test";
import { MAX_BATCH, chooseBatch } from "../../../src/events/coalescer.ts";
import { EventsStore } from "../../../src/events/store/events-store.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const dirs: { cleanup(): void }[] = [];
const stores: EventsStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  for (const d of dirs.splice(0)) d.cleanup();
});

async function open(path?: string): Promise<{ store: EventsStore; path: string }> {
  const dir = path === undefined ? tmpDir("vigil-unit-coalescer-choose") : null;
  if (dir !== null) dirs.push(dir);
  const store = await EventsStore.open(path ?? dir!.path, { maxPending: 10_000, maxPendingBytes: 64 * 1024 * 1024 });
  stores.push(store);
  return { store, path: path ?? dir!.path };
}

function add(store: EventsStore, i: number, action: PendingEntry["action"] = "follow_up"): number {
  return store.tryAdd({ action, server: "srv", name: "changed", arguments: {}, event: { eventId: `e${i}`, data: i } })!.seq;
}
const seqs = (xs: readonly PendingEntry[]) => xs.map((e) => e.seq);

test("busy: only steer events are chosen, wherever they are in the queue; none: nothing", async () => {
  const { store } = await open();
  for (let i = 0; i < 200; i++) add(store, i);
  expect(chooseBatch(store, new Set(), false)).toEqual([]);
  const late = add(store, 200, "steer");
  for (let i = 201; i < 260; i++) add(store, i);
  expect(seqs(chooseBatch(store, new Set(), false))).toEqual([late]);
  // Steer first even when idle, and a steer already in a batch is not chosen again.
  expect(seqs(chooseBatch(store, new Set(), true))).toEqual([late]);
  expect(seqs(chooseBatch(store, new Set([late]), false))).toEqual([]);
});

test(`idle: the first ${MAX_BATCH} entries not in a batch, in seq order`, async () => {
  const { store } = await open();
  const all = Array.from({ length: 120 }, (_, i) => add(store, i));
  const inBatch = new Set(all.slice(0, 10));
  expect(seqs(chooseBatch(store, inBatch, true))).toEqual(all.slice(10, 10 + MAX_BATCH));
});

test("the steer count follows adds, completions and a reopen", async () => {
  const { store, path } = await open();
  add(store, 1);
  const a = add(store, 2, "steer");
  add(store, 3, "steer");
  expect(store.steerCount).toBe(2);
  store.markDone([a]);
  store.markDone([a]);
  expect(store.steerCount).toBe(1);
  await store.close();
  const { store: reopened } = await open(path);
  expect(reopened.steerCount).toBe(1);
  expect([...reopened.pendingInOrder()].map((e) => e.action)).toEqual(["follow_up", "steer"]);
});
