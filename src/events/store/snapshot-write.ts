/**
 * One pass's snapshot write, overlapped with the pass's log sync (issue 16: a poll page waited for
 * three syncs in series — the log's fdatasync, then the snapshot temp's fsync, then the directory's).
 *
 * The temp file is created, written and fsync'd as soon as the pass starts, beside the pending log's
 * write; it is renamed over `mcp-events.json` only by `install`, which the pass calls once the log
 * (and the ledger) are durable. So the order serve.md §3 asks for still holds — a stored cursor or
 * dedup window never runs ahead of the events it passed — and only the rename and the directory's
 * fsync remain after the log's fdatasync. A temp file is never read by anyone: a crash before the
 * rename leaves the old snapshot and a stray temp, which the store sweeps on open (files.ts).
 */
import { type StagedFile, stageFileAtomic } from "../../shared/durable/atomic-file.ts";
import type { Fault } from "./log-file.ts";

export class SnapshotWrite {
  private readonly staged: Promise<StagedFile>;

  constructor(path: string, text: string, fault: Fault | undefined) {
    this.staged = (async () => {
      await fault?.("snapshot");
      return stageFileAtomic(path, text);
    })();
    // Settled by install or discard; a failure before either is not an unhandled rejection.
    this.staged.catch(() => {});
  }

  /** Puts the staged snapshot in place; rejects with the failure of staging or of the rename. */
  async install(): Promise<void> {
    await (await this.staged).install();
  }

  /** The log write failed: the snapshot must not take effect; resolves once its temp is gone. */
  discard(): Promise<void> {
    return this.staged.then((s) => s.discard(), () => {});
  }
}
