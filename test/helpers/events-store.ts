/**
 * Shared set-up of the EventsStore unit tests: a temp dir per test, stores opened with defaults
 * and closed after each test, the file paths, a rejection catcher that checks the class, a fault
 * seam, and readers of the event ledger the store keeps beside its pending log.
 */
import { afterEach, expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChainHead } from "../../src/evidence/chain.ts";
import { EventsStore, type EventsStoreOptions, type FaultOp } from "../../src/events/store/events-store.ts";
import type { EventsStoreError } from "../../src/events/store/errors.ts";
import { StateError } from "../../src/shared/durable/state-error.ts";
import { EVENTS_LOG_FILE, EVENTS_SNAPSHOT_FILE } from "../../src/events/store/files.ts";
import { expectChained } from "./events-ledger.ts";
import { type TmpDir, tmpDir } from "./fixture.ts";

/** Registers an afterEach that closes the stores and removes the temp dir; `after` runs last. */
export function storeHarness(prefix: string, defaults: EventsStoreOptions, after?: () => void) {
  let tmp: TmpDir | undefined;
  const opened: EventsStore[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    tmp?.cleanup();
    after?.();
  });
  return {
    /** A fresh temp dir for this test. */
    setup: () => (tmp = tmpDir(prefix)).path,
    async openStore(dir: string, o: Partial<EventsStoreOptions> = {}): Promise<EventsStore> {
      const s = await EventsStore.open(dir, { ...defaults, ...o });
      opened.push(s);
      return s;
    },
  };
}

export const logFile = (dir: string) => join(dir, EVENTS_LOG_FILE);
export const snapFile = (dir: string) => join(dir, EVENTS_SNAPSHOT_FILE);

/** The StateError a promise rejects with (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<EventsStoreError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(StateError);
    return e as EventsStoreError;
  }
  throw new Error("expected a rejection");
}

/** A fault seam (the store's `fault` option) that throws EIO at the named step while armed (a count of times). */
export function faults() {
  const armed = new Map<FaultOp, number>();
  return {
    arm: (op: FaultOp, times = 1) => armed.set(op, times),
    disarm: () => armed.clear(),
    fn: (op: FaultOp) => {
      const left = armed.get(op) ?? 0;
      if (left <= 0) return;
      armed.set(op, left - 1);
      throw Object.assign(new Error(`EIO: injected at ${op}`), { code: "EIO" });
    },
  };
}

export const ledgerFile = (dir: string) => join(dir, "events.ndjson");

/** The ledger's lines, a torn tail included (the store's recovery is what is under test). */
export function ledgerLines(dir: string): string[] {
  if (!existsSync(ledgerFile(dir))) return [];
  return readFileSync(ledgerFile(dir), "utf8").split("\n").filter((l) => l !== "");
}

export const ledgerRecords = (dir: string) => ledgerLines(dir).map((l) => JSON.parse(l) as { type: string; id: string; vigilseq: number; data: Record<string, any> });

/** Asserts that the ledger chains from the session's anchor (event source events-ledger.ts LEDGER_SOURCE); returns its head. */
export const expectLedgerChained = (dir: string, session: string): ChainHead => expectChained(ledgerLines(dir), session);
