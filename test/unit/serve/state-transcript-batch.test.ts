/**
 * Frames appended together (transcript.ts appendFrames, FrameLog.emitMany, events/frame-hold.ts):
 * one write(2) per segment, the same bytes, seqs and refusals as one-by-one appends, and every
 * frame stored before any subscriber is sent it.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { FrameHold } from "../../../src/events/frame-hold.ts";
import type { EventsFrame } from "../../../src/events/frames.ts";
import type { FrameBody } from "../../../src/serve/protocol/frames.ts";
import { FrameLog } from "../../../src/serve/session/frame-log.ts";
import type { TranscriptOptions } from "../../../src/serve/state/transcript.ts";
import { msg, transcriptHarness } from "../../helpers/transcript.ts";

const { setup, openT } = transcriptHarness("vigil-unit-state-transcript-batch");
const now = () => new Date("2030-01-02T03:04:05.000Z");
const event = (i: number) => ({ type: "mcp_event", server: "s", name: "e", arguments: {}, delivery: "poll", action: "follow_up", event: { eventId: `e${i}`, name: "e", data: { n: i, text: "ü✓" } } });
const filesOf = (dir: string) => Object.fromEntries(readdirSync(dir).filter((n) => n.startsWith("transcript")).sort().map((n) => [n, readFileSync(join(dir, n), "utf8")]));

/** Two transcripts in one temp dir, counting the writes of each. */
async function pair(options: TranscriptOptions = {}) {
  const t = setup();
  const writes = { one: 0, many: 0 };
  const open = async (name: "one" | "many") => {
    const dir = join(t.path, name);
    mkdirSync(dir);
    const tr = await openT(dir, { now, ...options, write: (fd, buf, off, len, pos) => (writes[name]++, writeSync(fd, buf, off, len, pos)) });
    return { dir, tr };
  };
  return { one: await open("one"), many: await open("many"), writes };
}

describe("appendFrames", () => {
  test("the same lines, seqs and records as one-by-one appends, in one write", async () => {
    const { one, many, writes } = await pair();
    one.tr.append(msg(0));
    many.tr.append(msg(0));
    const frames = Array.from({ length: 20 }, (_, i) => event(i));
    const singles = frames.map((f) => one.tr.appendFrame(f));
    const before = writes.many;
    const batch = many.tr.appendFrames(frames);
    expect(writes.many - before).toBe(1);
    expect(batch.map((o) => ("error" in o ? o : { seq: o.seq, record: o.record, json: o.json }))).toEqual(singles.map((s) => ({ seq: s.seq, record: s.record, json: s.json })));
    expect(filesOf(many.dir)).toEqual(filesOf(one.dir));
    expect(many.tr.lastSeq).toBe(21);
    expect((await many.tr.readSince(10, { limit: 3 })).records.map((r) => r.seq)).toEqual([11, 12, 13]);
  });

  test("a frame over the cap or unserializable is refused alone, without a seq; the rest are stored", async () => {
    const { one, many } = await pair({ maxRecordBytes: 1024 });
    const cyclic: Record<string, unknown> = { type: "message" };
    cyclic.self = cyclic;
    const frames = [msg(1), { type: "message", text: "x".repeat(2000) }, msg(2), cyclic as { type: string }, msg(3)];
    const reasons: (string | number)[] = [];
    for (const f of frames) {
      try {
        reasons.push(one.tr.appendFrame(f).seq);
      } catch (e) {
        reasons.push((e as { reason: string }).reason);
      }
    }
    const batch = many.tr.appendFrames(frames).map((o) => ("error" in o ? (o.error as { reason: string }).reason : o.seq));
    expect(batch).toEqual(reasons);
    expect(batch).toEqual([1, "record_too_large", 2, "record_invalid", 3]);
    expect(filesOf(many.dir)).toEqual(filesOf(one.dir));
  });

  test("a batch that passes the segment size rotates where one-by-one appends would (one write per segment)", async () => {
    const { one, many, writes } = await pair({ segmentBytes: 1024, retainBytes: 1 << 30 });
    const frames = Array.from({ length: 30 }, (_, i) => event(i));
    for (const f of frames) one.tr.appendFrame(f);
    const batch = many.tr.appendFrames(frames);
    expect(batch.every((o) => !("error" in o))).toBe(true);
    const files = filesOf(many.dir);
    expect(Object.keys(files).length).toBeGreaterThan(3);
    expect(files).toEqual(filesOf(one.dir));
    expect(writes.many).toBe(Object.keys(files).length);
    expect(many.tr.stats.syncs).toBe(one.tr.stats.syncs);
  });

  test("a failed write latches: its frames and every later one are refused, no partial line stays", async () => {
    const t = setup();
    let first: number | null = null;
    const tr = await openT(t.path, {
      now,
      segmentBytes: 1024,
      retainBytes: 1 << 30,
      write: (fd, buf, off, len, pos) => {
        first ??= fd;
        // The second segment's write fails after a short write that reached the file.
        if (fd !== first && off > 0) throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
        return writeSync(fd, buf, off, Math.ceil(len / 2), pos); // short writes are completed
      },
    });
    const batch = tr.appendFrames(Array.from({ length: 30 }, (_, i) => event(i)));
    const stored = batch.filter((o) => !("error" in o)).length;
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(30);
    expect(batch.slice(stored).every((o) => "error" in o && (o.error as { reason: string }).reason === "transcript_failed")).toBe(true);
    expect(tr.failed?.reason).toBe("transcript_failed");
    expect(tr.lastSeq).toBe(stored);
    for (const text of Object.values(filesOf(t.path))) expect(text === "" || text.endsWith("\n")).toBe(true);
  });
});

describe("FrameLog.emitMany", () => {
  test("every frame is on disk before the first is sent; subscribers get them in seq order with their exact lines", async () => {
    const t = setup();
    const tr = await openT(t.path, { now });
    const log = new FrameLog(tr);
    const seen: { seq: number; json: string; lastSeq: number }[] = [];
    log.subscribe((record, json) => seen.push({ seq: record.seq, json, lastSeq: tr.lastSeq }));
    const frames = [event(1), { type: "message", text: "x".repeat(40 << 20) }, event(2)] as unknown as FrameBody[];
    const records = log.emitMany(frames);
    expect(records.map((r) => r?.seq ?? null)).toEqual([1, null, 2]);
    expect(seen.map((s) => [s.seq, s.lastSeq])).toEqual([[1, 2], [2, 2]]);
    expect(readFileSync(tr.path, "utf8")).toBe(`${seen[0]!.json}\n${seen[1]!.json}\n`);
  });
});

describe("FrameHold", () => {
  const fake = (withMany: boolean) => {
    const calls: string[] = [];
    const session = {
      emit: (f: EventsFrame) => (calls.push(`emit ${(f as { n?: number }).n}`), 1),
      ...(withMany ? { emitMany: (fs: readonly EventsFrame[]) => (calls.push(`many ${fs.map((f) => (f as { n?: number }).n).join(",")}`), fs.map(() => 1)) } : {}),
    };
    return { calls, hold: new FrameHold(session) };
  };
  const f = (n: number) => ({ type: "mcp_event", n }) as unknown as EventsFrame;

  test("unheld frames go at once; held ones together, in order, when the outermost hold is released", () => {
    const { calls, hold } = fake(true);
    hold.emit(f(1));
    const outer = hold.hold();
    hold.emit(f(2));
    const inner = hold.hold();
    hold.emit(f(3));
    inner();
    inner();
    expect(calls).toEqual(["emit 1"]);
    hold.emit(f(4));
    outer();
    outer();
    hold.emit(f(5));
    expect(calls).toEqual(["emit 1", "many 2,3,4", "emit 5"]);
  });

  test("one held frame is emitted alone; a session without emitMany gets them one by one", () => {
    const a = fake(true);
    let release = a.hold.hold();
    a.hold.emit(f(1));
    release();
    release = a.hold.hold();
    release();
    expect(a.calls).toEqual(["emit 1"]);
    const b = fake(false);
    release = b.hold.hold();
    b.hold.emit(f(1));
    b.hold.emit(f(2));
    release();
    expect(b.calls).toEqual(["emit 1", "emit 2"]);
  });
});
