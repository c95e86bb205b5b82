/** The conversation history of a session, rebuilt from its transcript's `message` frames (serve.md §3). */
import type { ChatMessage } from "../models/types.ts";
import type { Transcript, TranscriptRecord } from "../state/transcript.ts";

const PAGE = 1000;

/** The user/assistant text messages of a stored frame, or null. */
export function historyMessage(frame: { type: string; [key: string]: unknown }): ChatMessage | null {
  if (frame.type !== "message" || typeof frame.text !== "string") return null;
  if (frame.role === "user") return { role: "user", text: frame.text };
  if (frame.role === "assistant") return { role: "assistant", text: frame.text };
  return null;
}

/** Reads the whole transcript page by page and keeps the user/assistant text messages in order. */
export async function rebuildHistory(transcript: Transcript): Promise<ChatMessage[]> {
  const history: ChatMessage[] = [];
  let since = 0;
  for (;;) {
    const page = await transcript.readSince(since, { limit: PAGE });
    for (const r of page.records as TranscriptRecord[]) {
      const m = historyMessage(r);
      if (m !== null) history.push(m);
      since = r.seq;
    }
    if (!page.more || page.records.length === 0) return history;
  }
}
