/**
 * Reads a child's pipe through a LineSplitter and hands each frame over in order. Shared by the
 * stdout reader (messages) and the stderr forwarder (log lines) of a stdio server.
 *
 * With a ReadGate (stdout), the gate is asked after every frame: while it is held (a push stream
 * is full), the rest of the chunk waits here and nothing more is read from the pipe, so the server
 * blocks on its own write — backpressure instead of an unbounded queue in vigil.
 */
import type { Frame, LineSplitter } from "../shared/ndjson/line-splitter.ts";
import type { ReadGate } from "./read-gate.ts";

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
  gate?: ReadGate,
): LineReader {
  const reader = stream.getReader();
  let stopped = false;
  let wakeStopped: () => void = () => {};
  const stoppedSignal = new Promise<void>((resolve) => (wakeStopped = resolve));
  const done = (async () => {
    try {
      reading: for (;;) {
        const { value, done: eof } = await reader.read();
        if (eof) break;
        for (const frame of splitter.push(value)) {
          on.frame(frame);
          const paused = gate?.wait();
          if (paused == null) continue;
          await Promise.race([paused, stoppedSignal]);
          if (stopped) break reading;
        }
      }
      for (const frame of splitter.end()) on.frame(frame);
    } catch (e) {
      on.failed(e);
    }
    on.ended();
  })();
  return {
    done,
    stop: () => {
      stopped = true;
      wakeStopped();
      void reader.cancel().catch(() => {});
    },
  };
}
