/** Transcript segments (issue 12 item A): rotation, retention, pruned reads, O(recent) open, the compaction pointer. */
import { describe, expect, test } from "bun:test";
import { appendFileSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COMPACTION_POINTER_FILE } from "../../../src/serve/state/compaction-pointer.ts";
import { isTranscriptPruned, sincePruned } from "../../../src/serve/state/transcript-pruned.ts";
import { segmentFirst, segmentName, segmentsToPrune } from "../../../src/serve/state/transcript-segments.ts";
import type { Transcript, TranscriptOptions } from "../../../src/serve/state/transcript.ts";
import { msg, rejection, transcriptHarness } from "../../helpers/transcript.ts";

const { setup, openT } = transcriptHarness("vigil-unit-state-transcript-segments");
const now = () => new Date("2030-01-02T03:04:05.000Z");
/** About 12 records of `msg(i)` per segment; retention off unless a test sets it. */
const small: TranscriptOptions = { segmentBytes: 1024, retainBytes: 1 << 30, now };

const segmentsIn = (dir: string) => readdirSync(dir).filter((n) => segmentFirst(n) !== null).sort();
const recordsIn = (dir: string, name: string) => readFileSync(join(dir, name), "utf8").split("\n").filter((l) => l !== "");
const compaction = (from: number, to: number) => ({ type: "compaction", summary: `summary ${from}-${to}`, from_seq: from, to_seq: to });

async function appendMany(tr: Transcript, from: number, to: number): Promise<void> {
  for (let i = from; i <= to; i++) tr.append(msg(i));
  await tr.sync();
  await tr.housekept();
}

async function readAll(tr: Transcript, since: number): Promise<number[]> {
  const seqs: number[] = [];
  for (let cursor = since, i = 0; i < 1000; i++) {
    const page = await tr.readSince(cursor, { limit: 7 });
    seqs.push(...page.records.map((r) => r.seq));
    if (!page.more) break;
    cursor = page.records.at(-1)!.seq;
  }
  return seqs;
}

describe("segment names", () => {
  test("the first segment keeps the name of older versions; later ones carry their first seq, sorting in seq order", () => {
    expect(segmentName(1)).toBe("transcript.jsonl");
    expect(segmentName(4097)).toBe("transcript.jsonl.0000000000004097");
    expect(segmentFirst("transcript.jsonl")).toBe(1);
    expect(segmentFirst("transcript.jsonl.0000000000004097")).toBe(4097);
    for (const bad of ["transcript.jsonl.0000000000000001", "transcript.jsonl.12", "transcript.0000000000000012.jsonl", ".transcript.jsonl.tmp-1-1-a", "transcript.compaction.json"]) {
      expect(segmentFirst(bad)).toBeNull();
    }
  });

  test("retention keeps the older segments plus one full live segment within the bound, never the live one", () => {
    expect(segmentsToPrune([100, 100, 100, 0], 300, 100)).toBe(1);
    expect(segmentsToPrune([100, 100, 100, 0], 1000, 100)).toBe(0);
    expect(segmentsToPrune([100, 100, 100, 0], 0, 100)).toBe(3);
    expect(segmentsToPrune([5000], 0, 100)).toBe(0);
  });
});

test("?since= is refused only when frames after it were pruned", () => {
  expect(sincePruned(null, 50)).toBeNull();
  expect(sincePruned(49, 50)).toBeNull();
  expect(sincePruned(60, 50)).toBeNull();
  expect(sincePruned(48, 50)?.oldestSeq).toBe(50);
});

describe("rotation and reads across segments", () => {
  test("records go to a new segment before one would pass the size; every record reads back once, in order", async () => {
    const t = setup();
    const tr = await openT(t.path, small);
    await appendMany(tr, 1, 60);
    const names = segmentsIn(t.path);
    expect(names.length).toBeGreaterThan(3);
    expect(names[0]).toBe("transcript.jsonl");
    let next = 1;
    for (const name of names) {
      expect(statSync(join(t.path, name)).size).toBeLessThanOrEqual(1024);
      const seqs = recordsIn(t.path, name).map((l) => JSON.parse(l).seq as number);
      expect(segmentFirst(name)).toBe(next);
      next = seqs.at(-1)! + 1;
    }
    expect(next).toBe(61);
    expect(await readAll(tr, 0)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(await readAll(tr, 33)).toEqual(Array.from({ length: 27 }, (_, i) => i + 34));
    expect(tr.durableSeq).toBe(60);
  });

  test("a read seeks its segment by name: records of earlier segments are not read", async () => {
    const t = setup();
    const tr = await openT(t.path, small);
    await appendMany(tr, 1, 60);
    const names = segmentsIn(t.path);
    const lastFirst = segmentFirst(names.at(-1)!)!;
    const before = tr.recordsRead;
    expect((await tr.readSince(lastFirst - 1)).records[0]?.seq).toBe(lastFirst);
    expect(tr.recordsRead - before).toBe(recordsIn(t.path, names.at(-1)!).length);
  });
});

describe("retention", () => {
  test("the oldest segments are deleted; a read from the pruned range is transcript_pruned naming the oldest seq", async () => {
    const t = setup();
    const tr = await openT(t.path, { ...small, retainBytes: 3072 });
    await appendMany(tr, 1, 200);
    const names = segmentsIn(t.path);
    const total = names.reduce((n, name) => n + statSync(join(t.path, name)).size, 0);
    expect(total).toBeLessThanOrEqual(3072);
    expect(names).not.toContain("transcript.jsonl");
    expect(tr.stats.prunedSegments).toBeGreaterThan(0);
    const oldest = segmentFirst(names[0]!)!;
    expect(tr.oldestSeq).toBe(oldest);
    const e = await rejection(tr.readSince(0));
    expect(isTranscriptPruned(e)).toBe(true);
    expect(e.reason).toBe("transcript_pruned");
    expect((e as unknown as { oldestSeq: number }).oldestSeq).toBe(oldest);
    expect(e.message).toContain(`seq ${oldest}`);
    expect((await rejection(tr.readSince(oldest - 2))).reason).toBe("transcript_pruned");
    expect(await readAll(tr, oldest - 1)).toEqual(Array.from({ length: 201 - oldest }, (_, i) => i + oldest));
  });

  test("a lower bound at reopen prunes at once; the live segment is never deleted", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 60);
    await a.close();
    const live = segmentsIn(t.path).at(-1)!;
    const b = await openT(t.path, { ...small, retainBytes: 0 });
    expect(segmentsIn(t.path)).toEqual([live]);
    expect(b.lastSeq).toBe(60);
    expect(b.oldestSeq).toBe(segmentFirst(live)!);
  });
});

describe("open reads O(recent)", () => {
  test("reopen scans the live segment only: recordsRead is its record count", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 100);
    await a.close();
    const live = segmentsIn(t.path).at(-1)!;
    const b = await openT(t.path, small);
    expect(b.lastSeq).toBe(100);
    expect(b.recordsRead).toBe(recordsIn(t.path, live).length);
    expect(b.recordsRead).toBeLessThan(20);
    expect(b.append(msg(101))).toBe(101);
    expect((await b.readSince(99)).records.map((r) => r.seq)).toEqual([100, 101]);
  });

  test("an empty live segment (a crash right after a rotation) continues from its first seq", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 20);
    await a.close();
    writeFileSync(join(t.path, segmentName(21)), "", { mode: 0o600 });
    const b = await openT(t.path, small);
    expect(b.lastSeq).toBe(20);
    expect(b.recordsRead).toBe(0);
    expect(b.append(msg(21))).toBe(21);
    expect(await readAll(b, 18)).toEqual([19, 20, 21]);
  });

  test("a torn tail of the live segment is repaired as before", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 30);
    await a.close();
    const live = segmentsIn(t.path).at(-1)!;
    appendFileSync(join(t.path, live), '{"seq":31,"time":"2030-01-01T00:00:00.000Z","type":"mess');
    const b = await openT(t.path, small);
    expect(b.repairedBytes).toBeGreaterThan(0);
    expect(b.lastSeq).toBe(30);
    expect(b.append(msg(31))).toBe(31);
  });

  test("a transcript of an older version (one transcript.jsonl) is the first segment: read, continued, rotated", async () => {
    const t = setup();
    const line = (seq: number) => `{"seq":${seq},"time":"2030-01-01T00:00:00.000Z","type":"message","role":"user","text":"old ${seq}"}\n`;
    writeFileSync(join(t.path, "transcript.jsonl"), Array.from({ length: 5 }, (_, i) => line(i + 1)).join(""), { mode: 0o600 });
    const tr = await openT(t.path, small);
    expect(tr.lastSeq).toBe(5);
    await appendMany(tr, 6, 40);
    expect(segmentsIn(t.path)[0]).toBe("transcript.jsonl");
    expect(segmentsIn(t.path).length).toBeGreaterThan(1);
    expect((await tr.readSince(0, { limit: 1 })).records[0]?.text).toBe("old 1");
  });
});

describe("lastCompaction", () => {
  test("none: null", async () => {
    const t = setup();
    const tr = await openT(t.path, small);
    await appendMany(tr, 1, 30);
    expect(await tr.lastCompaction()).toBeNull();
  });

  test("survives reopen through the pointer, without reading older segments", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 20);
    const seq = a.append(compaction(1, 20));
    expect((await a.lastCompaction())?.seq).toBe(seq);
    await appendMany(a, 22, 80);
    await a.close();
    const live = segmentsIn(t.path).at(-1)!;
    expect(segmentFirst(live)!).toBeGreaterThan(seq + 10);
    const b = await openT(t.path, small);
    const found = await b.lastCompaction();
    expect(found).toMatchObject({ seq, type: "compaction", summary: "summary 1-20", from_seq: 1, to_seq: 20 });
    // the live segment's scan, then the compaction's own segment up to the record: nothing else
    const holding = segmentsIn(t.path).filter((n) => segmentFirst(n)! <= seq).at(-1)!;
    expect(b.recordsRead).toBeLessThanOrEqual(recordsIn(t.path, live).length + recordsIn(t.path, holding).length);
    expect(segmentsIn(t.path).length).toBeGreaterThan(3);
  });

  test("a compaction in the live segment is found by the open scan; a newer one wins", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    a.append(compaction(1, 1));
    await appendMany(a, 2, 40);
    const seq = a.append(compaction(1, 40));
    await a.close();
    const b = await openT(t.path, small);
    expect((await b.lastCompaction())?.seq).toBe(seq);
  });

  test("a missing pointer falls back to the bounded backward scan", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 20);
    const seq = a.append(compaction(1, 20));
    await appendMany(a, 22, 80);
    await a.close();
    unlinkSync(join(t.path, COMPACTION_POINTER_FILE));
    const b = await openT(t.path, small);
    expect((await b.lastCompaction())?.seq).toBe(seq);
    const c = await openT(t.path, { ...small, compactionScanBytes: 1024 });
    expect(await c.lastCompaction()).toBeNull(); // past the scan budget: none rather than an unbounded read
  });

  test("a stale pointer (a crash before it was rewritten) is completed by scanning the newer segments only", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    await appendMany(a, 1, 20);
    const first = a.append(compaction(1, 20));
    await appendMany(a, 22, 60);
    const pointerThen = readFileSync(join(t.path, COMPACTION_POINTER_FILE), "utf8");
    await appendMany(a, 61, 70);
    const second = a.append(compaction(1, 70));
    await appendMany(a, 72, 120);
    await a.close();
    writeFileSync(join(t.path, COMPACTION_POINTER_FILE), pointerThen);
    const b = await openT(t.path, small);
    expect((await b.lastCompaction())?.seq).toBe(second);
    expect(second).toBeGreaterThan(first);
  });

  test("a torn compaction record at the tail is not remembered; the earlier one is", async () => {
    const t = setup();
    const a = await openT(t.path, small);
    const seq = a.append(compaction(1, 1));
    await appendMany(a, 2, 5);
    await a.close();
    appendFileSync(join(t.path, "transcript.jsonl"), '{"seq":6,"time":"2030-01-01T00:00:00.000Z","type":"compaction","summ');
    const b = await openT(t.path, small);
    expect(b.repairedBytes).toBeGreaterThan(0);
    expect((await b.lastCompaction())?.seq).toBe(seq);
  });

  test("a compaction whose segment retention deleted: null", async () => {
    const t = setup();
    const a = await openT(t.path, { ...small, retainBytes: 2048 });
    a.append(compaction(1, 1));
    await appendMany(a, 2, 100);
    expect(a.oldestSeq).toBeGreaterThan(1);
    expect(await a.lastCompaction()).toBeNull();
  });
});
