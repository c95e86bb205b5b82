/**
 * Where an event ledger `events.ndjson` stands when its store is opened (ledger.ts): a torn tail
 * cut and synced, the last complete line read (bounded, backwards in chunks) for the chain's count
 * and head, and the pending log's embedded lines it lacks found — or a ledger that contradicts the
 * pending log refused, naming the file. I/O only in `readLedgerTail`; `reconcile` is pure.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { type ChainHead, chainAnchor } from "../../evidence/chain.ts";
import { SESSION_FILES } from "../../evidence/format.ts";
import { sha256Hex } from "../../shared/digest.ts";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { isRecord } from "../../shared/guards.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import { EventsStoreError } from "./errors.ts";
import type { EmbeddedLedger } from "./pending-log.ts";

export const LEDGER_FILE = SESSION_FILES.events;
/** A last line (or torn tail) longer than this is refused: far past anything the ledger writes. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const TAIL_CHUNK = 64 * 1024;

/** events.ndjson as found on open: the chain's head over its complete lines, the handle to append with. */
export interface LedgerTail {
  handle: FileHandle | null;
  size: number;
  head: ChainHead;
  repairedBytes: number;
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
    const rec = parseLine(line);
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

function parseLine(text: string): { vigilseq: number; vigilprev: string } | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(v) || !Number.isSafeInteger(v.vigilseq) || (v.vigilseq as number) < 0 || typeof v.vigilprev !== "string") return null;
  return { vigilseq: v.vigilseq as number, vigilprev: v.vigilprev };
}

/**
 * Opens events.ndjson (never creating it) and reads where its chain stands: a torn tail is cut and
 * synced first; the last complete line gives the count (its vigilseq + 1) and the head (its SHA-256).
 */
export async function readLedgerTail(dir: string, o: { eventSource: string; sessionId: string }): Promise<LedgerTail> {
  const path = ledgerPath(dir);
  const anchor = chainAnchor(o.eventSource, o.sessionId, LEDGER_FILE);
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_NOFOLLOW);
  } catch (e) {
    const code = errnoCode(e);
    if (code === "ENOENT") return { handle: null, size: 0, head: { count: 0, head: anchor }, repairedBytes: 0 };
    throw ledgerRefused(path, code === "ELOOP" ? "it is a symbolic link" : errorMessage(e), e);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw ledgerRefused(path, "it is not a regular file");
    if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
    const end = await afterLastNewline(handle, path, st.size);
    if (end < st.size) {
      await Promise.resolve()
        .then(() => handle.truncate(end))
        .then(() => handle.datasync())
        .catch((e: unknown) => {
          throw new EventsStoreError("write_failed", `event ledger ${path}: cannot cut its torn tail: ${errorMessage(e)}`, { cause: e });
        });
    }
    if (end === 0) return { handle, size: 0, head: { count: 0, head: anchor }, repairedBytes: st.size };
    const start = await afterLastNewline(handle, path, end - 1);
    const buf = Buffer.alloc(end - 1 - start);
    const { bytesRead } = await handle.read(buf, 0, buf.length, start);
    if (bytesRead !== buf.length) throw new Error("a short read");
    const rec = parseLine(buf.toString("utf8"));
    if (rec === null) throw ledgerRefused(path, "its last line is not a chained record (vigilseq, vigilprev)");
    if (rec.vigilseq === 0 && rec.vigilprev !== anchor) throw ledgerRefused(path, "its chain does not start at this session's anchor");
    return { handle, size: end, head: { count: rec.vigilseq + 1, head: sha256Hex(buf.toString("utf8") + "\n") }, repairedBytes: st.size - end };
  } catch (e) {
    await handle.close().catch(() => {});
    if (e instanceof EventsStoreError) throw e;
    throw ledgerRefused(path, errorMessage(e), e);
  }
}

/** The offset just after the last newline before `before` (0 when there is none), read backwards in chunks. */
async function afterLastNewline(handle: FileHandle, path: string, before: number): Promise<number> {
  const buf = Buffer.allocUnsafe(TAIL_CHUNK);
  let pos = before;
  while (pos > 0) {
    if (before - pos > MAX_LINE_BYTES) throw ledgerRefused(path, `its last line is over ${MAX_LINE_BYTES} bytes`);
    const len = Math.min(TAIL_CHUNK, pos);
    const { bytesRead } = await handle.read(buf, 0, len, pos - len);
    if (bytesRead !== len) throw new Error("a short read");
    const i = buf.subarray(0, len).lastIndexOf(0x0a);
    if (i >= 0) return pos - len + i + 1;
    pos -= len;
  }
  return 0;
}

function ledgerRefused(path: string, why: string, cause?: unknown): EventsStoreError {
  return new EventsStoreError("file_refused", `event ledger ${path} refused: ${why}`, cause === undefined ? {} : { cause });
}
