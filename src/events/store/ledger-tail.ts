/**
 * Where an event ledger `events.ndjson` stands when its store is opened (ledger.ts): its torn tail
 * cut and its last complete line read (evidence/log-tail.ts, as for every continued evidence log)
 * for the chain's count and head, and the pending log's embedded lines it lacks found — or a ledger
 * that contradicts the pending log refused, naming the file. I/O only in `readLedgerTail`;
 * `reconcile` is pure.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { type ChainHead, chainAnchor, lineSha256 } from "../../evidence/chain.ts";
import { chainLinkOf, repairTail } from "../../evidence/log-tail.ts";
import { SESSION_FILES } from "../../evidence/format.ts";
import { sha256Hex } from "../../shared/digest.ts";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import { EventsStoreError } from "./errors.ts";
import type { EmbeddedLedger } from "./pending-log.ts";

export const LEDGER_FILE = SESSION_FILES.events;

/** events.ndjson as found on open: the chain's head over its complete lines, the handle to append with. */
export interface LedgerTail {
  handle: FileHandle | null;
  size: number;
  head: ChainHead;
}

export function ledgerPath(dir: string): string {
  return join(dir, LEDGER_FILE);
}

/**
 * The embedded lines events.ndjson lacks, in order (vigilseq head.count onwards). Refuses (file_refused)
 * an embedded line that contradicts the file: its last line differs, or lines are missing before them.
 */
export function reconcile(path: string, head: ChainHead, embedded: readonly EmbeddedLedger[]): string[] {
  const byVigilseq = new Map<number, string>();
  for (const rec of embedded) {
    rec.lines.forEach((line, i) => {
      const vs = rec.from + i;
      if (vs === head.count - 1 && sha256Hex(`${line}\n`) !== head.head) {
        throw ledgerRefused(path, `its last record (vigilseq ${vs}) is not the one the pending log holds for it: the ledger was changed after it was written`);
      }
      if (vs < head.count) return;
      const earlier = byVigilseq.get(vs);
      if (earlier !== undefined && earlier !== line) throw ledgerRefused(path, `the pending log holds two different records for vigilseq ${vs}`);
      byVigilseq.set(vs, line);
    });
  }
  const out: string[] = [];
  let prev = head.head;
  for (let vs = head.count; byVigilseq.has(vs); vs++) {
    const line = byVigilseq.get(vs)!;
    const rec = chainLinkOf(Buffer.from(line));
    if (rec === null || rec.vigilseq !== vs || rec.vigilprev !== prev) throw ledgerRefused(path, `the pending log's record for vigilseq ${vs} does not continue its chain`);
    out.push(line);
    prev = sha256Hex(`${line}\n`);
  }
  if (out.length !== byVigilseq.size) {
    let first = Number.POSITIVE_INFINITY;
    for (const k of byVigilseq.keys()) if (k >= head.count + out.length) first = Math.min(first, k);
    throw ledgerRefused(path, `it ends at ${head.count + out.length} records but the pending log continues it from vigilseq ${first}: records are missing`);
  }
  return out;
}

/**
 * Opens events.ndjson (never creating it) and reads where its chain stands: a torn tail is cut and
 * synced first (repairTail); the last complete line gives the count (its vigilseq + 1) and the head
 * (its SHA-256). A last line that is not a chained record, or a first record off this session's
 * anchor, is refused: unlike a decision log, the ledger has no older unchained form to set aside.
 */
export async function readLedgerTail(dir: string, o: { eventSource: string; sessionId: string; log?: (message: string) => void }): Promise<LedgerTail> {
  const path = ledgerPath(dir);
  const anchor = chainAnchor(o.eventSource, o.sessionId, LEDGER_FILE);
  let tail: ReturnType<typeof repairTail>;
  try {
    tail = repairTail(path, o.log === undefined ? {} : { log: o.log });
  } catch (e) {
    throw ledgerRefused(path, errorMessage(e), e);
  }
  if (!tail.exists) return { handle: null, size: 0, head: { count: 0, head: anchor } };
  let head: ChainHead = { count: 0, head: anchor };
  if (tail.lastLine !== null) {
    const link = chainLinkOf(tail.lastLine);
    if (link === null) throw ledgerRefused(path, "its last line is not a chained record (vigilseq, vigilprev)");
    if (link.vigilseq === 0 && link.vigilprev !== anchor) throw ledgerRefused(path, "its chain does not start at this session's anchor");
    head = { count: link.vigilseq + 1, head: lineSha256(tail.lastLine) };
  }
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch (e) {
    throw ledgerRefused(path, errnoCode(e) === "ELOOP" ? "it is a symbolic link" : errorMessage(e), e);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw ledgerRefused(path, "it is not a regular file");
    if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
    return { handle, size: st.size, head };
  } catch (e) {
    await handle.close().catch(() => {});
    if (e instanceof EventsStoreError) throw e;
    throw ledgerRefused(path, errorMessage(e), e);
  }
}

function ledgerRefused(path: string, why: string, cause?: unknown): EventsStoreError {
  return new EventsStoreError("file_refused", `event ledger ${path} refused: ${why}`, cause === undefined ? {} : { cause });
}
