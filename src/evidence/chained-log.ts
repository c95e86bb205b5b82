/**
 * An evidence log whose records are hash-chained (chain.ts): each event gets its `vigilseq` and
 * `vigilprev` as it is written, and the chain advances only over lines that were written whole.
 * A record that cannot be written poisons the log (evidence-log.ts) and so ends the chain there:
 * the stop record and the checkpoints name the head of what was written.
 */
import { Chain, type ChainHead } from "./chain.ts";
import type { EvidenceLog } from "./evidence-log.ts";

export class ChainedLog {
  private readonly chain: Chain;

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

  /** Records written and the `vigilprev` of the next one. */
  head(): ChainHead {
    return this.chain.state;
  }

  /** fdatasync of what was written; false when the log is poisoned. */
  sync(): boolean {
    return this.log.sync();
  }
}
