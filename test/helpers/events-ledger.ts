/**
 * Readers of a serve session's event ledger on disk (`sessions/<name>/events.ndjson`, serve.md
 * "Evidence") for the e2e tests: its records, its chain checked from the session's anchor, its
 * accounting (received seqs delivered, dropped or still pending), and what a restart's recovery
 * would make of it (the ledger records the pending log embeds that the file lacks).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "bun:test";
import { type ChainHead, chainAnchor, checkChain } from "../../src/evidence/chain.ts";
import { waitFor } from "./wait.ts";

export const LEDGER_SOURCE = "vigil://test/ledger";
/** The top-level config member that turns the ledger on. */
export const EVIDENCE_CONFIG = { evidence: { event_source: LEDGER_SOURCE } };

export interface LedgerRecord {
  type: string;
  id: string;
  source: string;
  vigilseq: number;
  vigilprev: string;
  data: Record<string, any>;
}

const sessionDir = (stateDir: string, session: string) => join(stateDir, "sessions", session);

/** The complete lines of events.ndjson (a torn tail left out). */
export function ledgerLines(stateDir: string, session: string): string[] {
  const file = join(sessionDir(stateDir, session), "events.ndjson");
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").filter((l) => l !== "");
}

export const ledgerOnDisk = (stateDir: string, session: string): LedgerRecord[] => ledgerLines(stateDir, session).map((l) => JSON.parse(l) as LedgerRecord);

/** Asserts that the lines chain from the session's anchor; returns the head. */
export function expectChained(lines: readonly string[], session: string): ChainHead {
  const r = checkChain(lines.map((l) => ({ raw: Buffer.from(l), value: JSON.parse(l) })), chainAnchor(LEDGER_SOURCE, session, "events.ndjson"));
  expect(r.break).toBeNull();
  return r.head;
}

export interface Accounting {
  /** Seqs of queued arrivals (received or gap with a seq), in ledger order. */
  queued: number[];
  delivered: Set<number>;
  dropped: Set<number>;
  /** Queued and neither delivered nor dropped, ascending. */
  pending: number[];
  /** Delivered or dropped seqs no arrival record names. */
  unknown: number[];
}

export function accounting(records: readonly LedgerRecord[]): Accounting {
  const queued: number[] = [];
  const delivered = new Set<number>();
  const dropped = new Set<number>();
  for (const r of records) {
    if ((r.type === "vigil.mcp.event.received.v1" || r.type === "vigil.mcp.event.gap.v1") && r.data.seq !== null) queued.push(r.data.seq);
    if (r.type === "vigil.mcp.event.delivered.v1") for (const s of r.data.seqs as number[]) delivered.add(s);
    if (r.type === "vigil.mcp.event.dropped.v1") dropped.add(r.data.seq);
  }
  const known = new Set(queued);
  const pending = queued.filter((s) => !delivered.has(s) && !dropped.has(s)).sort((a, b) => a - b);
  const unknown = [...delivered, ...dropped].filter((s) => !known.has(s));
  return { queued, delivered, dropped, pending, unknown };
}

/**
 * events.ndjson as the next open's recovery makes it: its complete lines, then the lines the
 * pending log embeds (`{"ledger":{"from","lines"}}`) from its count on, in order.
 */
export function ledgerAfterRecovery(stateDir: string, session: string): string[] {
  const lines = ledgerLines(stateDir, session);
  const file = join(sessionDir(stateDir, session), "mcp-events.log");
  if (!existsSync(file)) return lines;
  const out = [...lines];
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    if (!raw.startsWith('{"ledger":')) continue;
    let rec: { ledger: { from: number; lines: string[] } };
    try {
      rec = JSON.parse(raw);
    } catch {
      continue; // a torn last line
    }
    rec.ledger.lines.forEach((line, i) => {
      if (rec.ledger.from + i === out.length) out.push(line);
    });
  }
  return out;
}

/** Waits (bounded) until the session's ledger records satisfy `done`; returns them. */
export function waitLedger(stateDir: string, session: string, done: (records: LedgerRecord[]) => boolean, label: string, ms = 20_000): Promise<LedgerRecord[]> {
  return waitFor(() => ledgerOnDisk(stateDir, session), {
    until: done,
    timeoutMs: ms,
    label: `ledger: ${label}`,
    show: (records) => records.map((r) => `${r.type.replace("vigil.mcp.event.", "")} ${JSON.stringify(r.data.seq ?? r.data.seqs)}`).join("\n"),
  });
}

export const ofType = (records: readonly LedgerRecord[], kind: "received" | "gap" | "delivered" | "dropped") =>
  records.filter((r) => r.type === `vigil.mcp.event.${kind}.v1`);
