import { expect, test } from "bun:test";
import { type Frame, LineSplitter, OVERSIZED_HEAD_BYTES } from "../../../src/shared/ndjson/line-splitter.ts";

const enc = (s: string) => Buffer.from(s);
const text = (f: Frame) => (f.kind === "line" ? Buffer.from(f.bytes).toString() : `<oversized ${f.length}>`);

function feed(splitter: LineSplitter, chunks: string[]): Frame[] {
  const frames = chunks.flatMap((c) => splitter.push(enc(c)));
  return [...frames, ...splitter.end()];
}

test("splits lines within and across chunks, keeping the exact bytes to forward", () => {
  const frames = feed(new LineSplitter(1024), ['{"a":1}\n{"b"', ':2}\n\n{"c":', "3}\r\n"]);
  expect(frames.map(text)).toEqual(['{"a":1}', '{"b":2}', "", '{"c":3}\r']);
  const last = frames[3]!;
  expect(last.kind === "line" && Buffer.from(last.withNewline).toString()).toBe('{"c":3}\r\n');
});

test("an unterminated last line is still delivered at EOF, with a newline to forward", () => {
  const frames = feed(new LineSplitter(1024), ["abc"]);
  expect(frames.length).toBe(1);
  const f = frames[0]!;
  expect(f.kind === "line" && Buffer.from(f.withNewline).toString()).toBe("abc\n");
});

test("a line over the cap is never buffered whole: bounded head and tail, exact length", () => {
  const splitter = new LineSplitter(100);
  const big = `{"id":7,"x":"${"y".repeat(1_000_000)}","z":"END"}`;
  const chunks: string[] = [];
  for (let i = 0; i < big.length; i += 65536) chunks.push(big.slice(i, i + 65536));
  let maxBuffered = 0;
  const frames: Frame[] = [];
  for (const c of chunks) {
    frames.push(...splitter.push(enc(c)));
    maxBuffered = Math.max(maxBuffered, splitter.buffered);
  }
  frames.push(...splitter.push(enc('\n{"ok":1}\n')));
  expect(maxBuffered).toBeLessThanOrEqual(OVERSIZED_HEAD_BYTES);
  expect(frames.length).toBe(2);
  const over = frames[0]!;
  expect(over.kind).toBe("oversized");
  if (over.kind === "oversized") {
    expect(over.length).toBe(big.length);
    expect(Buffer.from(over.head).toString().startsWith('{"id":7')).toBe(true);
    expect(Buffer.from(over.tail).toString().endsWith('"z":"END"}')).toBe(true);
  }
  expect(text(frames[1]!)).toBe('{"ok":1}');
});

test("exactly at the cap passes; one byte over does not", () => {
  expect(feed(new LineSplitter(5), ["12345\n"]).map(text)).toEqual(["12345"]);
  expect(feed(new LineSplitter(5), ["123", "456\n"]).map(text)).toEqual(["<oversized 6>"]);
});
