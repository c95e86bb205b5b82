/**
 * Stores and broadcasts a session's frames (serve.md §4): each frame is appended to the transcript,
 * which numbers it, and then handed to every subscriber. A frame the transcript refuses is not
 * broadcast (issue 11 item 8): what a client saw, a restart finds. `emit` says so by returning null,
 * and the caller fails what the frame belonged to (a run, a command). A subscriber that throws is
 * dropped; it never breaks the session or the other subscribers.
 */
import type { FrameBody } from "../protocol/frames.ts";
import type { Transcript, TranscriptRecord } from "../state/transcript.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { FrameListener } from "./types.ts";

export class FrameLog {
  private readonly listeners = new Set<FrameListener>();
  /** The last append failure: a frame over the record cap, or the transcript's latched failure. */
  lastError: unknown = null;
  private toldFailed = false;

  constructor(
    readonly transcript: Transcript,
    /** Told of each stored record before any subscriber (the session's history, history.ts): a client that saw a run_end finds its run in the history. */
    private readonly onStored: (record: TranscriptRecord) => void = () => {},
  ) {}

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
   * The transcript has failed for good (a write or sync error): said once on stderr, and told to
   * every attached client as an `error` notice with no seq (serve.md §6 item 9) — the one thing sent
   * unstored, because nothing can be stored any more and the session refuses all further work.
   */
  private failed(e: unknown): void {
    const message = `the session's transcript failed: ${errorMessage(e)}`;
    logLine(message, { level: "error", code: "session_failed" });
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

  /**
   * Appends and broadcasts; returns the stored record, or null when the transcript refused it.
   * `answer`: the frame is the stored stub of a larger answer (transcript-answer.ts); listeners get
   * the answer's line as a third argument.
   */
  emit(frame: FrameBody, answer?: (stored: TranscriptRecord) => { json: string }): TranscriptRecord | null {
    let stored: { record: TranscriptRecord; json: string };
    try {
      stored = this.transcript.appendFrame(frame as unknown as { type: string; [key: string]: unknown });
    } catch (e) {
      return this.refused(frame, e);
    }
    return this.send(stored, answer);
  }

  /**
   * Appends frames in order with one transcript write (transcript.ts appendFrames), then broadcasts
   * each stored one in seq order: every frame is still stored before any client is sent it. A frame
   * refused alone (over the cap) is skipped as `emit` skips it; per frame, its record or null.
   */
  emitMany(frames: readonly FrameBody[]): (TranscriptRecord | null)[] {
    const outcomes = this.transcript.appendFrames(frames as unknown as { type: string; [key: string]: unknown }[]);
    return outcomes.map((o, i) => ("error" in o ? this.refused(frames[i]!, o.error) : this.send(o)));
  }

  private refused(frame: FrameBody, e: unknown): null {
    this.lastError = e;
    if (this.transcript.failed === null) {
      // Only this frame was refused (over the record cap); the transcript goes on.
      logLine(`serve: a ${frame.type} frame was not stored or sent: ${errorMessage(e)}`, { level: "warn", code: "frame_not_stored" });
    } else if (!this.toldFailed) {
      this.toldFailed = true;
      this.failed(e);
    }
    return null;
  }

  private send(stored: { record: TranscriptRecord; json: string }, answer?: (stored: TranscriptRecord) => { json: string }): TranscriptRecord {
    this.onStored(stored.record);
    const answerJson = answer === undefined || this.listeners.size === 0 ? undefined : answer(stored.record).json;
    for (const listener of [...this.listeners]) {
      if (!this.listeners.has(listener)) continue;
      try {
        listener(stored.record, stored.json, answerJson);
      } catch {
        this.listeners.delete(listener);
      }
    }
    return stored.record;
  }
}
