/**
 * The prologue every test/e2e/*.test.ts file shares, in one call at its top:
 *
 *   const cleanups = e2eSuite();
 *
 * checks once that the compiled binary exists (a clear "run make build" instead of forty spawn
 * errors), and after each test ends what it started: everything added to the returned `Cleanups`
 * (processes, servers, temp dirs, in reverse order) and the `vigil wrap` sessions of wrap.ts.
 * The environment vigil runs with is `vigilEnv()` (bin.ts); `E2E_WAIT_MS` bounds a wait for the
 * daemon or a fixture to get somewhere.
 */
import { afterEach, beforeAll } from "bun:test";
import { requireBinary } from "./bin.ts";
import { Cleanups } from "./cleanups.ts";
import { disposeWrapSessions } from "./wrap.ts";

export const E2E_WAIT_MS = 15_000;

export function e2eSuite(): Cleanups {
  const cleanups = new Cleanups();
  beforeAll(() => requireBinary());
  afterEach(async () => {
    await cleanups.run();
    await disposeWrapSessions();
  });
  return cleanups;
}
