/**
 * A session's SSE stream as the bench harnesses read it: one GET, each body chunk handed to the
 * harness's own counter as it arrives (the counting is what differs between harnesses; the stream
 * is the same).
 */
export class SseStream {
  /** The first chunk came (the daemon's attach comment). */
  attached = false;
  /** The stream ended: closed here, by the server, or failed. */
  closed = false;
  /** Why it ended, unless it was closed here (a throw from `onChunk` ends it too). */
  error: string | null = null;
  private readonly abort = new AbortController();

  constructor(url: string, onChunk: (chunk: Uint8Array) => void) {
    void this.pump(url, onChunk);
  }

  close(): void {
    this.abort.abort();
  }

  private async pump(url: string, onChunk: (chunk: Uint8Array) => void): Promise<void> {
    try {
      const res = await fetch(url, { signal: this.abort.signal });
      if (res.status !== 200 || res.body === null) throw new Error(`HTTP ${res.status}`);
      for await (const chunk of res.body) {
        this.attached = true;
        onChunk(chunk);
      }
    } catch (e) {
      // aborted, or the server ended the stream
      if (!this.abort.signal.aborted) this.error = e instanceof Error ? e.message : String(e);
    } finally {
      this.closed = true;
    }
  }
}
