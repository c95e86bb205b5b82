/**
 * Bun's FileSink.write returns a number, or a Promise while the write is pending — and that promise
 * rejects when the reader has gone (EPIPE). A try/catch around the call does not see that
 * rejection; left alone it is an unhandled rejection that can end the process. Every sink write
 * goes through here so the rejection is always handled (the next flush reports the failure too).
 */
import type { FileSink } from "bun";

/** One handler for callers that pass none (a default `() => {}` would be a new closure per write). */
const ignoreError = (_e: unknown): void => {};

export function sinkWrite(sink: FileSink, chunk: string | Uint8Array, onError: (e: unknown) => void = ignoreError): void {
  const pending = sink.write(chunk);
  if (typeof pending !== "number") pending.then(undefined, onError);
}
