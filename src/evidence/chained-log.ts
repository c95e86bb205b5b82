/**
 * An evidence log whose records are hash-chained (chain.ts): each event gets its `vigilseq` and
 * `vigilprev` as it is written, and the chain advances only over lines that were written whole.
 * A record that cannot be written poisons the log (evidence-log.ts) and so ends the chain there:
 * the stop record and the checkpoints name the head of what was written.
 */
import { Chain, type ChainHead } from "./chain.ts";
import type { EvidenceLog } from "./evidence-log.ts";

export class ChainedLog {
  private chain: Chain;

  constructor(
    readonly log: EvidenceLog,
    /** The log's file name inside its capture or session directory (what the stop record and checkpoints name). */
    readonly name: string,
    start: ChainHead,
    /** Told after every record written (a checkpointer counts them). */
    private readonly onWritten?: () => void,
  ) {
    this.chain = Chain.resume(start);
  }

  /** Appends one event with its chain attributes; false when it was not written. */
  append(event: Record<string, unknown>): boolean {
    const line = this.chain.line(event);
    if (!this.log.append(line)) return false;
    this.chain.advance(line);
    this.onWritten?.();
    return true;
  }

  /**
   * Appends events in one write(2) (evidence-log.ts appendBatch); returns how many were written,
   * in order. Each line's `vigilprev` is the hash of the one before it, so the lines are chained
   * before the write; the chain then advances over the written ones only, one at a time, telling
   * `onWritten` after each (a checkpoint due at a record names that record's head).
   */
  appendBatch(events: readonly Record<string, unknown>[]): number {
    // The common case of a sequential client: one call per read.
    if (events.length <= 1) return events.length === 1 && this.append(events[0]!) ? 1 : 0;
    const start = this.chain.state;
    const ahead = Chain.resume(start);
    const lines: string[] = [];
    const heads: string[] = [];
    for (const event of events) {
      const line = ahead.line(event);
      ahead.advance(line);
      lines.push(line);
      heads.push(ahead.state.head);
    }
    const written = this.log.appendBatch(lines);
    for (let i = 0; i < written; i++) {
      this.chain = Chain.resume({ count: start.count + i + 1, head: heads[i]! });
      this.onWritten?.();
    }
    return written;
  }

  /** Records written and the `vigilprev` of the next one. */
  head(): ChainHead {
    return this.chain.state;
  }

  /** fdatasync of what was written; false when the log is poisoned. */
  sync(): boolean {
    return this.log.sync();
  }
}
