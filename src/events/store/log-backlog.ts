/**
 * The pending log's records not yet written (events-store.ts) and how a write pass lands them:
 * appended, or — when the log is mostly dead records, or the backlog gave way — the whole live
 * log rewritten (compacted) instead.
 *
 * While writes keep failing the backlog is bounded: past its cap the records are dropped and the
 * next write rewrites the whole live log, which says everything they said.
 */
import type { LogFile } from "./log-file.ts";

/** The log is compacted only past this size, and only when more than half of it is dead records. */
export const COMPACT_MIN_BYTES = 1024 * 1024;

export class LogBacklog {
  private lines: string[] = [];
  private bytes = 0;
  /** The lines were dropped (too many piled up behind failing writes): the next write rewrites the whole live log. */
  private mustRewrite = false;

  constructor(
    private readonly log: LogFile,
    private readonly cap: number,
  ) {}

  /** Bytes of the records waiting for the next write. */
  get size(): number {
    return this.bytes;
  }

  /** Queues one log line for the next write. */
  add(line: string, bytes: number): void {
    if (this.mustRewrite) return; // the pending rewrite covers it
    this.lines.push(line);
    this.bytes += bytes;
    this.capLines();
  }

  /** The next write rewrites the whole live log (the file on disk holds records the store set aside on load). */
  forceRewrite(): void {
    this.lines = [];
    this.bytes = 0;
    this.mustRewrite = true;
  }

  /**
   * One write of the log. Everything it writes is taken synchronously when it is called (the live
   * lines too, when it compacts), so it covers exactly the changes made before the call. A failed
   * write puts its records back in front, so the next write lands them, and rethrows.
   *
   * `trailer`: the event ledger's record of this pass (ledger.ts), written last, in the same sync:
   * after the appended records, or after the live lines of a rewrite (which carries every ledger
   * line not yet confirmed, hence its own text). It is not kept here: the ledger rebuilds it.
   */
  async write(liveBytes: number, liveLines: () => string, trailer: { append: string; rewrite: () => string } | null = null): Promise<void> {
    const chunk = this.lines;
    const chunkBytes = this.bytes;
    this.lines = [];
    this.bytes = 0;
    const forced = this.mustRewrite;
    this.mustRewrite = false;
    const tail = trailer?.append ?? "";
    const total = this.log.size + chunkBytes;
    const compact = forced || (chunk.length > 0 && total > COMPACT_MIN_BYTES && total > 2 * liveBytes);
    const rewrite = compact ? liveLines() + (trailer?.rewrite() ?? "") : null;
    try {
      if (rewrite !== null) await this.log.rewrite(rewrite);
      else if (chunk.length > 0 || tail !== "") await this.log.append(chunk.join("") + tail);
    } catch (e) {
      this.putBack(chunk, chunkBytes, forced);
      throw e;
    }
  }

  private putBack(chunk: string[], chunkBytes: number, forced: boolean): void {
    if (forced) this.mustRewrite = true;
    if (this.mustRewrite) return;
    this.lines = chunk.concat(this.lines);
    this.bytes += chunkBytes;
    this.capLines();
  }

  private capLines(): void {
    if (this.bytes <= this.cap) return;
    this.lines = [];
    this.bytes = 0;
    this.mustRewrite = true;
  }
}
