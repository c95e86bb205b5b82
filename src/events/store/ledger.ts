/**
 * The event ledger of a serve session, `events.ndjson` (serve.md "Evidence"), kept by its events
 * store only when evidence is configured: one chained record (ledger-records.ts, chain.ts) per
 * change of the pending queue — an arrival (received or gap), a delivered batch, a dropped event —
 * and per acknowledged event that was not queued (a notify action: received with seq null).
 *
 * The ledger and the pending log can never disagree after a crash: it is written ahead through
 * the pending log.
 *
 * - A line is built (and its chain position taken) synchronously, with the change in memory.
 * - A write pass embeds the lines not yet in the pending log as one `ledger` record, written last
 *   in the same append and sync as the pass's add and done records (the commit point); only then
 *   are they appended to events.ndjson and fdatasync'd, and the pass resolves after both.
 * - A rewrite of the pending log carries every line not yet confirmed in events.ndjson; confirmed
 *   lines are dead records it drops.
 * - On open, a torn tail of events.ndjson is cut, its last line gives the count and head, and the
 *   embedded lines it lacks are appended before anything else. An embedded line that contradicts
 *   the file (its last line differs, or lines are missing in between) is refused, naming the file.
 * - A failed append is retried by the next pass. While lines wait unconfirmed past a bound, new
 *   arrivals are refused like a full queue (the server keeps them), never dropped unrecorded.
 *
 * Its head (what a checkpoint names) is the durable one: lines written and synced only.
 */
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { join } from "node:path";
import { Chain, type ChainHead, chainAnchor } from "../../evidence/chain.ts";
import type { CheckpointSource } from "../../evidence/checkpoints.ts";
import { SESSION_FILES } from "../../evidence/format.ts";
import { deliveredRecord, droppedRecord, gapRecord, receivedRecord } from "../../evidence/ledger-records.ts";
import { canonicalSha256, sha256Hex } from "../../shared/digest.ts";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { isRecord } from "../../shared/guards.ts";
import { FILE_MODE } from "../../shared/durable/modes.ts";
import { type EventAction, type EventDelivery, type EventOccurrence, type GapNotice, type PendingEntry, isGap } from "../types.ts";
import { EventsStoreError } from "./errors.ts";
import { type Fault, LogFile } from "./log-file.ts";
import { type EmbeddedLedger, serializeLedger } from "./pending-log.ts";

export const LEDGER_FILE = SESSION_FILES.events;
/** A last line (or torn tail) longer than this is refused: far past anything the ledger writes. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const TAIL_CHUNK = 64 * 1024;

export interface LedgerOptions {
  /** evidence.event_source: the records' `source` and the chain anchor's. */
  eventSource: string;
  /** The session's name (the records' session_id and the anchor's). */
  sessionId: string;
  /** Told after each successful append to events.ndjson, with the number of records it wrote. */
  onWritten?: (records: number) => void;
}

/** What the store cannot know about an arrival: which subscription it came through, and how. */
export interface ArrivalFacts {
  subscriptionKey: string;
  /** Required for an occurrence (a received record); a gap record has no delivery mode. */
  delivery?: EventDelivery;
}

/** Why entries leave the queue (with the ledger on, every markDone says). */
export type DoneOutcome =
  | { delivered: { batchTag: string; runId: string } }
  | { dropped: { attempts: number; errorCode: string } };

/** An arrival as the ledger records it: a queued entry (seq) or an acknowledged notify event (seq null). */
export interface Arrival {
  seq: number | null;
  server: string;
  name: string;
  action: EventAction;
  event: EventOccurrence | GapNotice;
}

/** events.ndjson as found on open: the chain's head over its complete lines, the handle to append with. */
export interface LedgerTail {
  handle: FileHandle | null;
  size: number;
  head: ChainHead;
  repairedBytes: number;
}

/** What one write pass takes of the ledger, synchronously at its start (events-store.ts `writePass`). */
export interface LedgerPass {
  end: number;
  trailer: { append: string; rewrite: () => string };
}

export function ledgerPath(dir: string): string {
  return join(dir, LEDGER_FILE);
}

export class EventLedger implements CheckpointSource {
  readonly name = LEDGER_FILE;
  /** Every line built, unconfirmed ones included: the next line's vigilseq and vigilprev. */
  private readonly chain: Chain;
  /** Lines written to events.ndjson and synced. */
  private durable: ChainHead;
  /** Lines built but not confirmed, vigilseq durable.count onwards (no newlines). */
  private readonly unconfirmed: string[] = [];
  private unconfirmedBytes = 0;
  /** Lines below this vigilseq are in the pending log as it stands, or confirmed. */
  private embeddedUpTo: number;

  private constructor(
    private readonly o: LedgerOptions,
    private readonly file: LogFile,
    head: ChainHead,
    /** Past this many unconfirmed bytes, arrivals are refused (`full`). */
    private readonly cap: number,
    private readonly pendingSeqsOf: () => number[],
  ) {
    this.chain = Chain.resume(head);
    this.durable = { ...head };
    this.embeddedUpTo = head.count;
  }

  /**
   * The ledger of a store being opened: `tail` is events.ndjson as found (readLedgerTail), `embedded`
   * the pending log's ledger records. The lines the file lacks are appended (and synced) here.
   */
  static async recover(dir: string, o: LedgerOptions, tail: LedgerTail, embedded: readonly EmbeddedLedger[], x: {
    fault: Fault | undefined;
    cap: number;
    pendingSeqs: () => number[];
  }): Promise<EventLedger> {
    const path = ledgerPath(dir);
    const missing = reconcile(path, tail.head, embedded);
    const file = new LogFile(path, dir, tail.handle, tail.size, { logAppends: 0, logSyncs: 0, snapshots: 0, compactions: 0, logBytes: 0 }, x.fault, {
      append: "ledger_append",
      sync: "ledger_sync",
    });
    let head = tail.head;
    if (missing.length > 0) {
      try {
        await file.append(missing.map((l) => `${l}\n`).join(""));
      } catch (e) {
        await file.close().catch(() => {});
        throw new EventsStoreError("write_failed", `event ledger ${path}: cannot append the ${missing.length} record(s) the pending log holds for it: ${errorMessage(e)}`, { cause: e });
      }
      head = { count: head.count + missing.length, head: sha256Hex(`${missing.at(-1)!}\n`) };
      o.onWritten?.(missing.length);
    }
    return new EventLedger(o, file, head, x.cap, x.pendingSeqs);
  }

  // ---- CheckpointSource ----

  /** Records written to events.ndjson and synced, and the `vigilprev` of the next one. */
  head(): ChainHead {
    return { ...this.durable };
  }

  /** Every line counted by `head` is synced already. */
  sync(): boolean {
    return true;
  }

  /** The seqs still pending in the queue (what a stop statement names). */
  pendingSeqs(): number[] {
    return this.pendingSeqsOf();
  }

  get path(): string {
    return this.file.path;
  }

  /** Lines waiting past the bound: the store refuses arrivals until they are written. */
  get full(): boolean {
    return this.unconfirmedBytes > this.cap;
  }

  /** Lines built but not yet written to events.ndjson. */
  get unconfirmedCount(): number {
    return this.unconfirmed.length;
  }

  // ---- records (synchronous, with the change in memory) ----

  /** Throws invalid_argument when these facts cannot make the arrival's record (before anything changes). */
  static checkArrival(event: EventOccurrence | GapNotice, facts: ArrivalFacts | undefined): asserts facts is ArrivalFacts {
    if (facts === undefined || typeof facts.subscriptionKey !== "string") {
      throw new EventsStoreError("invalid_argument", "the event ledger needs the subscription key of every arrival");
    }
    if (!isGap(event) && facts.delivery === undefined) throw new EventsStoreError("invalid_argument", "the event ledger needs the delivery mode of every event");
  }

  arrival(a: Arrival, facts: ArrivalFacts): void {
    const base = { session_id: this.o.sessionId, seq: a.seq, server: a.server, event_name: a.name, subscription_key_sha256: sha256Hex(facts.subscriptionKey) };
    const e = a.event;
    if (isGap(e)) {
      this.add((v) => gapRecord(this.o.eventSource, v, { ...base, reason: e.reason, cursor: e.cursor }));
      return;
    }
    this.add((v) => receivedRecord(this.o.eventSource, v, {
      ...base,
      delivery_mode: facts.delivery!,
      action: a.action,
      event_id: typeof e.eventId === "string" ? e.eventId : null,
      payload_sha256: canonicalSha256(e),
    }));
  }

  /** The record of an arrival that is not queued (seq null); false, recording nothing, when the ledger is full. */
  unqueued(a: Omit<Arrival, "seq">, facts: ArrivalFacts): boolean {
    EventLedger.checkArrival(a.event, facts);
    if (this.full) return false;
    let event: Arrival["event"];
    try {
      // Digested as a reload would see it, like a queued entry's stored event.
      event = JSON.parse(JSON.stringify(a.event)) as Arrival["event"];
    } catch (e) {
      throw new EventsStoreError("invalid_argument", `event cannot be recorded: ${errorMessage(e)}`, { cause: e });
    }
    this.arrival({ ...a, event, seq: null }, facts);
    return true;
  }

  delivered(batchTag: string, runId: string, entries: readonly PendingEntry[]): void {
    this.add((v) => deliveredRecord(this.o.eventSource, v, {
      session_id: this.o.sessionId,
      batch_tag: batchTag,
      run_id: runId,
      seqs: entries.map((e) => e.seq),
      event_ids: entries.map((e) => eventIdOf(e.event)),
    }));
  }

  dropped(entry: PendingEntry, attempts: number, errorCode: string): void {
    this.add((v) => droppedRecord(this.o.eventSource, v, { session_id: this.o.sessionId, seq: entry.seq, event_id: eventIdOf(entry.event), attempts, error_code: errorCode }));
  }

  // ---- write passes ----

  /** The pass's share: the ledger record to append after its records, or to end a rewrite with. */
  beginPass(): LedgerPass {
    const end = this.chain.state.count;
    const confirmed = this.durable.count;
    const from = Math.max(this.embeddedUpTo, confirmed);
    const lines = this.unconfirmed.slice(0, end - confirmed);
    const append = end > from ? serializeLedger(from, lines.slice(from - confirmed)) : "";
    // A rewrite always ends with a ledger record (empty or not): its adds are then never taken
    // for the torn tail of an uncommitted pass (pending-log.ts).
    return { end, trailer: { append, rewrite: () => serializeLedger(confirmed, lines) } };
  }

  /** The pass's pending-log write landed: its lines are in the log (appended, or carried by the rewrite). */
  embedded(pass: LedgerPass): void {
    this.embeddedUpTo = Math.max(this.embeddedUpTo, pass.end);
  }

  /** Appends the unconfirmed lines the pass covers to events.ndjson and syncs them; throws the system error. */
  async write(pass: LedgerPass): Promise<void> {
    const n = pass.end - this.durable.count;
    if (n <= 0) return;
    const lines = this.unconfirmed.slice(0, n);
    const text = lines.map((l) => `${l}\n`).join("");
    await this.file.append(text);
    this.unconfirmed.splice(0, n);
    this.unconfirmedBytes -= Buffer.byteLength(text);
    this.durable = { count: pass.end, head: sha256Hex(`${lines[n - 1]!}\n`) };
    this.o.onWritten?.(n);
  }

  close(): Promise<void> {
    return this.file.close();
  }

  private add(build: (vigilseq: number) => Record<string, unknown>): void {
    const line = this.chain.line(build(this.chain.state.count));
    this.chain.advance(line);
    this.unconfirmed.push(line);
    this.unconfirmedBytes += Buffer.byteLength(line) + 1;
  }
}

function eventIdOf(e: EventOccurrence | GapNotice): string | null {
  return typeof e.eventId === "string" ? e.eventId : null;
}

/**
 * The embedded lines events.ndjson lacks, in order (vigilseq head.count onwards). Refuses (file_refused)
 * an embedded line that contradicts the file: its last line differs, or lines are missing before them.
 */
function reconcile(path: string, head: ChainHead, embedded: readonly EmbeddedLedger[]): string[] {
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
export async function readLedgerTail(dir: string, o: LedgerOptions): Promise<LedgerTail> {
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
    await handle.read(buf, 0, buf.length, start);
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
