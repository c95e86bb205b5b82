import { expect, test } from "bun:test";
import { readAnnounced, readWithin } from "../../../src/shared/read-within.ts";

function streamOf(chunks: string[], o: { fail?: boolean; open?: boolean } = {}) {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
      if (o.fail) c.error(new Error("peer went away"));
      else if (!o.open) c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

test("a stream within the cap is read whole, across chunks", async () => {
  const r = await readWithin(streamOf(["ab", "cd", "e"]).stream, { maxBytes: 5, deadlineMs: 10_000 });
  expect(r.kind).toBe("ok");
  expect(new TextDecoder().decode((r as { bytes: Uint8Array }).bytes)).toBe("abcde");
  expect(await readWithin(null, { maxBytes: 5, deadlineMs: 10_000 })).toEqual({ kind: "ok", bytes: new Uint8Array() });
});

test("one byte over the cap is too large, and the stream is cancelled", async () => {
  const s = streamOf(["abc", "def"], { open: true });
  expect(await readWithin(s.stream, { maxBytes: 5, deadlineMs: 10_000 })).toEqual({ kind: "too_large" });
  expect(s.cancelled()).toBe(true);
});

test("a stream that fails is failed, nothing kept", async () => {
  expect(await readWithin(streamOf(["ab"], { fail: true }).stream, { maxBytes: 5, deadlineMs: 10_000 })).toEqual({ kind: "failed" });
});

test("a stream that never ends times out and is cancelled", async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array([1]));
    },
    cancel() {
      cancelled = true;
    },
  });
  expect(await readWithin(stream, { maxBytes: 5, deadlineMs: 1 })).toEqual({ kind: "timeout" });
  expect(cancelled).toBe(true);
});

test("an announced body is read whole in one step", async () => {
  const r = await readAnnounced(new Request("http://x/", { method: "POST", body: "abcde" }), { deadlineMs: 10_000 });
  expect(r.kind).toBe("ok");
  if (r.kind === "ok") expect(new TextDecoder().decode(r.bytes)).toBe("abcde");
});

test("an announced body that never arrives is a timeout at the deadline", async () => {
  const stalled = { bytes: () => new Promise<Uint8Array>(() => {}) };
  expect(await readAnnounced(stalled, { deadlineMs: 1 })).toEqual({ kind: "timeout" });
});

test("an announced body whose read fails, or cannot even start, is failed", async () => {
  expect(await readAnnounced({ bytes: () => Promise.reject(new Error("peer went away")) }, { deadlineMs: 10_000 })).toEqual({ kind: "failed" });
  const used = new Request("http://x/", { method: "POST", body: "abc" });
  await used.text();
  expect(await readAnnounced(used, { deadlineMs: 10_000 })).toEqual({ kind: "failed" });
});
