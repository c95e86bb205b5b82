/**
 * Shared set-up of the EventsStore unit tests: a temp dir per test, stores opened with defaults
 * and closed after each test, the two file paths, and a rejection catcher that checks the class.
 */
import { afterEach, expect } from "bun:test";
import { join } from "node:path";
import { EventsStore, type EventsStoreOptions } from "../../src/events/store/events-store.ts";
import type { EventsStoreError } from "../../src/events/store/errors.ts";
import { StateError } from "../../src/shared/durable/state-error.ts";
import { EVENTS_LOG_FILE, EVENTS_SNAPSHOT_FILE } from "../../src/events/store/files.ts";
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
