/** The session transcript: append, seq, bounded replay from the index (serve.md §3, §4). */
import { describe, expect, test } from "bun:test";
import { closeSync, lstatSync, openSync, writeSync } from "node:fs";
import { fileOf, linesOf, msg, rejection, thrown, transcriptHarness } from "../../helpers/transcript.ts";

const { setup, openT } = transcriptHarness("vigil-unit-state-transcript");

describe("append and readSince", () => {
  test("round trip: seq from 1, time, the frame's fields, one line each, file 0600", async () => {
    const t = setup();
    const tr = await openT(t.path, { now: () => new Date("2030-01-02T03:04:05.000Z") });
    expect(tr.lastSeq).toBe(0);
    expect((await tr.readSince(0)).records).toEqual([]);
    for (let i = 1; i <= 5; i++) expect(tr.append(msg(i))).toBe(i);
    const all = await tr.readSince(0);
    expect(all.more).toBe(false);
    expect(all.records).toEqual([1, 2, 3, 4, 5].map((i) => ({ seq: i, time: "2030-01-02T03:04:05.000Z", ...msg(i) })));
    expect((await tr.readSince(3)).records.map((r) => r.seq)).toEqual([4, 5]);
    expect((await tr.readSince(5)).records).toEqual([]);
    expect((await tr.readSince(99)).records).toEqual([]);
    const lines = linesOf(t.path);
    expect(lines).toHaveLength(6);
    expect(lines[5]).toBe("");
    expect(lines[0]).toBe('{"seq":1,"time":"2030-01-02T03:04:05.000Z","type":"message","role":"user","text":"m1"}');
    expect(lstatSync(fileOf(t.path)).mode & 0o777).toBe(0o600);
  });

  test("appendFrame returns the exact JSON written; the frame's own seq/time are replaced", async () => {
    const t = setup();
    const tr = await openT(t.path);
    const r = tr.appendFrame({ type: "run_end", seq: 77, time: "bogus", run_id: "r1", status: "ok" });
    expect(r.seq).toBe(1);
    expect(r.record).toMatchObject({ type: "run_end", seq: 1, run_id: "r1", status: "ok" });
    expect(r.record.time).not.toBe("bogus");
    expect(linesOf(t.path)[0]).toBe(r.json);
    expect(JSON.parse(r.json)).toEqual(r.record);
  });

  test("unrecordable frames are refused without consuming a seq", async () => {
    const t = setup();
    const tr = await openT(t.path);
    const cyclic: Record<string, unknown> = { type: "message" };
    cyclic.self = cyclic;
    expect(thrown(() => tr.append(cyclic as { type: string })).reason).toBe("record_invalid");
    expect(thrown(() => tr.append({ type: "x", n: 1n } as unknown as { type: string })).reason).toBe("record_invalid");
    expect(thrown(() => tr.append({ type: 5 } as unknown as { type: string })).reason).toBe("record_invalid");
    expect(tr.append(msg(1))).toBe(1);
    expect(tr.failed).toBeNull();
  });

  test("a record over the cap is refused with record_too_large; the transcript stays usable", async () => {
    const t = setup();
    const tr = await openT(t.path, { maxRecordBytes: 1024 });
    tr.append(msg(1));
    const e = thrown(() => tr.append({ type: "message", text: "x".repeat(2000) }));
    expect(e.reason).toBe("record_too_large");
    expect(tr.append(msg(2))).toBe(2);
    expect((await tr.readSince(0)).records.map((r) => r.text)).toEqual(["m1", "m2"]);
  });

  test("limit: pages cover every record exactly once, `more` until the end", async () => {
    const t = setup();
    const tr = await openT(t.path, { indexEvery: 4 });
    for (let i = 1; i <= 50; i++) tr.append(msg(i));
    const seen: number[] = [];
    let since = 0;
    for (let pages = 0; pages < 20; pages++) {
      const page = await tr.readSince(since, { limit: 7 });
      seen.push(...page.records.map((r) => r.seq));
      since = page.records.at(-1)?.seq ?? since;
      if (!page.more) break;
      expect(page.records).toHaveLength(7);
    }
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(await tr.readSince(43, { limit: 7 })).toMatchObject({ more: false });
  });

  test("maxBytes bounds a page; a single record larger than maxBytes is still returned", async () => {
    const t = setup();
    const tr = await openT(t.path, { readChunkBytes: 1024 });
    tr.append({ type: "message", text: "y".repeat(100_000) }); // spans many chunks
    for (let i = 2; i <= 20; i++) tr.append({ type: "message", text: "z".repeat(100) });
    const first = await tr.readSince(0, { maxBytes: 500 });
    expect(first.records.map((r) => r.seq)).toEqual([1]);
    expect(first.more).toBe(true);
    expect(String(first.records[0]?.text)).toHaveLength(100_000);
    const next = await tr.readSince(1, { maxBytes: 500 });
    expect(next.records.length).toBeGreaterThanOrEqual(2);
    expect(next.records.length).toBeLessThan(5);
    expect(next.more).toBe(true);
  });

  test("a late since starts from the index: it reads a bounded span, not the file from the start", async () => {
    const t = setup();
    const tr = await openT(t.path, { indexEvery: 32, readChunkBytes: 4096 });
    for (let i = 1; i <= 5000; i++) tr.append(msg(i));
    const fileSize = lstatSync(fileOf(t.path)).size;
    const before = tr.stats.bytesRead;
    const page = await tr.readSince(4990);
    expect(page.records.map((r) => r.seq)).toEqual([4991, 4992, 4993, 4994, 4995, 4996, 4997, 4998, 4999, 5000]);
    const read = tr.stats.bytesRead - before;
    expect(read).toBeLessThan(4096 * 3);
    expect(read).toBeLessThan(fileSize / 20);
    // Damage the first record in place (same length): a late replay never looks at it…
    const first = linesOf(t.path)[0] ?? "";
    const fd = openSync(fileOf(t.path), "r+");
    writeSync(fd, "#".repeat(first.length), 0);
    closeSync(fd);
    expect((await tr.readSince(4998)).records.map((r) => r.seq)).toEqual([4999, 5000]);
    // …while a replay from the start reports it instead of skipping it.
    expect((await rejection(tr.readSince(0))).reason).toBe("transcript_corrupt");
  });

  test("bad arguments", async () => {
    const t = setup();
    const tr = await openT(t.path);
    expect((await rejection(tr.readSince(-1))).reason).toBe("invalid_argument");
    expect((await rejection(tr.readSince(1.5))).reason).toBe("invalid_argument");
    expect((await rejection(tr.readSince(0, { limit: 0 }))).reason).toBe("invalid_argument");
  });
});
