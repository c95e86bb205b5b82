/**
 * Reads a child's pipe through a LineSplitter and hands each frame over in order. Shared by the
 * stdout reader (messages) and the stderr forwarder (log lines) of a stdio server.
 */
import type { Frame, LineSplitter } from "../shared/ndjson/line-splitter.ts";

export interface LineReader {
  /** Settles when the stream ended, failed or was stopped; never rejects. */
  readonly done: Promise<void>;
  /** Stops reading, for when a process outside the group still holds the pipe. */
  stop(): void;
}

/** Pumps a stream through a splitter, handing each frame over in order. */
export function readLines(
  stream: ReadableStream<Uint8Array>,
  splitter: LineSplitter,
  on: { frame(frame: Frame): void; failed(error: unknown): void; ended(): void },
): LineReader {
  const reader = stream.getReader();
  const done = (async () => {
    try {
      for (;;) {
        const { value, done: eof } = await reader.read();
        if (eof) break;
        for (const frame of splitter.push(value)) on.frame(frame);
      }
      for (const frame of splitter.end()) on.frame(frame);
    } catch (e) {
      on.failed(e);
    }
    on.ended();
  })();
  return { done, stop: () => void reader.cancel().catch(() => {}) };
}
