import { expect, test } from "bun:test";
import { BlockPool } from "../../../src/shared/ndjson/block-pool.ts";
import { type Frame, LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";

/** The bytes a relay would forward for a frame (an over-cap line forwards nothing of its own). */
function forwarded(f: Frame): Uint8Array {
  if (f.kind === "line") return f.withNewline;
  if (f.kind === "parts") return Buffer.concat(f.parts);
  return new Uint8Array(0);
}

/** Feeds chunks and copies what each push returns before the next push (the splitter's contract). */
function run(splitter: LineSplitter, chunks: Uint8Array[]): { out: Buffer; kinds: string[] } {
  const out: Uint8Array[] = [];
  const kinds: string[] = [];
  for (const c of chunks) {
    for (const f of splitter.push(c)) {
      kinds.push(f.kind);
      out.push(Buffer.from(forwarded(f)));
    }
  }
  for (const f of splitter.end()) {
    kinds.push(f.kind);
    out.push(Buffer.from(forwarded(f)));
  }
  return { out: Buffer.concat(out), kinds };
}

function randomChunks(bytes: Uint8Array, seed: number, max: number): Uint8Array[] {
  let x = seed;
  const rand = () => ((x = (x * 1103515245 + 12345) >>> 0) % max) + 1;
  const chunks: Uint8Array[] = [];
  for (let p = 0; p < bytes.length; ) {
    const n = Math.min(bytes.length - p, rand());
    // Each chunk is a fresh buffer, as a stream reader hands them over.
    chunks.push(bytes.slice(p, p + n));
    p += n;
  }
  return chunks;
}

test("with a pool, every byte of every line is forwarded unchanged, whatever the chunking", () => {
  const lines = [
    `{"id":1,"result":"${"a".repeat(300_000)}"}\n`,
    '{"id":2,"result":{}}\n',
    `{"id":3,"result":"${"b\\\\".repeat(200_000)}"}\n`,
    "\n",
    `{"id":4,"result":"${"c".repeat(5_000)}"}\n`,
    "tail without newline",
  ];
  const input = Buffer.from(lines.join(""));
  for (const [seed, max] of [[1, 997], [2, 4096], [3, 70_000], [4, 300_000]] as const) {
    const pool = new BlockPool(64 * 1024);
    const { out, kinds } = run(new LineSplitter(1 << 20, 100_000, 4096, pool), randomChunks(input, seed, max));
    expect(out.equals(Buffer.from(`${lines.join("")}\n`))).toBe(true);
    expect(kinds.length).toBe(6);
  }
});

test("pooled views stay valid until the next push, and the blocks are then reused", () => {
  const pool = new BlockPool(1024, 1 << 20);
  const splitter = new LineSplitter(1 << 20, 2048, 4096, pool);
  const line = (ch: string) => Buffer.from(`"${ch.repeat(5000)}"\n`);
  const a = line("a");
  const b = line("b");
  // Line a arrives in three reads; its frame comes with the third.
  expect(splitter.push(a.subarray(0, 2000))).toEqual([]);
  expect(splitter.push(a.subarray(2000, 4000))).toEqual([]);
  const frames = splitter.push(Buffer.concat([a.subarray(4000), b.subarray(0, 1500)]));
  expect(frames.length).toBe(1);
  const f = frames[0]!;
  expect(f.kind).toBe("parts");
  const before = Buffer.concat(f.kind === "parts" ? f.parts : []);
  expect(before.equals(a)).toBe(true);
  expect(pool.freeBytes).toBe(0);
  // The next push hands line a's blocks back; line b fills blocks of its own, from the free list.
  const next = splitter.push(b.subarray(1500));
  expect(next.length).toBe(1);
  const g = next[0]!;
  expect(Buffer.concat(g.kind === "parts" ? g.parts : []).equals(b)).toBe(true);
  expect(pool.freeBytes).toBeGreaterThan(0);
  splitter.end();
  expect(pool.freeBytes).toBeGreaterThanOrEqual(5 * 1024);
});

test("an over-cap line held in pooled blocks gives them back at once, and the next line is exact", () => {
  const pool = new BlockPool(1024, 1 << 20);
  const splitter = new LineSplitter(10_000, 2048, 64, pool);
  const big = Buffer.from(`{"id":9,"x":"${"z".repeat(20_000)}"}\n`);
  const ok = Buffer.from('{"id":10,"result":1}\n');
  const { out, kinds } = run(splitter, randomChunks(Buffer.concat([big, ok]), 5, 3000));
  expect(kinds).toEqual(["oversized", "line"]);
  expect(out.equals(ok)).toBe(true);
  expect(splitter.buffered).toBe(0);
});

test("the pool keeps no more free blocks than its bound", () => {
  const pool = new BlockPool(1024, 4096);
  const blocks = Array.from({ length: 10 }, () => pool.take());
  pool.give(blocks);
  expect(pool.freeBytes).toBe(4096);
  expect(pool.take()).toBe(blocks[3]!);
});
