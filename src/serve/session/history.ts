/**
 * The conversation history of a session (serve.md §3, issue 12 item A), one fold over its stored
 * frames: rebuilt from the transcript on open, then fed every frame the session stores, so the
 * history in memory is always what a restart would rebuild — there is no second way to build it.
 *
 * - Opening reads from the last `compaction` record on, so it reads O(recent) of the transcript:
 *   the compaction's summary stands for everything up to its `to_seq`; the runs kept after it
 *   precede the compaction record itself, so reading starts right after `to_seq`.
 * - A `compaction` frame applies when it reaches further than the summary in hand: a new one
 *   (stored by a run, context/keeper.ts) replaces the oldest blocks at once; an older one met
 *   while rebuilding (or the one the rebuild started from) changes nothing.
 * - Only runs whose `run_end` says ok add a block: their user and assistant text messages. A
 *   failed or aborted run's batches were returned and injected again (they reach the model in a
 *   later run), and a run cut off by a crash has no run_end. Tool calls and results are not
 *   history: a `tool_call` frame holds only its arguments' digest, so they could not be rebuilt.
 */
import { type HistoryBlock, applyCompaction, flatten, summaryBlock } from "../context/blocks.ts";
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
  private list: HistoryBlock[];
  private open: { runId: unknown; fromSeq: number; messages: ChatMessage[] } | null = null;

  constructor(blocks: readonly HistoryBlock[] = []) {
    this.list = [...blocks];
  }

  /** A fold starting from the summary of `compaction` (none: from nothing). */
  static after(compaction: TranscriptRecord | null): HistoryFold {
    const c = compactionRange(compaction);
    return new HistoryFold(c === null ? [] : [summaryBlock(c)]);
  }

  get blocks(): readonly HistoryBlock[] {
    return this.list;
  }

  /** The history as one list of messages, oldest first. */
  messages(): ChatMessage[] {
    return flatten(this.list);
  }

  add(r: TranscriptRecord): void {
    if (r.type === "run_start") {
      this.open = { runId: r.run_id, fromSeq: r.seq, messages: [] };
    } else if (r.type === "run_end") {
      const run = this.open;
      this.open = null;
      if (run !== null && run.runId === r.run_id && r.status === "ok" && run.messages.length > 0) {
        this.list.push({ fromSeq: run.fromSeq, toSeq: r.seq, messages: run.messages });
      }
    } else if (r.type === "compaction") {
      const c = compactionRange(r);
      const first = this.list[0];
      const covered = first?.summary === true ? first.toSeq : -1;
      if (c !== null && c.to_seq > covered) this.list = applyCompaction(this.list, c);
    } else {
      const m = historyMessage(r);
      if (m !== null && this.open !== null) this.open.messages.push(m);
    }
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

/** Reads the transcript from the last compaction on, page by page, into the fold the session goes on with. */
export async function rebuildHistory(transcript: Transcript, session = ""): Promise<HistoryFold> {
  const compaction = await transcript.lastCompaction();
  const fold = HistoryFold.after(compaction);
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
    { session, code: "session_read" },
  );
  return fold;
}
