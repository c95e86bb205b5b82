/**
 * Stores and broadcasts a session's frames (serve.md §4): each frame is appended to the transcript,
 * which numbers it, and then handed to every subscriber. A subscriber that throws is dropped; it
 * never breaks the session or the other subscribers.
 */
import type { FrameBody } from "../protocol/frames.ts";
import type { Transcript, TranscriptRecord } from "../state/transcript.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { FrameListener } from "./types.ts";

export class FrameLog {
  private readonly listeners = new Set<FrameListener>();
  /** The last append failure (the transcript latches failed; later appends fail too). */
  lastError: unknown = null;

  constructor(readonly transcript: Transcript) {}

  subscribe(listener: FrameListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  get subscriberCount(): number {
    return this.listeners.size;
  }

  /**
   * The first failed append: said once on stderr, and told to every attached client as an `error`
   * frame that is not stored (it cannot be) and carries no seq (serve.md §6 item 9).
   */
  private failed(e: unknown): void {
    const message = `the session's transcript failed: ${errorMessage(e)}`;
    logLine(message);
    const frame = { type: "error", code: "session_failed", message };
    const json = JSON.stringify(frame);
    for (const listener of [...this.listeners]) {
      try {
        listener(frame as unknown as TranscriptRecord, json);
      } catch {
        this.listeners.delete(listener);
      }
    }
  }

  /** Appends and broadcasts; returns the stored record, or null when the transcript refused it. */
  emit(frame: FrameBody): TranscriptRecord | null {
    let stored: { record: TranscriptRecord; json: string };
    try {
      stored = this.transcript.appendFrame(frame as unknown as { type: string; [key: string]: unknown });
    } catch (e) {
      if (this.lastError === null) this.failed(e);
      this.lastError = e;
      return null;
    }
    for (const listener of [...this.listeners]) {
      if (!this.listeners.has(listener)) continue;
      try {
        listener(stored.record, stored.json);
      } catch {
        this.listeners.delete(listener);
      }
    }
    return stored.record;
  }
}
