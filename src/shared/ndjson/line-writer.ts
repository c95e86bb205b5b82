/**
 * The one writer of a stdout or pipe that carries lines: wrap's MCP stream to the client, serve's
 * frames in stdio mode. In wrap, forwarded server lines and vigil's own replies go through it, so
 * lines never interleave; callers await `write`, which
 * resolves once the bytes have been handed to the pipe, so a slow client slows the server and
 * memory stays bounded by one batch.
 */
import type { FileSink } from "bun";
import { sinkWrite } from "../sink.ts";
import { coalesceRuns } from "./byte-runs.ts";

/** Bytes handed to a sink before waiting for the pipe to take them. */
export const FLUSH_EVERY_BYTES = 256 * 1024;

export class LineWriter {
  private readonly sink: FileSink;
  /** Set once a write failed (the client went away): later writes are dropped. */
  broken: string | null = null;
  private closed = false;
  /**
   * Set while a write waits for the pipe between slices of its lines (some appended, some not):
   * another write appending then would land inside a line, so it waits for this first.
   */
  private slicing: Promise<void> | null = null;

  /** Called once, when a write to the client first fails. */
  onBroken: (reason: string) => void = () => {};

  constructor(sink: FileSink = Bun.stdout.writer()) {
    this.sink = sink;
  }

  private fail(e: unknown): void {
    if (this.broken !== null) return;
    this.broken = String(e);
    this.onBroken(this.broken);
  }

  /**
   * Writes whole lines (each ending in "\n") and waits for them to be taken by the pipe. Appends to
   * the sink are synchronous, and a write that must wait for the pipe between slices holds off
   * every other write until its last slice is appended, so concurrent callers can never interleave
   * within a line; a flush only waits for what is already appended.
   */
  async write(lines: Uint8Array[]): Promise<boolean> {
    // Only a write suspended between its slices makes others wait: the common write costs nothing.
    while (this.slicing !== null) await this.slicing;
    if (this.broken !== null || this.closed) return false;
    let unflushed = 0;
    let slicing: PromiseWithResolvers<void> | null = null;
    try {
      for (const run of coalesceRuns(lines)) {
        sinkWrite(this.sink, run, (e) => this.fail(e));
        unflushed += run.byteLength;
        // A large line arrives as many pieces: hand them over in slices, so the sink never copies
        // a whole multi-megabyte message into its own buffer while the pipe is full.
        if (unflushed >= FLUSH_EVERY_BYTES) {
          if (slicing === null) {
            slicing = Promise.withResolvers<void>();
            this.slicing = slicing.promise;
          }
          if (!(await this.flush())) return false;
          unflushed = 0;
        }
      }
    } catch (e) {
      this.fail(e);
      return false;
    } finally {
      if (slicing !== null) {
        this.slicing = null;
        slicing.resolve();
      }
    }
    return unflushed === 0 ? true : this.flush();
  }

  private async flush(): Promise<boolean> {
    if (this.broken !== null) return false;
    try {
      await this.sink.flush();
    } catch (e) {
      this.fail(e);
    }
    return this.broken === null;
  }

  /** Flushes what is pending (bounded by the caller) and closes stdout. */
  async close(): Promise<void> {
    if (this.closed) return;
    // A line still being sliced out is finished first, not cut off by the end of the stream.
    while (this.slicing !== null) await this.slicing;
    await this.flush();
    this.closed = true;
    try {
      await this.sink.end();
    } catch {
      // the client is gone; nothing left to tell it
    }
  }
}
