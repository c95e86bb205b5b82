/**
 * What a `get_transcript` answer leaves in the transcript (serve.md §4; README "Commands and
 * frames"). Every response is stored and broadcast, but a page of frames stored whole would copy
 * the transcript into itself: each `get_transcript since=0` would add up to a page (4 MiB), so a
 * client polling it would fill `--transcript-retain-bytes` in minutes and retention would delete the
 * real history. So the asker gets the whole page — the HTTP body in daemon mode, the stdout line
 * in stdio mode (its one client is the asker) — numbered with the seq and time of what is stored
 * and broadcast to every stream: a stub that says which frames the page held.
 *
 * The page itself is still bounded by the frame cap (shared/frame-cap.ts): a client reads one
 * frame a line, and a page whose first record is near the cap would not fit one. Over it the
 * answer is `response_too_large`, as for any response too large to store.
 */
import { MAX_FRAME_BYTES } from "../../shared/frame-cap.ts";
import type { FrameBody, ResponseFrame } from "../protocol/frames.ts";
import type { TranscriptRecord } from "../state/transcript.ts";

/** The `data` of a stored `get_transcript` answer in place of its frames. */
export interface TranscriptPageStub {
  stored: "stub";
  /** How many frames the page held, */
  count: number;
  /** from which seq to which (null when it held none), */
  first_seq: number | null;
  last_seq: number | null;
  /** and whether frames after it exist. */
  more: boolean;
}

/** The asker's answer to a stored stub: the whole response, numbered like the stub, and its line. */
export type StoreAnswer = (stored: TranscriptRecord) => { record: TranscriptRecord; json: string };

/** How to store one response. */
export type StorePlan =
  /** Store `frame`; when it is a stub, `answer` gives what the asker gets. */
  | { frame: FrameBody; answer?: StoreAnswer }
  /** Nothing to store: the answer is over the frame cap (`why`). */
  | { refused: string };

/** `{"seq":…,"time":…,` before the response's own keys, newline after: well under this. */
const NUMBERING_BYTES = 128;

export function planStore(response: ResponseFrame): StorePlan {
  if (response.command !== "get_transcript" || !response.success) return { frame: response };
  const page = (response.data as { frames?: unknown } | null)?.frames;
  if (!Array.isArray(page)) return { frame: response };
  const body = JSON.stringify(response);
  const bytes = Buffer.byteLength(body) + NUMBERING_BYTES;
  if (bytes > MAX_FRAME_BYTES) {
    return { refused: `the page of ${page.length} frames is about ${bytes} bytes, over the ${MAX_FRAME_BYTES}-byte frame cap; ask for fewer frames` };
  }
  const more = (response.data as { more?: unknown }).more === true;
  const data: TranscriptPageStub = { stored: "stub", count: page.length, first_seq: seqOf(page[0]), last_seq: seqOf(page.at(-1)), more };
  const stub: ResponseFrame = { ...response, data };
  // Asked for twice (the stdio line, the session's return value): built once.
  let answer: { record: TranscriptRecord; json: string } | null = null;
  return {
    frame: stub,
    answer: (stored) =>
      (answer ??= {
        record: { ...response, seq: stored.seq, time: stored.time } as TranscriptRecord,
        // The key order of a stored record (transcript.ts appendFrame): seq, time, then the frame's own.
        json: `{"seq":${stored.seq},"time":${JSON.stringify(stored.time)},${body.slice(1)}`,
      }),
  };
}

function seqOf(frame: unknown): number | null {
  const seq = (frame as { seq?: unknown } | undefined)?.seq;
  return typeof seq === "number" ? seq : null;
}
