/**
 * LineWriter is the one writer of wrap's stdout (wrap.md §2: lines never interleave). A large line
 * is handed to the sink in slices, waiting for the pipe between them; a line written by another
 * caller meanwhile (wrap: vigil's own reply to a client frame, while a large server result is
 * relayed to a slow client) must come after the large line, never inside it.
 */
import { expect, test } from "bun:test";
import type { FileSink } from "bun";
import { FLUSH_EVERY_BYTES, LineWriter } from "../../../src/shared/ndjson/line-writer.ts";

/** A sink whose flush waits until the test drains it, like a pipe whose reader has paused. */
function slowSink() {
  const got: Uint8Array[] = [];
  let waiting: (() => void)[] = [];
  const sink = {
    write: (b: Uint8Array | string) => {
      const bytes = typeof b === "string" ? new TextEncoder().encode(b) : b.slice();
      got.push(bytes);
      return bytes.length;
    },
    flush: () => new Promise<number>((resolve) => waiting.push(() => resolve(0))),
    end: () => {
      got.push(new TextEncoder().encode("<end>"));
      return 0;
    },
  } as unknown as FileSink;
  const drain = () => {
    const w = waiting;
    waiting = [];
    for (const wake of w) wake();
    return w.length;
  };
  return { sink, drain, text: () => Buffer.concat(got).toString("latin1") };
}

test("a line written while a large line waits for the pipe between its slices goes after it, not inside it", async () => {
  const s = slowSink();
  const writer = new LineWriter(s.sink);
  const big = new Uint8Array(3 * FLUSH_EVERY_BYTES + 10).fill(0x61);
  big[big.length - 1] = 0x0a;
  // Sent as pieces in separate buffers, as a large server result is relayed (server-relay.ts: "parts" frames).
  const pieces = [big.slice(0, FLUSH_EVERY_BYTES + 5), big.slice(FLUSH_EVERY_BYTES + 5, 2 * FLUSH_EVERY_BYTES + 7), big.slice(2 * FLUSH_EVERY_BYTES + 7)];
  const first = writer.write(pieces);
  const second = writer.write([new TextEncoder().encode('{"own":"reply"}\n')]);
  // Let the pipe take everything, as often as anyone waits on it.
  for (let i = 0; i < 50; i++) {
    await Bun.sleep(0);
    s.drain();
  }
  expect(await first).toBe(true);
  expect(await second).toBe(true);
  const lines = s.text().split("\n");
  expect(lines.length).toBe(3);
  expect(lines[0]).toBe("a".repeat(big.length - 1));
  expect(lines[1]).toBe('{"own":"reply"}');
  expect(lines[2]).toBe("");
});

test("close while a large line is being sliced out ends the stream after the line, not inside it", async () => {
  const s = slowSink();
  const writer = new LineWriter(s.sink);
  const size = 3 * FLUSH_EVERY_BYTES + 10;
  const pieces = [0, 1, 2, 3].map((i) => new Uint8Array(i < 3 ? FLUSH_EVERY_BYTES : 10).fill(0x62));
  pieces[3]![9] = 0x0a;
  const first = writer.write(pieces);
  const closing = writer.close();
  for (let i = 0; i < 50; i++) {
    await Bun.sleep(0);
    s.drain();
  }
  expect(await first).toBe(true);
  await closing;
  expect(s.text()).toBe(`${"b".repeat(size - 1)}\n<end>`);
});
