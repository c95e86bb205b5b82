/**
 * A session's conversation history in blocks (context/blocks.ts): a leading summary when the
 * history was compacted, then one block per run that succeeded. A run that did not succeed adds
 * nothing: its batches are returned and injected again, and a restart rebuilds only what runs
 * that succeeded said (history.ts), so the history in memory is the history a restart finds.
 */
import { type HistoryBlock, applyCompaction, flatten } from "../context/blocks.ts";
import type { ChatMessage } from "../models/types.ts";
import type { TranscriptRecord } from "../state/transcript.ts";
import type { ActiveRun } from "./active-run.ts";

export class Conversation {
  constructor(private blocks: HistoryBlock[]) {}

  /** The messages a run is given as its history. */
  messages(): ChatMessage[] {
    return flatten(this.blocks);
  }

  snapshot(): HistoryBlock[] {
    return [...this.blocks];
  }

  /** A frame of `run` was stored: its run_start opens the run's block; a compaction applies at once. */
  observe(record: TranscriptRecord | null, run: ActiveRun): void {
    if (record === null) return;
    if (record.type === "run_start" && run.startSeq === 0) run.startSeq = record.seq;
    if (record.type === "compaction" && typeof record.summary === "string" && typeof record.from_seq === "number" && typeof record.to_seq === "number") {
      this.blocks = applyCompaction(this.blocks, { summary: record.summary, from_seq: record.from_seq, to_seq: record.to_seq });
    }
  }

  /** A run succeeded: its messages join the history as one block. */
  add(fromSeq: number, toSeq: number, messages: ChatMessage[]): void {
    if (messages.length > 0) this.blocks.push({ fromSeq, toSeq, messages });
  }
}
