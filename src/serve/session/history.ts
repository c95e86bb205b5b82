/**
 * The conversation history of a session, rebuilt from its transcript on open (serve.md §3, issue
 * 12 item A): from the last `compaction` record on, so opening reads O(recent) of the transcript.
 *
 * - The compaction's summary stands for everything up to its `to_seq`; the runs kept after it
 *   precede the compaction record itself, so reading starts right after `to_seq`.
 * - Only runs whose `run_end` says ok are rebuilt, each as one block of its user/assistant text
 *   messages: a failed or aborted run's batches were returned and injected again (they reach the
 *   model in a later run), and a run cut off by a crash has no run_end. This is what the session
 *   keeps in memory too (conversation.ts), so a restart changes nothing the model is sent.
 */
import { type HistoryBlock, summaryBlock } from "../context/blocks.ts";
import type { ChatMessage } from "../models/types.ts";
import type { Transcript, TranscriptRecord } from "../state/transcript.ts";
import { logDebug } from "../../shared/log.ts";

const PAGE = 1000;

/** The user/assistant text messages of a stored frame, or null. */
export function historyMessage(frame: { type: string; [key: string]: unknown }): ChatMessage | null {
  if (frame.type !== "message" || typeof frame.text !== "string") return null;
  if (frame.role === "user") return { role: "user", text: frame.text };
  if (frame.role === "assistant") return { role: "assistant", text: frame.text };
  return null;
}

/** Folds records (seq order) into the history blocks of the runs that succeeded. Pure. */
export class HistoryFold {
  readonly blocks: HistoryBlock[] = [];
  private open: { runId: unknown; fromSeq: number; messages: ChatMessage[] } | null = null;

  constructor(compaction: TranscriptRecord | null) {
    const c = compactionRange(compaction);
    if (c !== null) this.blocks.push(summaryBlock(c));
  }

  add(r: TranscriptRecord): void {
    if (r.type === "run_start") {
      this.open = { runId: r.run_id, fromSeq: r.seq, messages: [] };
      return;
    }
    if (r.type === "run_end") {
      const run = this.open;
      this.open = null;
      if (run !== null && run.runId === r.run_id && r.status === "ok" && run.messages.length > 0) {
        this.blocks.push({ fromSeq: run.fromSeq, toSeq: r.seq, messages: run.messages });
      }
      return;
    }
    const m = historyMessage(r);
    if (m !== null && this.open !== null) this.open.messages.push(m);
  }
}

/** The range a compaction record replaces, or null when there is none (or it is malformed). */
export function compactionRange(r: TranscriptRecord | null): { summary: string; from_seq: number; to_seq: number } | null {
  if (r === null || r.type !== "compaction") return null;
  const { summary, from_seq, to_seq } = r;
  if (typeof summary !== "string" || !Number.isSafeInteger(from_seq) || !Number.isSafeInteger(to_seq)) return null;
  if ((to_seq as number) < 0 || (to_seq as number) >= r.seq) return null;
  return { summary, from_seq: from_seq as number, to_seq: to_seq as number };
}

/** Reads the transcript from the last compaction on, page by page, and folds it into history blocks. */
export async function rebuildHistory(transcript: Transcript, session = ""): Promise<HistoryBlock[]> {
  const compaction = await transcript.lastCompaction();
  const fold = new HistoryFold(compaction);
  // Retention may have deleted the start of the transcript: what is left is all there is.
  const from = Math.max(compactionRange(compaction)?.to_seq ?? 0, transcript.oldestSeq - 1);
  let since = from;
  let read = 0;
  for (;;) {
    const page = await transcript.readSince(since, { limit: PAGE });
    for (const r of page.records as TranscriptRecord[]) {
      fold.add(r);
      since = r.seq;
      read++;
    }
    if (!page.more || page.records.length === 0) break;
  }
  logDebug(
    `serve: session ${JSON.stringify(session)} opened: records_read=${transcript.recordsRead} (history: ${read} records after seq ${from}, ` +
      `${fold.blocks.length} blocks; transcript last_seq=${transcript.lastSeq})`,
  );
  return fold.blocks;
}
