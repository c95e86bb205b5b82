/** The events store under failure: compaction, failed writes and their retries, torn tails, planted symlinks, bounds on load (serve.md §3). */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EventsStore, type EventsStoreOptions, maxLogFileBytes } from "../../../src/events/store/events-store.ts";
import { serializeAdd } from "../../../src/events/store/pending-log.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { setQuiet } from "../../../src/shared/log.ts";
import { faults, logFile, rejection, snapFile, storeHarness } from "../../helpers/events-store.ts";

const DEFAULTS: EventsStoreOptions = { maxPending: 5000, maxPendingBytes: 16 * 1024 * 1024 };
const { setup, openStore } = storeHarness("vigil-unit-events-store-durability", DEFAULTS, () => setQuiet(false));

function ev(i: number, pad = 0): Omit<PendingEntry, "seq"> {
  return { action: "steer", server: "srv", name: "changed", arguments: {}, event: { eventId: `e${i}`, data: "x".repeat(pad) } };
}
const addLine = (seq: number, pad = 0) => serializeAdd({ ...ev(seq, pad), seq } as PendingEntry);
const seqs = (s: EventsStore) => s.pending().map((e) => e.seq);

/** 600 entries of about 2 KiB (over 1 MiB of log), then all but every 100th marked done. */
async function mostlyDead(s: EventsStore): Promise<number[]> {
  for (let i = 1; i <= 600; i++) s.tryAdd(ev(i, 2000));
  await s.commit();
  const keep = [1, 101, 201, 301, 401, 501];
  s.markDone(s.pending().map((e) => e.seq).filter((q) => !keep.includes(q)));
  return keep;
}

describe("compaction", () => {
  test("the log is compacted once mostly dead, and keeps every live entry", async () => {
    const dir = setup();
    const s = await openStore(dir);
    for (let i = 1; i <= 600; i++) s.tryAdd(ev(i, 2000));
    await s.commit();
    expect(s.writes.compactions).toBe(0); // over 1 MiB, but all of it live
    const keep = await mostlyDead(s);
    await s.commit();
    expect(s.writes.compactions).toBe(1);
    expect(statSync(logFile(dir)).size).toBe(s.pendingBytes);
    s.tryAdd(ev(1000));
    await s.commit();
    expect(s.writes.compactions).toBe(1); // small again: the next change is appended
    await s.close();
    const r = await openStore(dir);
    expect(seqs(r)).toEqual([...keep, 1201]);
    expect(r.skippedLines).toBe(0);
  });

  test("a failed compaction loses no records; the next commit lands them", async () => {
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn });
    const keep = await mostlyDead(s);
    const before = readFileSync(logFile(dir));
    f.arm("compact");
    expect((await rejection(s.commit())).kind).toBe("write_failed");
    expect(readFileSync(logFile(dir)).equals(before)).toBe(true);
    await s.commit();
    expect(s.writes.compactions).toBe(1);
    await s.close();
    expect(seqs(await openStore(dir))).toEqual(keep);
  });

  test("after a failed compaction, the displaced records still land when the next write appends", async () => {
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn });
    const keep = await mostlyDead(s);
    f.arm("compact");
    await rejection(s.commit());
    // Enough new live entries that the log is no longer mostly dead: the next write appends.
    for (let i = 601; i <= 1400; i++) s.tryAdd(ev(i, 2000));
    const appends = s.writes.logAppends;
    await s.commit();
    expect(s.writes.compactions).toBe(0);
    expect(s.writes.logAppends).toBe(appends + 1);
    await s.close();
    const r = await openStore(dir);
    expect(r.pendingCount).toBe(keep.length + 800);
    expect(seqs(r).slice(0, keep.length)).toEqual(keep);
  });

  test("records piling up unwritten are replaced by one rewrite of the live log", async () => {
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { maxPendingBytes: 64 * 1024, fault: f.fn });
    const cap = 2 * 64 * 1024 + 1024 * 1024;
    for (let i = 1; i <= 800; i++) {
      const e = s.tryAdd(ev(i, 2000));
      if (e !== null && i % 50 !== 0) s.markDone([e.seq]);
      expect(s.unwrittenBytes).toBeLessThanOrEqual(cap);
    }
    expect(s.pendingCount).toBe(16);
    f.arm("compact");
    await rejection(s.commit());
    await s.commit();
    expect(s.writes.compactions).toBe(1);
    expect(s.writes.logAppends).toBe(0);
    expect(statSync(logFile(dir)).size).toBe(s.pendingBytes);
    await s.close();
    expect(seqs(await openStore(dir))).toEqual(Array.from({ length: 16 }, (_, i) => (i + 1) * 50));
  });
});

/** Temp files of atomic writes left in the dir (temp-files.ts names them `.<target>.tmp-…`). */
const temps = (dir: string) => readdirSync(dir).filter((n) => n.includes(".tmp-"));

describe("ordering within a commit", () => {
  test("the snapshot's temp is written and synced while the log syncs, and put in place only after the log is durable", async () => {
    const dir = setup();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let holding = false;
    const s = await openStore(dir, {
      fault: async (op) => {
        if (op !== "log_sync" || holding) return;
        holding = true;
        await held;
      },
    });
    s.tryAdd(ev(1));
    s.setSubscription("k", { cursor: "1", recent: ["e1"] });
    const committed = s.commit();
    const staged = () => temps(dir).filter((n) => n.startsWith(".mcp-events.json.tmp-"));
    try {
      // Bounded wait for the overlap's marker: the snapshot staged next to the log while its sync is held.
      for (let i = 0; i < 500 && !(holding && staged().length > 0); i++) await Bun.sleep(2);
      expect(holding).toBe(true);
      expect(staged().length).toBe(1);
      // The log's sync has not completed: the snapshot (its cursor and dedup window) must not be there yet.
      expect(existsSync(snapFile(dir))).toBe(false);
    } finally {
      release();
    }
    await committed;
    expect(temps(dir)).toEqual([]);
    expect((await EventsStore.readSnapshot(dir))?.subscriptions.k?.cursor).toBe("1");
    expect(s.writes).toMatchObject({ logSyncs: 1, snapshots: 1 });
  });
});

describe("failed writes", () => {
  for (const op of ["log_append", "log_sync"] as const) {
    test(`a failure at ${op} is reported, the snapshot is not written, and the next commit retries`, async () => {
      const dir = setup();
      const f = faults();
      const s = await openStore(dir, { fault: f.fn });
      s.tryAdd(ev(1));
      s.setSubscription("k", { cursor: "1", recent: ["e1"] });
      f.arm(op);
      const e = await rejection(s.commit());
      expect(e.kind).toBe("write_failed");
      expect(e.message).toContain(logFile(dir));
      expect(existsSync(snapFile(dir))).toBe(false); // the cursor never runs ahead of the events it passed
      expect(temps(dir)).toEqual([]); // the snapshot staged beside the log is removed with the failure
      expect(existsSync(logFile(dir)) ? statSync(logFile(dir)).size : 0).toBe(0);
      s.tryAdd(ev(2));
      await s.commit();
      expect(readFileSync(logFile(dir), "utf8")).toBe(addLine(1) + addLine(2));
      await s.close();
      const r = await openStore(dir);
      expect(seqs(r)).toEqual([1, 2]);
      expect(r.subscription("k")?.cursor).toBe("1");
    });
  }

  test("a failed snapshot write is reported and retried without rewriting the log", async () => {
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn });
    s.tryAdd(ev(1));
    s.setSubscription("k", { cursor: "1", recent: [] });
    f.arm("snapshot");
    expect((await rejection(s.commit())).kind).toBe("write_failed");
    expect(existsSync(snapFile(dir))).toBe(false);
    expect(s.writes.logAppends).toBe(1);
    await s.commit();
    expect(s.writes).toMatchObject({ logAppends: 1, snapshots: 1 });
    expect((await EventsStore.readSnapshot(dir))?.subscriptions.k?.cursor).toBe("1");
  });

  test("a scheduled commit that fails is retried in the background", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn });
    f.arm("log_append");
    s.tryAdd(ev(1));
    s.scheduleCommit();
    for (let i = 0; i < 300 && s.writes.logSyncs === 0; i++) await Bun.sleep(10);
    expect(s.writes.logSyncs).toBe(1);
    expect(readFileSync(logFile(dir), "utf8")).toBe(addLine(1));
  });

  test("close logs a failing last write and still closes; a later commit reports the store closed", async () => {
    setQuiet(true);
    const dir = setup();
    const f = faults();
    const s = await openStore(dir, { fault: f.fn });
    s.tryAdd(ev(1));
    f.arm("log_append", Number.POSITIVE_INFINITY);
    await s.close();
    expect((await rejection(s.commit())).kind).toBe("closed");
  });
});

describe("loading", () => {
  test("a torn log tail does not swallow the next event", async () => {
    const dir = setup();
    const torn = addLine(2).slice(0, 25);
    writeFileSync(logFile(dir), addLine(1) + torn);
    const s = await openStore(dir);
    expect(s.repairedBytes).toBe(Buffer.byteLength(torn));
    expect(readFileSync(logFile(dir), "utf8")).toBe(addLine(1)); // cut before anything else happens
    expect(seqs(s)).toEqual([1]);
    expect(s.tryAdd(ev(2))?.seq).toBe(2);
    await s.commit();
    await s.close();
    const r = await openStore(dir);
    expect(seqs(r)).toEqual([1, 2]);
    expect(r.skippedLines).toBe(0);
    expect(readFileSync(logFile(dir), "utf8")).toBe(addLine(1) + addLine(2));
  });

  test("a symlink at the log path is refused, at open and when the log is first created", async () => {
    setQuiet(true); // the store's last write at close is refused too, and says so
    const dir = setup();
    const target = join(dir, "elsewhere");
    writeFileSync(target, "precious\n");
    symlinkSync(target, logFile(dir));
    const e = await rejection(EventsStore.open(dir, DEFAULTS));
    expect(e.kind).toBe("file_refused");
    expect(e.message).toContain("symbolic link");

    const dir2 = join(dir, "second");
    mkdirSync(dir2);
    const s = await openStore(dir2);
    s.tryAdd(ev(1));
    symlinkSync(target, logFile(dir2));
    expect((await rejection(s.commit())).message).toContain("symbolic link");
    expect(readFileSync(target, "utf8")).toBe("precious\n");
  });

  test("a symlink at the snapshot path is refused", async () => {
    const dir = setup();
    const target = join(dir, "elsewhere.json");
    writeFileSync(target, JSON.stringify({ version: "vigil.mcp-events.v1", subscriptions: {}, last_client_ms: null }));
    symlinkSync(target, snapFile(dir));
    expect((await rejection(EventsStore.open(dir, DEFAULTS))).kind).toBe("file_refused");
  });

  test("a log over its bound is refused rather than read", async () => {
    const dir = setup();
    writeFileSync(logFile(dir), addLine(1));
    truncateSync(logFile(dir), maxLogFileBytes(1024) + 1); // sparse: nothing is really allocated
    const e = await rejection(EventsStore.open(dir, { maxPending: 10, maxPendingBytes: 1024 }));
    expect(e.kind).toBe("file_refused");
    expect(e.message).toContain(logFile(dir));
  });
});
