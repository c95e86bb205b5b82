/** The session transcript across reopen and crash, and its durability: torn tails, group commit, latched failures (serve.md §3, §5). */
import { describe, expect, test } from "bun:test";
import { appendFileSync, fdatasyncSync, lstatSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { Transcript } from "../../../src/serve/state/transcript.ts";
import { fileOf, linesOf, msg, rejection, thrown, transcriptHarness } from "../../helpers/transcript.ts";

const { setup, openT } = transcriptHarness("vigil-unit-state-transcript-durability");

/** An fdatasync spy that can hold its calls until released. */
function syncSpy() {
  const held: Array<() => void> = [];
  const spy = {
    calls: 0,
    holding: false,
    held,
    fn: async (fd: number) => {
      spy.calls++;
      if (spy.holding) await new Promise<void>((done) => held.push(done));
      fdatasyncSync(fd);
    },
    async waitHeld(n: number) {
      for (let i = 0; i < 1000 && held.length < n; i++) await Bun.sleep(0);
      expect(held.length).toBe(n);
    },
  };
  return spy;
}

describe("reopen and torn tails", () => {
  test("seq continues after reopen, and earlier records replay", async () => {
    const t = setup();
    const a = await openT(t.path);
    for (let i = 1; i <= 3; i++) a.append(msg(i));
    await a.close();
    const b = await openT(t.path, { indexEvery: 2 });
    expect(b.lastSeq).toBe(3);
    expect(b.durableSeq).toBe(3);
    expect(b.repairedBytes).toBe(0);
    expect(b.append(msg(4))).toBe(4);
    expect((await b.readSince(2)).records.map((r) => r.text)).toEqual(["m3", "m4"]);
  });

  const tails: Array<[string, string]> = [
    ["half a line (no newline)", '{"seq":3,"time":"2030-01-01T00:00:00.000Z","type":"mess'],
    ["a garbage last line", "\u0000\u0000garbage\n"],
    ["a last line cut inside its JSON, then a newline", '{"seq":3,"time":"2030-01-01T00:00:00.000Z","type":\n'],
    ["an empty last line", "\n"],
    ["a bad last line plus half of another", `${JSON.stringify({ x: 1 })}\n{"seq":4,"ti`],
  ];
  for (const [what, tail] of tails) {
    test(`${what} is truncated on open; later appends are clean`, async () => {
      const t = setup();
      const a = await openT(t.path);
      a.append(msg(1));
      a.append(msg(2));
      await a.close();
      const goodSize = lstatSync(fileOf(t.path)).size;
      appendFileSync(fileOf(t.path), tail);
      const spy = syncSpy();
      const b = await openT(t.path, { fdatasync: spy.fn });
      expect(spy.calls).toBe(1); // the repair is synced before anything is appended
      expect(lstatSync(fileOf(t.path)).size).toBe(goodSize);
      expect(b.repairedBytes).toBe(Buffer.byteLength(tail));
      expect(b.lastSeq).toBe(2);
      expect(b.append(msg(3))).toBe(3);
      await b.sync();
      const lines = linesOf(t.path);
      expect(lines.pop()).toBe("");
      expect(lines.map((l) => JSON.parse(l).seq)).toEqual([1, 2, 3]);
    });
  }

  test("damage before the last line is transcript_corrupt and the file is left alone", async () => {
    const t = setup();
    const a = await openT(t.path);
    a.append(msg(1));
    await a.close();
    appendFileSync(fileOf(t.path), "not a record\n");
    appendFileSync(fileOf(t.path), `{"seq":3,"time":"2030-01-01T00:00:00.000Z","type":"message"}\n`);
    const size = lstatSync(fileOf(t.path)).size;
    const e = await rejection(Transcript.open(t.path));
    expect(e.reason).toBe("transcript_corrupt");
    expect(e.message).toContain("byte");
    expect(lstatSync(fileOf(t.path)).size).toBe(size);
  });

  test("seqs that do not increase are transcript_corrupt", async () => {
    const t = setup();
    const line = (seq: number) => `{"seq":${seq},"time":"2030-01-01T00:00:00.000Z","type":"message"}\n`;
    writeFileSync(fileOf(t.path), line(1) + line(2) + line(2));
    expect((await rejection(Transcript.open(t.path))).reason).toBe("transcript_corrupt");
  });

  test("a symlinked transcript file is refused", async () => {
    const t = setup();
    writeFileSync(t.file("elsewhere"), "");
    symlinkSync(t.file("elsewhere"), fileOf(t.path));
    const e = await rejection(Transcript.open(t.path));
    expect(e.message).toContain("symbolic link");
  });
});

describe("durability", () => {
  test("append does not sync; sync makes durableSeq cover it; nothing new → no fdatasync", async () => {
    const t = setup();
    const spy = syncSpy();
    const tr = await openT(t.path, { fdatasync: spy.fn });
    const afterOpen = spy.calls;
    tr.append(msg(1));
    tr.append(msg(2));
    expect(spy.calls).toBe(afterOpen);
    expect(tr.durableSeq).toBe(0);
    await tr.sync();
    expect(tr.durableSeq).toBe(2);
    expect(spy.calls).toBe(afterOpen + 1);
    await tr.sync();
    await Promise.all([tr.sync(), tr.sync()]);
    expect(spy.calls).toBe(afterOpen + 1);
  });

  test("group commit: callers arriving during a sync share the next one", async () => {
    const t = setup();
    const spy = syncSpy();
    const tr = await openT(t.path, { fdatasync: spy.fn });
    const afterOpen = spy.calls;
    spy.holding = true;
    tr.append(msg(1));
    const first = tr.sync(); // starts fdatasync #1, covering seq 1
    await spy.waitHeld(1);
    const covered = tr.sync(); // nothing new since #1 started: shares it
    const later: Promise<void>[] = [];
    for (let i = 2; i <= 51; i++) {
      tr.append(msg(i));
      later.push(tr.sync()); // all share fdatasync #2
    }
    let done = 0;
    for (const p of [first, covered, ...later]) void p.then(() => done++);
    spy.held.shift()?.();
    await Promise.all([first, covered]);
    expect(tr.durableSeq).toBe(1);
    await spy.waitHeld(1);
    expect(done).toBe(2);
    spy.held.shift()?.();
    await Promise.all(later);
    expect(done).toBe(52);
    expect(tr.durableSeq).toBe(51);
    expect(spy.calls - afterOpen).toBe(2);
  });

  test("a failing sync latches the transcript: sync rejects, appends throw, durableSeq stays", async () => {
    const t = setup();
    let fail = false;
    const tr = await openT(t.path, {
      fdatasync: async (fd) => {
        if (fail) throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
        fdatasyncSync(fd);
      },
    });
    tr.append(msg(1));
    await tr.sync();
    tr.append(msg(2));
    fail = true;
    const waiters = [tr.sync(), tr.sync(), tr.sync()];
    for (const w of waiters) expect((await rejection(w)).reason).toBe("transcript_failed");
    expect(tr.durableSeq).toBe(1);
    expect(tr.failed?.message).toContain("EIO");
    expect(thrown(() => tr.append(msg(3))).reason).toBe("transcript_failed");
    expect((await rejection(tr.sync())).reason).toBe("transcript_failed");
  });

  test("a failed write latches the transcript and leaves no partial line behind", async () => {
    const t = setup();
    let calls = 0;
    const tr = await openT(t.path, {
      write: (fd, buf, off, len, pos) => {
        if (++calls === 3) return writeSync(fd, buf, off, Math.ceil(len / 2), pos); // short write…
        if (calls === 4) throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" }); // …then full
        return writeSync(fd, buf, off, len, pos);
      },
    });
    tr.append(msg(1));
    tr.append(msg(2));
    const e = thrown(() => tr.append(msg(3)));
    expect(e.reason).toBe("transcript_failed");
    expect(e.code).toBe("evidence_write_failed");
    expect(e.message).toContain("ENOSPC");
    expect(thrown(() => tr.append(msg(4))).reason).toBe("transcript_failed");
    expect((await rejection(tr.sync())).reason).toBe("transcript_failed");
    expect(tr.lastSeq).toBe(2);
    expect((await tr.readSince(0)).records.map((r) => r.seq)).toEqual([1, 2]);
    await tr.close();
    const again = await openT(t.path);
    expect(again.repairedBytes).toBe(0);
    expect(again.append(msg(3))).toBe(3);
  });

  test("close syncs what was written; a closed transcript refuses appends and reads", async () => {
    const t = setup();
    const spy = syncSpy();
    const tr = await Transcript.open(t.path, { fdatasync: spy.fn });
    tr.append(msg(1));
    await tr.close();
    expect(tr.durableSeq).toBe(1);
    expect(thrown(() => tr.append(msg(2))).reason).toBe("transcript_closed");
    expect((await rejection(tr.readSince(0))).reason).toBe("transcript_closed");
    expect((await rejection(tr.sync())).reason).toBe("transcript_closed");
  });
});
