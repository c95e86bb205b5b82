// A push stream's backpressure (src/events/wire/push-stream.ts over mcp/read-gate.ts): near the top
// of its buffer (highWaterOf) it holds its connection's read gate, lets go once drained, closed or ended; a gate
// held for STALL_MS ends the stream with `overflow` (the last resort, reconnect from the cursor);
// without a gate, a full buffer overflows as before. The queue never passes its capacity, in count
// or in weight (the params' JSON text: a few large events hold the gate long before the count does).
import { describe, expect, test } from "bun:test";
import { ReadGate } from "../../../src/mcp/read-gate.ts";
import { PushStream, STALL_MS, STREAM_BUFFER_BYTES, highWaterOf } from "../../../src/events/wire/push-stream.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";

const event = (i: number) => ({ method: "notifications/events/event", params: { eventId: `e${i}`, name: "n", cursor: String(i) } });

function setup(capacity: number, withGate = true) {
  const clock = new FakeScheduler();
  const gate = new ReadGate();
  let stopped = 0;
  const stream = new PushStream(capacity, () => stopped++, clock, withGate ? gate : null);
  return { clock, gate, stream, stopped: () => stopped };
}

describe("push stream backpressure", () => {
  test("the high-water mark holds the gate; draining releases it and the reader may go on", async () => {
    const { gate, stream } = setup(8);
    expect(highWaterOf(8)).toBe(6);
    expect(highWaterOf(256)).toBe(224);
    expect(highWaterOf(1)).toBe(1);
    for (let i = 1; i <= 5; i++) expect(stream.offer(event(i))).toBe(true);
    expect(gate.wait()).toBeNull();
    expect(stream.offer(event(6))).toBe(true);
    const paused = gate.wait();
    expect(paused).not.toBeNull();
    expect(stream.holding).toBe(true);
    let opened = false;
    void paused!.then(() => (opened = true));
    const first = await stream.next(600_000);
    expect(first).toMatchObject({ kind: "notification", notification: { params: { eventId: "e1" } } });
    expect(stream.drainQueued()).toHaveLength(5);
    await Promise.resolve();
    expect(opened).toBe(true);
    expect(gate.wait()).toBeNull();
  });

  test("a burst larger than the buffer, read under the gate, never overflows and keeps every event in order", async () => {
    const { gate, stream } = setup(4);
    const seen: string[] = [];
    // The reader: one notification per step, waiting while the gate is held (as line-reader.ts does).
    const reader = (async () => {
      for (let i = 1; i <= 100; i++) {
        expect(stream.offer(event(i))).toBe(true);
        expect(stream.queued).toBeLessThanOrEqual(4);
        const paused = gate.wait();
        if (paused !== null) await paused;
      }
    })();
    while (seen.length < 100) {
      const item = await stream.next(600_000);
      if (item === "idle" || item.kind !== "notification") throw new Error(`unexpected ${JSON.stringify(item)}`);
      seen.push(String(item.notification.params.eventId), ...stream.drainQueued().map((n) => String(n.params.eventId)));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await reader;
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => `e${i + 1}`));
  });

  test("a gate held for STALL_MS ends the stream with overflow and lets go of the gate", async () => {
    const { clock, gate, stream, stopped } = setup(4);
    stream.offer(event(1));
    stream.offer(event(2));
    expect(gate.held).toBe(true);
    clock.advance(STALL_MS - 1);
    expect(gate.held).toBe(true);
    clock.advance(1);
    expect(gate.held).toBe(false);
    expect(stopped()).toBe(1);
    expect(stream.offer(event(3))).toBe(false);
    // What was queued still comes out, then the overflow end.
    expect(await stream.next(600_000)).toMatchObject({ kind: "notification" });
    expect(await stream.next(600_000)).toMatchObject({ kind: "notification" });
    expect(await stream.next(600_000)).toEqual({ kind: "end", end: { kind: "overflow" } });
  });

  test("closing or finishing a holding stream releases the gate", () => {
    const a = setup(2);
    a.stream.offer(event(1));
    expect(a.gate.held).toBe(true);
    a.stream.close();
    expect(a.gate.held).toBe(false);
    const b = setup(2);
    b.stream.offer(event(1));
    b.stream.finish({ kind: "final" });
    expect(b.gate.held).toBe(false);
    expect(b.clock.pending).toBe(0);
  });

  test("without a gate a full buffer still overflows (the last resort), bounded by its capacity", () => {
    const { stream, stopped } = setup(3, false);
    for (let i = 1; i <= 3; i++) expect(stream.offer(event(i))).toBe(true);
    expect(stream.offer(event(4))).toBe(false);
    expect(stream.queued).toBe(3);
    expect(stopped()).toBe(1);
  });

  test("two streams on one gate: it opens only when both let go", () => {
    const clock = new FakeScheduler();
    const gate = new ReadGate();
    const a = new PushStream(2, () => {}, clock, gate);
    const b = new PushStream(2, () => {}, clock, gate);
    a.offer(event(1));
    b.offer(event(2));
    a.drainQueued();
    expect(gate.held).toBe(true);
    b.drainQueued();
    expect(gate.held).toBe(false);
  });

  /** An event whose params weigh about `chars` (JSON text). */
  const heavy = (i: number, chars: number) => ({ method: "notifications/events/event", params: { eventId: `e${i}`, name: "n", cursor: String(i), data: { blob: "x".repeat(chars) } } });

  test("large events hold the gate by weight, long before the count would: 16 MiB at most queue", async () => {
    const { gate, stream, stopped } = setup(256);
    const MiB = 1024 * 1024;
    let accepted = 0;
    while (!gate.held) {
      expect(stream.offer(heavy(accepted + 1, MiB))).toBe(true);
      accepted++;
    }
    // 7/8 of the bound by weight, with 14 of 256 slots used.
    expect(accepted).toBe(14);
    expect(stream.bytesQueued).toBeGreaterThanOrEqual(highWaterOf(STREAM_BUFFER_BYTES));
    // Past the gate (what an HTTP body already held): taken up to the bound, then the last resort.
    expect(stream.offer(heavy(15, MiB))).toBe(true);
    expect(stream.offer(heavy(16, 3 * MiB))).toBe(false);
    expect(stopped()).toBe(1);
    expect(stream.bytesQueued).toBeLessThanOrEqual(STREAM_BUFFER_BYTES);
    // Everything accepted comes out, in order, then the overflow (reconnect from the cursor).
    const ids: unknown[] = [];
    for (;;) {
      const item = await stream.next(600_000);
      if (item === "idle" || item.kind === "end") {
        expect(item).toEqual({ kind: "end", end: { kind: "overflow" } });
        break;
      }
      ids.push(item.notification.params.eventId);
    }
    expect(ids).toEqual(Array.from({ length: 15 }, (_, i) => `e${i + 1}`));
    expect(stream.bytesQueued).toBe(0);
    expect(gate.wait()).toBeNull();
  });

  test("one event heavier than the whole bound is taken alone, and the stream goes on once it is drained", async () => {
    const clock = new FakeScheduler();
    const gate = new ReadGate();
    const stream = new PushStream(256, () => {}, clock, gate, 10_000);
    expect(stream.offer(heavy(1, 50_000))).toBe(true);
    expect(gate.held).toBe(true);
    expect(await stream.next(600_000)).toMatchObject({ kind: "notification", notification: { params: { eventId: "e1" } } });
    expect(gate.held).toBe(false);
    expect(stream.bytesQueued).toBe(0);
    for (let i = 2; i <= 4; i++) expect(stream.offer(heavy(i, 2_000))).toBe(true);
    expect(stream.drainQueued().map((n) => n.params.eventId)).toEqual(["e2", "e3", "e4"]);
    expect(stream.bytesQueued).toBe(0);
  });
});
