/**
 * A session's history as the context keeper sees it (issue 12 item A): one block per run that
 * succeeded, holding the messages it added, and at most one leading summary block standing for the
 * transcript range a `compaction` frame replaced. Seqs tie blocks to the transcript, so a
 * compaction's range says exactly what a restart must read again (state/transcript.ts).
 */
import type { ChatMessage } from "../models/types.ts";
import { messagesTokens } from "./estimate.ts";

export interface HistoryBlock {
  /** The first transcript seq the block stands for (a run's run_start; a summary's from_seq). */
  fromSeq: number;
  /** The last transcript seq the block stands for. */
  toSeq: number;
  /** Set on the block that a compaction's summary (or trim notice) stands in. */
  summary?: true;
  messages: ChatMessage[];
}

/** The `compaction` frame's payload as the blocks need it. */
export interface CompactionRange {
  summary: string;
  from_seq: number;
  to_seq: number;
}

export const SUMMARY_HEADING = "[Summary of the earlier conversation, written when vigil compacted it to fit the model's context]";

/** The message a summary is handed to the model as (a user message: every provider accepts one anywhere). */
export function summaryMessage(summary: string): ChatMessage {
  return { role: "user", text: `${SUMMARY_HEADING}\n${summary}` };
}

export function summaryBlock(c: CompactionRange): HistoryBlock {
  return { fromSeq: c.from_seq, toSeq: c.to_seq, summary: true, messages: [summaryMessage(c.summary)] };
}

/** The blocks once a compaction is applied: its summary, then every block after its range. */
export function applyCompaction(blocks: readonly HistoryBlock[], c: CompactionRange): HistoryBlock[] {
  return [summaryBlock(c), ...blocks.filter((b) => b.fromSeq > c.to_seq)];
}

export function flatten(blocks: readonly HistoryBlock[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const b of blocks) out.push(...b.messages);
  return out;
}

export function blockTokens(b: HistoryBlock): number {
  return messagesTokens(b.messages);
}
