/**
 * Accounting of the event ledger (serve.md "Evidence"), replayed record by record:
 *
 * - a `received` or `gap` record with a `seq` queues an entry under that seq; it is pending until a
 *   `delivered` record names the seq in `seqs` or a `dropped` record names it;
 * - a `received` with `seq` null (action notify) is accounted for at receipt;
 * - a seq delivered or dropped that was never queued, a seq queued twice, or one delivered or
 *   dropped twice is an accounting the ledger cannot explain (`events_unaccounted`, unknown);
 * - what is still queued at the end is pending (`events_pending`, a known loss).
 */
import { EVENT_DELIVERED_TYPE, EVENT_DROPPED_TYPE, EVENT_GAP_TYPE, EVENT_RECEIVED_TYPE } from "../../evidence/format.ts";
import type { DeliveredData, DroppedData, GapData, ReceivedData } from "../../evidence/ledger-records.ts";
import { pendingDigest } from "../../evidence/serve-stop.ts";
import { type Finding, lossFinding, unknownFinding } from "../findings.ts";

/** Pending events named in one finding's message; the rest are counted. */
export const MAX_LISTED_PENDING = 50;
/** Accounting findings stop after this many. */
const MAX_ACCOUNTING_FINDINGS = 10;

export interface PendingEvent {
  seq: number;
  event_id: string | null;
}

export interface LedgerCounts {
  /** `received` records (queued or notify). */
  received: number;
  /** Seqs named by `delivered` records. */
  delivered: number;
  /** `dropped` records. */
  dropped: number;
  /** `gap` records. */
  gaps: number;
}

export class LedgerAccounting {
  readonly counts: LedgerCounts = { received: 0, delivered: 0, dropped: 0, gaps: 0 };
  /** Queued and not yet delivered or dropped, in the order they were queued. */
  private readonly pending = new Map<number, string | null>();
  /** Every seq ever queued (pending or accounted for). */
  private readonly queued = new Set<number>();
  private readonly problems: string[] = [];
  private problemCount = 0;

  constructor(private readonly file: string) {}

  /** One record that passed its shape and session checks; `line` is 1-based. */
  apply(type: string, data: Record<string, unknown>, line: number): void {
    const where = `line ${line}: `;
    if (type === EVENT_RECEIVED_TYPE) {
      const d = data as unknown as ReceivedData;
      this.counts.received++;
      if (d.seq !== null) this.queue(d.seq, d.event_id, where);
    } else if (type === EVENT_GAP_TYPE) {
      const d = data as unknown as GapData;
      this.counts.gaps++;
      if (d.seq !== null) this.queue(d.seq, null, where);
    } else if (type === EVENT_DELIVERED_TYPE) {
      const d = data as unknown as DeliveredData;
      d.seqs.forEach((seq, i) => {
        this.counts.delivered++;
        this.settle(seq, d.event_ids[i] ?? null, "delivered", where);
      });
    } else if (type === EVENT_DROPPED_TYPE) {
      const d = data as unknown as DroppedData;
      this.counts.dropped++;
      this.settle(d.seq, d.event_id, "dropped", where);
    }
  }

  /** The queued entries still pending, in queue order. */
  pendingEvents(): PendingEvent[] {
    return [...this.pending].map(([seq, event_id]) => ({ seq, event_id }));
  }

  /**
   * Whether the pending set is the one a stop statement claims: as many seqs, the same digest of
   * them all (serve-stop.ts pendingDigest), and the lowest of them listed.
   */
  pendingEquals(claimed: { listed: readonly number[]; count: number; sha256: string }): boolean {
    if (claimed.count !== this.pending.size) return false;
    const sorted = [...this.pending.keys()].sort((a, b) => a - b);
    if (pendingDigest(sorted) !== claimed.sha256) return false;
    return claimed.listed.every((seq, i) => sorted[i] === seq);
  }

  findings(): Finding[] {
    const out = this.problems.map((m) => unknownFinding("events_unaccounted", this.file, m));
    if (this.problemCount > MAX_ACCOUNTING_FINDINGS) {
      out.push(unknownFinding("events_unaccounted", this.file, `${this.problemCount - MAX_ACCOUNTING_FINDINGS} more accounting problems not listed`));
    }
    const pending = this.pendingEvents();
    if (pending.length > 0) out.push(lossFinding("events_pending", this.file, pendingMessage(pending)));
    return out;
  }

  private queue(seq: number, eventId: string | null, where: string): void {
    if (this.queued.has(seq)) return this.problem(`${where}seq ${seq} is queued a second time`);
    this.queued.add(seq);
    this.pending.set(seq, eventId);
  }

  private settle(seq: number, eventId: string | null, how: string, where: string): void {
    if (!this.queued.has(seq)) return this.problem(`${where}seq ${seq} is ${how} but was never received`);
    if (!this.pending.has(seq)) return this.problem(`${where}seq ${seq} is ${how} but was already delivered or dropped`);
    const recorded = this.pending.get(seq) ?? null;
    if (recorded !== eventId) return this.problem(`${where}seq ${seq} is ${how} as event ${show(eventId)}, but was received as ${show(recorded)}`);
    this.pending.delete(seq);
  }

  private problem(message: string): void {
    if (this.problemCount++ < MAX_ACCOUNTING_FINDINGS) this.problems.push(message);
  }
}

function show(id: string | null): string {
  return id === null ? "null" : JSON.stringify(id.slice(0, 128));
}

/** "3 events still pending: seq 4 (evt-a), seq 5 (no event id), …and 1 more". */
export function pendingMessage(pending: readonly PendingEvent[]): string {
  const listed = pending.slice(0, MAX_LISTED_PENDING).map((p) => `seq ${p.seq} (${p.event_id === null ? "no event id" : JSON.stringify(p.event_id.slice(0, 128))})`);
  const more = pending.length > MAX_LISTED_PENDING ? `, …and ${pending.length - MAX_LISTED_PENDING} more` : "";
  return `${pending.length} event${pending.length === 1 ? "" : "s"} still pending (received, neither delivered nor dropped): ${listed.join(", ")}${more}`;
}
