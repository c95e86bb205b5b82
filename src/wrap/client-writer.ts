/**
 * The one writer of wrap's stdout (the MCP stream to the client). Forwarded server lines and
 * vigil's own replies go through it, so lines never interleave; callers await `write`, which
 * resolves once the bytes have been handed to the pipe, so a slow client slows the server and
 * memory stays bounded by one batch.
 */
import type { FileSink } from "bun";

export class ClientWriter {
  private readonly sink: FileSink;
  private flushing: Promise<void> = Promise.resolve();
  /** Set once a write failed (the client went away): later writes are dropped. */
  broken: string | null = null;
  private closed = false;

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

  /** Writes whole lines (each ending in "\n") and waits for them to be taken by the pipe. */
  async write(lines: Uint8Array[]): Promise<boolean> {
    if (this.broken !== null || this.closed) return false;
    try {
      for (const line of lines) this.sink.write(line);
    } catch (e) {
      this.fail(e);
      return false;
    }
    return this.flush();
  }

  private flush(): Promise<boolean> {
    const next = this.flushing.then(async () => {
      if (this.broken !== null) return;
      try {
        await this.sink.flush();
      } catch (e) {
        this.fail(e);
      }
    });
    this.flushing = next;
    return next.then(() => this.broken === null);
  }

  /** Flushes what is pending (bounded by the caller) and closes stdout. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    try {
      await this.sink.end();
    } catch {
      // the client is gone; nothing left to tell it
    }
  }
}
