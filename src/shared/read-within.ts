/**
 * Reads a byte stream whole under ONE deadline for all of it and a byte cap (every wait and every
 * input bounded: ../spec/README.md, Processes). The body grows as bytes arrive — never sized from
 * what the sender announced — and a stream that stalls, overruns or fails is cancelled and
 * nothing of it is kept.
 */

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
