/**
 * Outage-tolerant delivery, the pure parts and the store (serve.md §5 "Outages are not attempts",
 * §6 item 5): the backoff schedule, which returned events count an attempt or are dropped, and the
 * attempts counts kept in the pending log — read back on load, kept by a compaction, and harmless
 * when a record is replayed twice.
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, statSync } from "node:fs";
import { MAX_ATTEMPTS, MODEL_BACKOFF_START_MS, droppedError, judgeReturned, modelBackoffMs } from "../../../src/events/delivery-rules.ts";
import type { EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { logFile, storeHarness } from "../../helpers/events-store.ts";

const DEFAULTS: EventsStoreOptions = { maxPending: 1000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-delivery-attempts", DEFAULTS);

function ev(i: number, pad = 0): Omit<PendingEntry, "seq"> {
  return { action: "follow_up", server: "srv", name: "changed", arguments: {}, event: { eventId: `e${i}`, data: "x".repeat(pad) } };
}

describe("the backoff while the model is unavailable", () => {
  test("1 s doubling to the cap, and staying there however long the outage lasts", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => modelBackoffMs(n, 300_000))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
    ]);
    expect(modelBackoffMs(1_000_000, 300_000)).toBe(300_000);
    expect(modelBackoffMs(1, 250)).toBe(250);
    expect(modelBackoffMs(1, 300_000)).toBe(MODEL_BACKOFF_START_MS);
  });
});

describe("attempt accounting of a returned batch", () => {
  const attempts = new Map([[1, 0], [2, MAX_ATTEMPTS - 1]]);
  const of = (seq: number) => attempts.get(seq) ?? 0;

  test("an outage counts nothing and drops nothing", () => {
    expect(judgeReturned([1, 2], of, true)).toEqual({ counted: new Map(), dropped: [] });
  });

  test(`any other return counts one attempt; the ${MAX_ATTEMPTS}rd drops the event`, () => {
    expect(judgeReturned([1, 2], of, false)).toEqual({ counted: new Map([[1, 1]]), dropped: [2] });
  });
});

describe("the error of a dropped event says what became of its last attempt", () => {
  test("a refused request, a client abort, a failed sync", () => {
    expect(droppedError({ status: "failed", succeeded: false, error: "model HTTP 400: bad request" })).toBe(
      `dropped after ${MAX_ATTEMPTS} attempts; the last run failed: model HTTP 400: bad request`,
    );
    expect(droppedError({ status: "aborted", succeeded: false, error: "aborted by the client" })).toBe(
      `dropped after ${MAX_ATTEMPTS} attempts; the last run was aborted: aborted by the client`,
    );
    expect(droppedError({ status: "ok", succeeded: false })).toBe(`dropped after ${MAX_ATTEMPTS} attempts; the last run ended but its transcript could not be synced`);
    // Never the old claim, which was false for a model that received the batch and refused it.
    expect(droppedError({ status: "failed", succeeded: false })).not.toContain("never reached the model");
  });
});

describe("attempts in the pending log", () => {
  test("read back on load; a done entry's count goes with it", async () => {
    const dir = setup();
    const s = await openStore(dir);
    for (let i = 1; i <= 3; i++) s.tryAdd(ev(i));
    s.setAttempts(new Map([[1, 2], [2, 1]]));
    s.markDone([2]);
    await s.commit();
    expect(readFileSync(logFile(dir), "utf8")).toContain('{"attempts":[[1,2],[2,1]]}');
    await s.close();
    const r = await openStore(dir);
    expect([1, 2, 3].map((seq) => r.attemptsOf(seq))).toEqual([2, 0, 0]);
    expect(r.skippedLines).toBe(0);
  });

  test("a record replayed twice (a retried write) says the same; one for a seq not live is ignored", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.tryAdd(ev(1));
    s.setAttempts(new Map([[1, 1]]));
    await s.commit();
    await s.close();
    const text = readFileSync(logFile(dir), "utf8");
    appendFileSync(logFile(dir), `${text}{"attempts":[[99,2]]}\n`);
    const r = await openStore(dir);
    expect(r.attemptsOf(1)).toBe(1);
    expect(r.attemptsOf(99)).toBe(0);
    expect(r.skippedLines).toBe(0);
  });

  test("a malformed attempts record is skipped, not applied", async () => {
    const dir = setup();
    const s = await openStore(dir);
    s.tryAdd(ev(1));
    await s.commit();
    await s.close();
    appendFileSync(logFile(dir), '{"attempts":[[1,-1]]}\n{"attempts":[[1]]}\n{"attempts":{"1":2}}\n');
    const r = await openStore(dir);
    expect(r.attemptsOf(1)).toBe(0);
    expect(r.skippedLines).toBe(3);
  });

  test("a compaction keeps every live entry's count, and the compacted log is exactly the live bytes", async () => {
    const dir = setup();
    const s = await openStore(dir);
    for (let i = 1; i <= 600; i++) s.tryAdd(ev(i, 2000));
    await s.commit();
    s.setAttempts(new Map([[1, 2], [301, 1]]));
    s.markDone(s.pending().map((e) => e.seq).filter((q) => q !== 1 && q !== 301 && q !== 302));
    await s.commit();
    expect(s.writes.compactions).toBe(1);
    expect(statSync(logFile(dir)).size).toBe(s.pendingBytes);
    await s.close();
    const r = await openStore(dir);
    expect(r.pending().map((e) => [e.seq, r.attemptsOf(e.seq)])).toEqual([[1, 2], [301, 1], [302, 0]]);
  });
});
