/** Group commit on its own: sharing, coverage, failure propagation (serve.md §3). */
import { describe, expect, test } from "bun:test";
import { GroupCommit } from "../../../src/shared/durable/group-commit.ts";

function harness() {
  const h = {
    position: 0,
    flushes: [] as Array<{ covers: number; settle: (e?: Error) => void }>,
    gc: null as unknown as GroupCommit,
    async waitFlushes(n: number) {
      for (let i = 0; i < 1000 && h.flushes.length < n; i++) await Bun.sleep(0);
      expect(h.flushes.length).toBe(n);
    },
  };
  h.gc = new GroupCommit(
    () =>
      new Promise<void>((done, fail) => {
        h.flushes.push({ covers: h.position, settle: (e) => (e ? fail(e) : done()) });
      }),
    () => h.position,
  );
  return h;
}

describe("GroupCommit", () => {
  test("one flush in flight, one queued: any number of callers need two flushes", async () => {
    const h = harness();
    h.position = 1;
    const a = h.gc.request();
    const bs: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) {
      h.position++;
      bs.push(h.gc.request());
    }
    await h.waitFlushes(1);
    h.flushes[0]?.settle();
    await a;
    expect(h.gc.durable).toBe(1);
    await h.waitFlushes(2);
    expect(h.flushes[1]?.covers).toBe(101);
    h.flushes[1]?.settle();
    await Promise.all(bs);
    expect(h.gc.durable).toBe(101);
    expect(h.gc.flushes).toBe(2);
    await h.gc.request(); // nothing new
    expect(h.gc.flushes).toBe(2);
  });

  test("a failed flush rejects everyone waiting on it; the queued one still runs and can succeed", async () => {
    const h = harness();
    h.position = 1;
    const a = h.gc.request();
    const a2 = h.gc.request();
    h.position = 2;
    const b = h.gc.request();
    await h.waitFlushes(1);
    h.flushes[0]?.settle(new Error("EIO"));
    await expect(a).rejects.toThrow("EIO");
    await expect(a2).rejects.toThrow("EIO");
    expect(h.gc.durable).toBe(0);
    await h.waitFlushes(2);
    h.flushes[1]?.settle();
    await b;
    expect(h.gc.durable).toBe(2);
  });

  test("idle() waits for in-flight and queued flushes", async () => {
    const h = harness();
    h.position = 1;
    void h.gc.request();
    h.position = 2;
    void h.gc.request();
    let idle = false;
    const p = h.gc.idle().then(() => (idle = true));
    await h.waitFlushes(1);
    h.flushes[0]?.settle();
    await h.waitFlushes(2);
    expect(idle).toBe(false);
    h.flushes[1]?.settle();
    await p;
    expect(h.gc.durable).toBe(2);
  });
});
