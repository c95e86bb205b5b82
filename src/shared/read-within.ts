/**
 * Reads a byte stream whole under ONE deadline for all of it and a byte cap (every wait and every
 * input bounded: ../spec/README.md, Processes). The body grows as bytes arrive — never sized from
 * what the sender announced — and a stream that stalls, overruns or fails is cancelled and
 * nothing of it is kept. `readAnnounced` is the one-step read of a request body whose framing
 * already bounds it (below).
 */
import { within } from "./time.ts";

export type ReadWithin =
  | { kind: "ok"; bytes: Uint8Array }
  /** More than `maxBytes` arrived. */
  | { kind: "too_large" }
  /** The deadline passed before the stream ended. */
  | { kind: "timeout" }
  /** The stream failed (the peer went away). */
  | { kind: "failed" };

export async function readWithin(stream: ReadableStream<Uint8Array> | null, o: { maxBytes: number; deadlineMs: number }): Promise<ReadWithin> {
  if (stream === null) return { kind: "ok", bytes: new Uint8Array() };
  const reader = stream.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), o.deadlineMs);
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  const give = (result: ReadWithin): ReadWithin => {
    // Cancelling settles a read still pending on the stalled stream; its rejection is ours to drop.
    void reader.cancel().catch(() => {});
    return result;
  };
  try {
    for (;;) {
      let step;
      try {
        step = await Promise.race([reader.read(), expired]);
      } catch {
        return give({ kind: "failed" });
      }
      if (step === "timeout") return give({ kind: "timeout" });
      if (step.done) break;
      size += step.value.byteLength;
      if (size > o.maxBytes) return give({ kind: "too_large" });
      chunks.push(step.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return { kind: "ok", bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) };
}

/**
 * A request body whose framing bounds it already (a Content-Length the caller checked against its
 * cap, no Transfer-Encoding), read whole by the runtime in one step under the same single
 * deadline: no stream reader and no per-chunk promise, which on a ~130-byte body more than halves
 * the CPU of receiving it over HTTP (bench/webhook/hotpath.ts). A body that stalls past the deadline is
 * `timeout`; the runtime's read is left to fail when the caller closes the connection (the 408
 * says `Connection: close`), and its rejection is ours to drop. A body that ended short is
 * `failed` or comes back shorter: the caller compares it with what was announced.
 */
export async function readAnnounced(body: { bytes(): Promise<Uint8Array> }, o: { deadlineMs: number }): Promise<ReadWithin> {
  let reading: Promise<Uint8Array>;
  try {
    reading = body.bytes();
  } catch {
    return { kind: "failed" }; // already read, or not readable at all
  }
  try {
    const bytes = await within(reading, o.deadlineMs);
    if (bytes !== undefined) return { kind: "ok", bytes };
    reading.catch(() => {});
    return { kind: "timeout" };
  } catch {
    return { kind: "failed" };
  }
}
