/**
 * The event ledger `events.ndjson` of the events store (serve.md "Evidence"; store/ledger.ts):
 * written ahead through the pending log, so the two agree after any crash — a crash between the
 * pending log's sync and the ledger's append, a torn ledger tail, a compaction while ledger
 * appends fail, a torn pass of the pending log — and a ledger that contradicts the pending log is
 * refused. Crashes are the store's fault seam (`fault`) plus a second store opened on the files.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { chainAnchor } from "../../../src/evidence/chain.ts";
import type { ArrivalFacts, EventsStore, EventsStoreOptions } from "../../../src/events/store/events-store.ts";
import { serializeAdd } from "../../../src/events/store/pending-log.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";
import { setQuiet } from "../../../src/shared/log.ts";
import { LEDGER_SOURCE } from "../../helpers/events-ledger.ts";
import { expectLedgerChained, faults, ledgerFile, ledgerLines, ledgerRecords, logFile, rejection, storeHarness } from "../../helpers/events-store.ts";

const SOURCE = LEDGER_SOURCE;
const SESSION = "s1";
const LEDGER = { eventSource: SOURCE, sessionId: SESSION };
const DEFAULTS: EventsStoreOptions = { maxPending: 5000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-store-ledger", DEFAULTS, () => setQuiet(false));
afterEach(() => setQuiet(false));

const FACTS: ArrivalFacts = { subscriptionKey: "tickets\u0000build.finished\u0000{}", delivery: "poll" };
const ANCHOR = chainAnchor(SOURCE, SESSION, "events.ndjson");

function ev(i: number, pad = 0): Omit<PendingEntry, "seq"> {
  return { action: "follow_up", server: "tickets", name: "build.finished", arguments: {}, event: { eventId: `e${i}`, data: "x".repeat(pad) } };
}

const chained = (dir: string) => expectLedgerChained(dir, SESSION);

/** The ledger records embedded in the pending log, in file order. */
const embedded = (dir: string) =>
  readFileSync(logFile(dir), "utf8").split("\n").filter((l) => l.startsWith('{"ledger":')).map((l) => (JSON.parse(l) as { ledger: { from: number; lines: string[] } }).ledger);

/** Seqs the ledger still holds pending: queued arrivals minus delivered and dropped. */
function ledgerPending(dir: string): number[] {
  const pending = new Set<number>();
  for (const r of ledgerRecords(dir)) {
    if ((r.type.endsWith(".received.v1") || r.type.endsWith(".gap.v1")) && r.data.seq !== null) pending.add(r.data.seq);
    if (r.type.endsWith(".delivered.v1")) for (const s of r.data.seqs) pending.delete(s);
    if (r.type.endsWith(".dropped.v1")) pending.delete(r.data.seq);
  }
  return [...pending].sort((a, b) => a - b);
}


const seqsOf = (s: EventsStore) => s.pending().map((e) => e.seq);

describe("records", () => {
  test("without the ledger nothing of it is written; with it, a session that never receives an event leaves no events.ndjson", async () => {
    const plain = setup();
    const s = await openStore(plain);
    s.tryAdd(ev(1));
    s.markDone([1]);
    await s.close();
    expect(existsSync(ledgerFile(plain))).toBe(false);
    expect(readFileSync(logFile(plain), "utf8")).not.toContain('"ledger"');

    const quiet = setup();
    const q = await openStore(quiet, { ledger: LEDGER });
    q.setLastClientMs(1);
    await q.commit();
    await q.close();
    expect(existsSync(ledgerFile(quiet))).toBe(false);
    expect(q.ledger!.head()).toEqual({ count: 0, head: ANCHOR });
  });

  test("received, gap, notify-received, delivered and dropped records, chained, each in the commit of its change", async () => {
    const dir = setup();
    const written: number[] = [];
    const s = await openStore(dir, { ledger: { ...LEDGER, onWritten: (n) => written.push(n) } });
    const a = s.tryAdd(ev(1), FACTS)!;
    const gap = s.tryAdd({ ...ev(2), event: { gap: true, cursor: "c9", reason: "truncated", eventId: null } }, { subscriptionKey: FACTS.subscriptionKey })!;
    expect(s.noteUnqueued({ server: "tickets", name: "note", action: "notify", event: { eventId: "n1", data: { b: 2, a: 1 } } }, { ...FACTS, delivery: "webhook" })).toBe(true);
    const c = s.tryAdd(ev(3), { ...FACTS, delivery: "push" })!;
    // Built, not written: the durable head has not moved.
    expect(s.ledger!.head().count).toBe(0);
    await s.commit();
    expect(s.ledger!.head()).toEqual(chained(dir));
    s.markDone([a.seq, gap.seq], { delivered: { batchTag: "mcp_events:7", runId: "run_1" } });
    s.markDone([c.seq], { dropped: { attempts: 3, errorCode: "run_failed" } });
    await s.commit();
    await s.close();

    const recs = ledgerRecords(dir);
    expect(recs.map((r) => r.type)).toEqual([
      "vigil.mcp.event.received.v1", "vigil.mcp.event.gap.v1", "vigil.mcp.event.received.v1", "vigil.mcp.event.received.v1",
      "vigil.mcp.event.delivered.v1", "vigil.mcp.event.dropped.v1",
    ]);
    expect(recs.map((r) => r.id)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `evt_ledger_${SESSION}_${i}`));
    expect(recs[0]!.data).toEqual({
      session_id: SESSION, seq: 1, server: "tickets", event_name: "build.finished", subscription_key_sha256: sha256Hex(FACTS.subscriptionKey),
      delivery_mode: "poll", action: "follow_up", event_id: "e1", payload_sha256: sha256Hex('{"data":"","eventId":"e1"}'),
    });
    expect(recs[1]!.data).toEqual({ session_id: SESSION, seq: 2, server: "tickets", event_name: "build.finished", subscription_key_sha256: sha256Hex(FACTS.subscriptionKey), reason: "truncated", cursor: "c9" });
    expect(recs[2]!.data).toMatchObject({ seq: null, action: "notify", delivery_mode: "webhook", event_id: "n1", payload_sha256: sha256Hex('{"data":{"a":1,"b":2},"eventId":"n1"}') });
    expect(recs[3]!.data).toMatchObject({ seq: 3, delivery_mode: "push" });
    expect(recs[4]!.data).toEqual({ session_id: SESSION, batch_tag: "mcp_events:7", run_id: "run_1", seqs: [1, 2], event_ids: ["e1", null] });
    expect(recs[5]!.data).toEqual({ session_id: SESSION, seq: 3, event_id: "e3", attempts: 3, error_code: "run_failed" });
    expect(recs.every((r) => (r as unknown as { source: string }).source === SOURCE)).toBe(true);
    chained(dir);
    expect(written).toEqual([4, 2]);
    // Each pass embedded exactly its own lines in the pending log, in the same append.
    expect(embedded(dir).map((e) => [e.from, e.lines.length])).toEqual([[0, 4], [4, 2]]);
    expect(embedded(dir).flatMap((e) => e.lines)).toEqual(ledgerLines(dir));
  });

  test("with the ledger, an arrival without its facts and a markDone without its outcome are refused before anything changes", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    expect(() => s.tryAdd(ev(1))).toThrow(/subscription key/);
    expect(() => s.tryAdd(ev(1), { subscriptionKey: "k" })).toThrow(/delivery mode/);
    expect(s.pendingCount).toBe(0);
    s.tryAdd(ev(1), FACTS);
    expect(() => s.markDone([1])).toThrow(/outcome/);
    expect(seqsOf(s)).toEqual([1]);
    expect(s.noteUnqueued({ server: "a", name: "b", action: "notify", event: { eventId: "x" } }, { subscriptionKey: "k", delivery: "poll" })).toBe(true);
    const plain = await openStore(setup());
    expect(plain.noteUnqueued({ server: "a", name: "b", action: "notify", event: {} }, { subscriptionKey: "k" })).toBe(true);
    expect(plain.ledger).toBeNull();
  });
});

describe("recovery", () => {
  test("a crash between the pending log's sync and the ledger's append: the restart appends the missing lines", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const a = await openStore(dir, { fault: f.fn, ledger: LEDGER });
    f.arm("ledger_append", Number.POSITIVE_INFINITY); // this process never writes the ledger again: a crash
    a.tryAdd(ev(1), FACTS);
    a.tryAdd(ev(2), FACTS);
    const err = await rejection(a.commit());
    expect(err.kind).toBe("write_failed");
    expect(err.message).toContain("events.ndjson");
    expect(embedded(dir)).toHaveLength(1);
    expect(existsSync(ledgerFile(dir))).toBe(false);

    const written: number[] = [];
    const b = await openStore(dir, { ledger: { ...LEDGER, onWritten: (n) => written.push(n) } });
    expect(written).toEqual([2]);
    expect(ledgerLines(dir)).toEqual(embedded(dir)[0]!.lines);
    expect(b.ledger!.head()).toEqual(chained(dir));
    expect(ledgerPending(dir)).toEqual(seqsOf(b));
    // The chain goes on from the recovered lines; nothing is appended twice.
    b.markDone([1], { delivered: { batchTag: "t1", runId: "r1" } });
    await b.commit();
    expect(chained(dir).count).toBe(3);
    expect(ledgerPending(dir)).toEqual([2]);
    await b.close();
    const c = await openStore(dir, { ledger: LEDGER });
    expect(c.ledger!.head().count).toBe(3);
  });

  test("a failed ledger append is retried by the next commit, and embedded in the pending log once", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn, ledger: LEDGER });
    s.tryAdd(ev(1), FACTS);
    f.arm("ledger_sync");
    await rejection(s.commit());
    expect(s.ledger!.head().count).toBe(0);
    s.tryAdd(ev(2), FACTS);
    await s.commit();
    expect(ledgerLines(dir)).toHaveLength(2);
    expect(s.ledger!.head()).toEqual(chained(dir));
    expect(embedded(dir).map((e) => [e.from, e.lines.length])).toEqual([[0, 1], [1, 1]]);
  });

  test("a torn ledger tail is cut; a torn last record the pending log holds is written again", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    for (let i = 1; i <= 3; i++) s.tryAdd(ev(i), FACTS);
    await s.close();
    const whole = readFileSync(ledgerFile(dir), "utf8");

    appendFileSync(ledgerFile(dir), '{"specversion":"1.0","ty');
    const r = await openStore(dir, { ledger: LEDGER });
    expect(readFileSync(ledgerFile(dir), "utf8")).toBe(whole);
    expect(r.ledger!.head()).toEqual(chained(dir));
    await r.close();

    // Cut in the middle of the last record (a crash mid-append): the pending log's copy completes it.
    truncateSync(ledgerFile(dir), whole.length - 40);
    const t = await openStore(dir, { ledger: LEDGER });
    expect(readFileSync(ledgerFile(dir), "utf8")).toBe(whole);
    t.markDone([1, 2, 3], { delivered: { batchTag: "t", runId: "r" } });
    await t.commit();
    expect(chained(dir).count).toBe(4);
  });

  test("a ledger whose last record differs from the pending log's copy is refused, naming the file", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    s.tryAdd(ev(1), FACTS);
    s.tryAdd(ev(2), FACTS);
    await s.close();
    const text = readFileSync(ledgerFile(dir), "utf8");
    writeFileSync(ledgerFile(dir), text.replace('"event_id":"e2"', '"event_id":"eX"'));
    const err = await rejection(openStore(dir, { ledger: LEDGER }));
    expect(err.kind).toBe("file_refused");
    expect(err.message).toContain(ledgerFile(dir));
    expect(err.message).toContain("vigilseq 1");
  });

  test("a ledger missing records the pending log continues from is refused", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    for (let i = 1; i <= 600; i++) s.tryAdd(ev(i, 2000), FACTS);
    await s.commit();
    s.markDone(seqsOf(s).filter((q) => q % 100 !== 1), { delivered: { batchTag: "t", runId: "r" } });
    await s.commit();
    // The compaction dropped the confirmed lines from the pending log; it carried the delivered one (600).
    expect(s.writes.compactions).toBe(1);
    s.tryAdd(ev(1000), FACTS);
    await s.close();
    unlinkSync(ledgerFile(dir));
    const err = await rejection(openStore(dir, { ledger: LEDGER }));
    expect(err.kind).toBe("file_refused");
    expect(err.message).toMatch(/ends at 0 records but the pending log continues it from vigilseq 600/);
  });

  test("a compaction while ledger appends fail carries every unconfirmed line; the restart writes them all", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn, ledger: LEDGER });
    f.arm("ledger_append", Number.POSITIVE_INFINITY);
    for (let i = 1; i <= 600; i++) s.tryAdd(ev(i, 2000), FACTS);
    await rejection(s.commit());
    const keep = [1, 101, 201, 301, 401, 501];
    s.markDone(seqsOf(s).filter((q) => !keep.includes(q)), { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
    await rejection(s.commit());
    expect(s.writes.compactions).toBe(1);
    // The rewritten log: the live entries, then one ledger record with everything not yet in events.ndjson.
    const carried = embedded(dir);
    expect(carried.map((e) => [e.from, e.lines.length])).toEqual([[0, 601]]);
    expect(existsSync(ledgerFile(dir))).toBe(false);

    const r = await openStore(dir, { ledger: LEDGER });
    expect(seqsOf(r)).toEqual(keep);
    expect(chained(dir).count).toBe(601);
    expect(ledgerPending(dir)).toEqual(keep);
  });

  test("adds and dones after the pending log's last ledger record were never committed: set aside, and rewritten away", async () => {
    setQuiet(true);
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    s.tryAdd(ev(1), FACTS);
    s.tryAdd(ev(2), FACTS);
    await s.close();
    // A torn pass: its add and done landed, its ledger record (written last) did not.
    appendFileSync(logFile(dir), serializeAdd({ ...ev(3), seq: 3 } as PendingEntry) + '{"done":[1]}\n' + '{"attempts":[[2,1]]}\n');
    const r = await openStore(dir, { ledger: LEDGER });
    expect(seqsOf(r)).toEqual([1, 2]);
    expect(r.attemptsOf(2)).toBe(1); // an attempts count needs no ledger record
    expect(ledgerPending(dir)).toEqual(seqsOf(r));
    const next = r.tryAdd(ev(4), FACTS)!;
    expect(next.seq).toBe(4); // a seq a crash may have seen is never reused
    await r.commit();
    expect(r.writes.compactions).toBe(1);
    expect(readFileSync(logFile(dir), "utf8")).not.toContain('"seq":3');
    await r.close();
    expect(seqsOf(await openStore(dir, { ledger: LEDGER }))).toEqual([1, 2, 4]);
  });

  test("a store without the ledger keeps every record, and rewrites the ledger records away before appending", async () => {
    const dir = setup();
    const s = await openStore(dir, { ledger: LEDGER });
    s.tryAdd(ev(1), FACTS);
    await s.close();
    const plain = await openStore(dir);
    expect(seqsOf(plain)).toEqual([1]);
    plain.tryAdd(ev(2));
    await plain.commit();
    expect(readFileSync(logFile(dir), "utf8")).not.toContain('"ledger"');
    await plain.close();
    // Back with the ledger: the entry added without it is not taken for a torn pass.
    expect(seqsOf(await openStore(dir, { ledger: LEDGER }))).toEqual([1, 2]);
  });

  test("while ledger lines wait unwritten past the bound, arrivals are refused like a full queue", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn, ledger: LEDGER, maxPendingBytes: 1024 });
    f.arm("ledger_append", Number.POSITIVE_INFINITY);
    let accepted = 0;
    while (s.noteUnqueued({ server: "tickets", name: "note", action: "notify", event: { eventId: `n${accepted}` } }, FACTS)) {
      accepted++;
      if (accepted > 10_000) throw new Error("the ledger never filled");
    }
    expect(accepted).toBeGreaterThan(100);
    expect(s.tryAdd(ev(1), FACTS)).toBeNull();
    await rejection(s.commit());
    f.disarm();
    await s.commit();
    expect(s.ledger!.full).toBe(false);
    expect(s.tryAdd(ev(1), FACTS)).not.toBeNull();
    await s.commit();
    expect(chained(dir).count).toBe(accepted + 1);
  });
});
