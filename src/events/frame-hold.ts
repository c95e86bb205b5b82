/**
 * The hub's way to its session's frames: one at a time, or — while a delivery loop holds them for
 * one poll page or one pushed run slice — queued and handed over together when the outermost hold
 * is released, so the session appends them to its transcript with one write (serve.md §4; the
 * session still stores each before it sends it). Order and seq numbering are those of one-by-one
 * emission: every frame of the hub goes through here while held (status and gap frames too), and
 * a hold spans synchronous code only, so nothing else of the session can emit in between.
 * Bounded: a page is at most 50 events, a slice at most 64 notifications (with their gaps).
 */
import type { EventsFrame } from "./frames.ts";
import type { EventsSession } from "./ports.ts";

export class FrameHold {
  private held: EventsFrame[] | null = null;
  private depth = 0;

  constructor(private readonly session: Pick<EventsSession, "emit" | "emitMany">) {}

  emit(frame: EventsFrame): void {
    if (this.held !== null) this.held.push(frame);
    else this.session.emit(frame);
  }

  /** Holds frames until the returned release is called (once); nested holds release with the outermost. */
  hold(): () => void {
    this.depth++;
    this.held ??= [];
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.depth > 0) return;
      const frames = this.held ?? [];
      this.held = null;
      if (frames.length === 1) this.session.emit(frames[0]!);
      else if (frames.length > 1) this.emitAll(frames);
    };
  }

  private emitAll(frames: EventsFrame[]): void {
    if (this.session.emitMany !== undefined) this.session.emitMany(frames);
    else for (const f of frames) this.session.emit(f);
  }
}
