/**
 * The event ledger opened for the first time over a pending queue that already holds entries
 * (queued by an older vigil, or before `evidence` was configured): each live entry gets its
 * received ("restored") or gap record first, written ahead through the pending log like any other
 * line, so the delivered and dropped records that follow name seqs the ledger received. And the
 * ledger's pending set (what a stop statement names) is the one after its durable lines.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { chainAnchor } from "../../../src/evidence/chain.ts";
import type { EventsStoreOptions, FaultOp } from "../../../src/events/store/events-store.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { canonicalSha256, sha256Hex } from "../../../src/shared/digest.ts";
import { setQuiet } from "../../../src/shared/log.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { LEDGER_SOURCE } from "../../helpers/events-ledger.ts";
import { expectLedgerChained, ledgerFile, ledgerRecords, logFile, rejection, storeHarness } from "../../helpers/events-store.ts";
import { waitFor } from "../../helpers/wait.ts";

const SOURCE = LEDGER_SOURCE;
const SESSION = "s1";
const LEDGER = { eventSource: SOURCE, sessionId: SESSION };
const DEFAULTS: EventsStoreOptions = { maxPending: 5000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-ledger-restore", DEFAULTS, () => setQuiet(false));
afterEach(() => setQuiet(false));
const ANCHOR = chainAnchor(SOURCE, SESSION, "events.ndjson");
const FACTS = { subscriptionKey: subscriptionKey("tickets", "build.finished", { repo: "a" }), delivery: "poll" as const };

const entry = (i: number): Omit<PendingEntry, "seq"> => ({ action: "follow_up", server: "tickets", name: "build.finished", arguments: { repo: "a" }, event: { eventId: `e${i}`, data: { n: i } } });
const gapEntry: Omit<PendingEntry, "seq"> = { action: "steer", server: "tickets", name: "ticket.updated", arguments: {}, event: { gap: true, cursor: "c7", reason: "truncated", eventId: null } };


/** The ledger's accounting as `vigil verify` does it: seqs queued and not settled, and seqs settled that were never queued. */
function accounting(dir: string) {
  const queued = new Set<number>();
  const pending = new Set<number>();
  const unknown: number[] = [];
  for (const r of ledgerRecords(dir)) {
    if ((r.type.endsWith(".received.v1") || r.type.endsWith(".gap.v1")) && r.data.seq !== null) (queued.add(r.data.seq), pending.add(r.data.seq));
    const settled: number[] = r.type.endsWith(".delivered.v1") ? r.data.seqs : r.type.endsWith(".dropped.v1") ? [r.data.seq] : [];
    for (const s of settled) (queued.has(s) ? pending.delete(s) : unknown.push(s));
  }
  return { pending: [...pending].sort((a, b) => a - b), unknown };
}

const chained = (dir: string) => expectLedgerChained(dir, SESSION);

/** A pending log written without the ledger: two events and a gap queued, one of them done. */
async function queuedWithoutLedger(dir: string): Promise<number[]> {
  const plain = await openStore(dir);
  const seqs = [plain.tryAdd(entry(1))!.seq, plain.tryAdd(gapEntry)!.seq, plain.tryAdd(entry(3))!.seq, plain.tryAdd(entry(4))!.seq];
  plain.markDone([seqs[3]!]);
  await plain.close();
  expect(existsSync(ledgerFile(dir))).toBe(false);
  return seqs.slice(0, 3);
}

describe("first open of the ledger over live entries", () => {
  test("each live entry gets its record (received restored, or gap), in seq order; then deliveries are accounted", async () => {
    const dir = setup();
    const live = await queuedWithoutLedger(dir);
    const written: number[] = [];
    const s = await openStore(dir, { ledger: { ...LEDGER, onWritten: (n) => written.push(n) }, scheduler: new FakeScheduler() });
    // Built on open, written by the first pass (not before: write-ahead through the pending log).
    expect(s.ledger!.unconfirmedCount).toBe(3);
    expect(s.ledger!.head()).toEqual({ count: 0, head: ANCHOR });
    expect(s.ledger!.pendingSeqs()).toEqual([]);
    await s.commit();
    expect(written).toEqual([3]);
    expect(s.ledger!.pendingSeqs()).toEqual(live);
    const recs = ledgerRecords(dir);
    expect(recs.map((r) => r.type)).toEqual(["vigil.mcp.event.received.v1", "vigil.mcp.event.gap.v1", "vigil.mcp.event.received.v1"]);
    expect(recs[0]!.data).toEqual({
      session_id: SESSION, seq: live[0], server: "tickets", event_name: "build.finished", subscription_key_sha256: sha256Hex(FACTS.subscriptionKey),
      delivery_mode: "restored", action: "follow_up", event_id: "e1", payload_sha256: canonicalSha256({ eventId: "e1", data: { n: 1 } }),
    });
    expect(recs[1]!.data).toEqual({
      session_id: SESSION, seq: live[1], server: "tickets", event_name: "ticket.updated", subscription_key_sha256: sha256Hex(subscriptionKey("tickets", "ticket.updated", {})),
      reason: "truncated", cursor: "c7",
    });
    // The pending log embedded them (the commit point) before events.ndjson got them.
    expect(readFileSync(logFile(dir), "utf8")).toContain('{"ledger":{"from":0,"lines":[');

    s.markDone([live[0]!, live[1]!], { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
    s.markDone([live[2]!], { dropped: { attempts: 3, errorCode: "run_failed" } });
    await s.close();
    expect(chained(dir).count).toBe(5);
    expect(accounting(dir)).toEqual({ pending: [], unknown: [] });
    expect(s.ledger!.pendingSeqs()).toEqual([]);

    // Reopened: the ledger has records, nothing is restored again.
    const again = await openStore(dir, { ledger: LEDGER });
    expect(again.ledger!.unconfirmedCount).toBe(0);
    expect(chained(dir).count).toBe(5);
  });

  test("without any commit the store writes them soon (a background commit), and its close writes them too", async () => {
    const dir = setup();
    const live = await queuedWithoutLedger(dir);
    const scheduler = new FakeScheduler();
    const s = await openStore(dir, { ledger: LEDGER, scheduler });
    scheduler.advance(1000);
    // Nobody commits: the background pass writes them.
    await waitFor(() => accounting(dir).pending, { until: (p) => p.length === live.length, timeoutMs: 5000, label: "the restored records written" });
    expect(accounting(dir).pending).toEqual(live);
    await s.close();

    const other = setup();
    const seqs = await queuedWithoutLedger(other);
    const t = await openStore(other, { ledger: LEDGER, scheduler: new FakeScheduler() });
    await t.close();
    expect(accounting(other).pending).toEqual(seqs);
  });

  test("a crash after the pass's commit point: the restart appends the embedded lines and restores nothing twice", async () => {
    setQuiet(true);
    const dir = setup();
    const live = await queuedWithoutLedger(dir);
    const armed = new Set<FaultOp>(["ledger_append"]);
    const fault = (op: FaultOp) => {
      if (armed.has(op)) throw Object.assign(new Error(`EIO: injected at ${op}`), { code: "EIO" });
    };
    const s = await openStore(dir, { ledger: LEDGER, fault, scheduler: new FakeScheduler() });
    await rejection(s.commit());
    expect(existsSync(ledgerFile(dir))).toBe(false);

    const r = await openStore(dir, { ledger: LEDGER, scheduler: new FakeScheduler() });
    expect(r.ledger!.unconfirmedCount).toBe(0);
    expect(chained(dir).count).toBe(3);
    expect(accounting(dir).pending).toEqual(live);
    expect(r.ledger!.pendingSeqs()).toEqual(live);
  });

  test("a crash before the commit point (nothing of the pass landed): the restart restores them again, once", async () => {
    setQuiet(true);
    const dir = setup();
    const live = await queuedWithoutLedger(dir);
    const fault = (op: FaultOp) => {
      if (op === "log_append") throw Object.assign(new Error("EIO: injected"), { code: "EIO" });
    };
    const s = await openStore(dir, { ledger: LEDGER, fault, scheduler: new FakeScheduler() });
    await rejection(s.commit());
    const r = await openStore(dir, { ledger: LEDGER, scheduler: new FakeScheduler() });
    await r.commit();
    expect(chained(dir).count).toBe(3);
    expect(accounting(dir).pending).toEqual(live);
  });
});

describe("the pending set a stop names", () => {
  test("is the one after the durable lines: a change not yet written is not in it", async () => {
    setQuiet(true);
    const dir = setup();
    const armed = new Set<FaultOp>();
    const fault = (op: FaultOp) => {
      if (armed.has(op)) throw Object.assign(new Error(`EIO: injected at ${op}`), { code: "EIO" });
    };
    const s = await openStore(dir, { ledger: LEDGER, fault });
    const a = s.tryAdd(entry(1), FACTS)!;
    const b = s.tryAdd(entry(2), FACTS)!;
    await s.commit();
    expect(s.ledger!.pendingSeqs()).toEqual([a.seq, b.seq]);
    armed.add("ledger_append");
    s.markDone([a.seq], { delivered: { batchTag: "t", runId: "r" } });
    s.tryAdd(entry(3), FACTS);
    await rejection(s.commit());
    // The queue moved on in memory; the ledger on disk did not: the stop names what the ledger says.
    expect(s.pending().map((e) => e.seq)).not.toEqual([a.seq, b.seq]);
    expect(s.ledger!.pendingSeqs()).toEqual([a.seq, b.seq]);
    expect(accounting(dir).pending).toEqual(s.ledger!.pendingSeqs());
    armed.clear();
    await s.commit();
    expect(accounting(dir).pending).toEqual(s.ledger!.pendingSeqs());
    expect(s.ledger!.pendingSeqs()).toEqual(s.pending().map((e) => e.seq));
  });

  test("on open it is the store's live entries (which the recovered ledger agrees with)", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    for (let i = 1; i <= 3; i++) s.tryAdd(entry(i), FACTS);
    s.markDone([2], { delivered: { batchTag: "t", runId: "r" } });
    await s.close();
    const r = await openStore(dir, { ledger: LEDGER });
    expect(r.ledger!.pendingSeqs()).toEqual([1, 3]);
    expect(accounting(dir).pending).toEqual([1, 3]);
  });
});
