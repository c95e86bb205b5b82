/**
 * 8 MiB server lines held across reads, old against new in one process (bench/wrap/hotpath.ts
 * prints this table; `bun bench/wrap/hotpath-large.ts` runs it alone).
 *
 * Each message arrives as fresh chunks of the size a pipe read returns (~214 KiB, each its own
 * ArrayBuffer, as a stream reader hands them over), is split, scanned and handed to a sink that
 * drops it; the chunks are garbage once the message is relayed. CPU is process.cpuUsage over
 * blocks of messages (all threads, so the collector's own threads count), old and new alternating.
 *
 *   old: the line is held as the reads' own chunks, and Bun.gc(false) after each large line
 *        (the tree before issue 16)
 *   new: the held part is copied into reused pool blocks (BlockPool); the same hint after it
 *
 * In this process the copy is what shows (a tiny heap, chunks made by slice()); in wrap itself the
 * held reads were promoted by the collections their own allocation triggered and the hint then cost
 * ~3.8 ms per message: the harness's middle CPU/call and VmHWM are the figures that count there.
 */
import { BlockPool } from "../../src/shared/ndjson/block-pool.ts";
import { type Frame, LineSplitter, OVERSIZED_HEAD_BYTES } from "../../src/shared/ndjson/line-splitter.ts";
import { scanServerFrame } from "../../src/wrap/server-frames.ts";

const MiB = 1024 * 1024;
const CHUNK = 219_264;

type Variant = "old" | "new";

function message(id: number): Uint8Array {
  const head = '{"result":{"content":[{"type":"text","text":"';
  return Buffer.from(`${head}${"x".repeat(8 * MiB)}"}]},"jsonrpc":"2.0","id":${id}}\n`);
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function rssMiB(): number {
  return process.memoryUsage().rss / MiB;
}

/** Relays `count` messages through the variant's splitter; returns CPU ms per message. */
function block(splitter: LineSplitter, line: Uint8Array, count: number, sink: (b: Uint8Array) => void): number {
  const c0 = cpuMs();
  for (let m = 0; m < count; m++) {
    for (let p = 0; p < line.length; p += CHUNK) {
      // A fresh buffer per read, as a stream reader returns it.
      const frames: Frame[] = splitter.push(line.slice(p, Math.min(line.length, p + CHUNK)));
      for (const f of frames) {
        if (f.kind !== "parts") throw new Error(`expected a parts frame, got ${f.kind}`);
        if (scanServerFrame(f.parts)?.idKey !== "7") throw new Error("scan failed");
        for (const piece of f.parts) sink(piece);
        Bun.gc(false);
      }
    }
  }
  return (cpuMs() - c0) / count;
}

export async function largeLineRows(blocks = 6, perBlock = 10): Promise<[string, number, number][]> {
  const line = message(7);
  let sunk = 0;
  const sink = (b: Uint8Array) => {
    sunk += b[b.length - 1]!;
  };
  const splitters: Record<Variant, LineSplitter> = {
    old: new LineSplitter(32 * MiB, MiB),
    new: new LineSplitter(32 * MiB, MiB, OVERSIZED_HEAD_BYTES, new BlockPool()),
  };
  const cpu: Record<Variant, number[]> = { old: [], new: [] };
  const rssGrowth: Record<Variant, number> = { old: 0, new: 0 };
  for (const v of ["old", "new"] as const) block(splitters[v], line, 3, sink); // warm-up
  for (let b = 0; b < blocks; b++) {
    for (const v of b % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const)) {
      Bun.gc(true);
      await Bun.sleep(20);
      const before = rssMiB();
      let peak = before;
      const c0 = cpuMs();
      for (let i = 0; i < perBlock; i++) {
        block(splitters[v], line, 1, sink);
        peak = Math.max(peak, rssMiB());
      }
      cpu[v].push((cpuMs() - c0) / perBlock);
      rssGrowth[v] = Math.max(rssGrowth[v], peak - before);
    }
  }
  if (sunk === 0) throw new Error("nothing relayed");
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return [
    ["old: held as the reads' chunks + Bun.gc(false) per large line", med(cpu.old), rssGrowth.old],
    ["new: held in reused pool blocks + Bun.gc(false) per large line", med(cpu.new), rssGrowth.new],
  ];
}

if (import.meta.main) {
  for (const [name, ms, rss] of await largeLineRows()) {
    process.stdout.write(`${name.padEnd(66)}  ${ms.toFixed(2).padStart(7)} ms CPU/message  RSS peak +${rss.toFixed(1)} MiB within a block of 10\n`);
  }
}
