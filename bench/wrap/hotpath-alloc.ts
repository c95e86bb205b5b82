/**
 * Garbage per message of the client relay (issue 16, the p99 tail): the relay as it was
 * (client-relay-before.ts) against src/wrap/client-relay.ts, in the same process, over the same
 * kind of session. For each: µs per tools/call request (relayClientFrames alone; the response is
 * taken off the pending map by hand so both sides stay equal) and JS heap cells allocated per
 * request (bun:jsc heapStats().objectTypeCounts after a full collection, over a run short enough
 * that no collection runs in between), with the kinds that differ.
 *
 * Fewer cells per message means fewer eden collections per call: those pauses (1–3 ms on the
 * 2-core bench machine, every ~700 calls) and their concurrent marking threads are one source of
 * the tail.
 */
import { heapStats } from "bun:jsc";
import { relayClientFrames } from "../../src/wrap/client-relay.ts";
import type { ProxyState } from "../../src/wrap/proxy-state.ts";
import type { Frame } from "../../src/shared/ndjson/line-splitter.ts";
import { relayClientFrames as relayClientFramesBefore } from "./client-relay-before.ts";

type Relay = (state: ProxyState, frames: Frame[]) => Promise<void> | undefined;

export interface AllocRow {
  name: string;
  usBefore: number;
  usNow: number;
  cellsBefore: number;
  cellsNow: number;
  /** Cell kinds whose count per request differs by at least 0.5: [kind, before, now]. */
  kinds: [string, number, number][];
}

/** Cells per call of `fn` over `n` calls, by kind (no collection in between: n stays small). */
async function cellsPerCall(n: number, fn: (i: number) => Promise<void> | undefined): Promise<Map<string, number>> {
  Bun.gc(true);
  const before = heapStats().objectTypeCounts as Record<string, number>;
  for (let i = 0; i < n; i++) await fn(i);
  const after = heapStats().objectTypeCounts as Record<string, number>;
  const out = new Map<string, number>();
  for (const [kind, count] of Object.entries(after)) out.set(kind, (count - (before[kind] ?? 0)) / n);
  return out;
}

/**
 * `makeState` gives a fresh session; `frame(id)` the request frame of call `id`. The frame is built
 * outside the counted calls, so only the relay's own allocations are counted.
 */
export async function clientAllocRows(
  sessions: { name: string; makeState: () => Promise<{ state: ProxyState; close(): void }> }[],
  frame: (id: number) => Frame,
): Promise<AllocRow[]> {
  const rows: AllocRow[] = [];
  const N = 300;
  for (const s of sessions) {
    const results = new Map<Relay, { us: number; cells: Map<string, number> }>();
    const warm = 20_000;
    const relays: Relay[] = [relayClientFramesBefore, relayClientFrames];
    const sessionsOf = new Map<Relay, { state: ProxyState; close(): void }>();
    for (const relay of relays) sessionsOf.set(relay, await s.makeState());
    let id = 1;
    const call = (relay: Relay, frames: Frame[], n: number) => {
      const { state } = sessionsOf.get(relay)!;
      const done = relay(state, frames);
      // The server's answer, by hand: what relayServerFrames does to the pending map.
      const settle = () => void state.pending.delete(String(n));
      if (done === undefined) return settle();
      return done.then(settle);
    };
    // Warm both up, interleaved, then time them in alternating blocks.
    for (let i = 0; i < warm; i++) for (const relay of relays) {
      const n = id++;
      await call(relay, [frame(n)], n);
    }
    const times = new Map<Relay, number[]>(relays.map((r) => [r, []]));
    for (let block = 0; block < 10; block++) {
      for (const relay of relays) {
        const frames = Array.from({ length: 5_000 }, () => id++).map((n) => [n, frame(n)] as const);
        const cpu0 = process.cpuUsage();
        for (const [n, f] of frames) await call(relay, [f], n);
        const cpu = process.cpuUsage(cpu0);
        times.get(relay)!.push((cpu.user + cpu.system) / frames.length);
      }
    }
    for (const relay of relays) {
      const pre = Array.from({ length: N }, () => id++).map((n) => [n, frame(n)] as const);
      let k = 0;
      const cells = await cellsPerCall(N, () => {
        const [n, f] = pre[k++]!;
        return call(relay, [f], n);
      });
      const t = times.get(relay)!.sort((a, b) => a - b);
      results.set(relay, { us: t[t.length >> 1]!, cells });
    }
    for (const session of sessionsOf.values()) session.close();
    const before = results.get(relayClientFramesBefore)!;
    const now = results.get(relayClientFrames)!;
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + Math.max(0, b), 0);
    const kinds: [string, number, number][] = [];
    for (const kind of new Set([...before.cells.keys(), ...now.cells.keys()])) {
      const b = before.cells.get(kind) ?? 0;
      const a = now.cells.get(kind) ?? 0;
      if (Math.abs(b - a) >= 0.5) kinds.push([kind, b, a]);
    }
    rows.push({ name: s.name, usBefore: before.us, usNow: now.us, cellsBefore: total(before.cells), cellsNow: total(now.cells), kinds });
  }
  return rows;
}
