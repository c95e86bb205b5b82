/**
 * The test-only seam VIGIL_TEST_SESSION_THROW=<session>:<when> (src/shared/fault-seam.ts) for the
 * e2e tests of serve's containment boundary. A release build compiles the seam out, so a test that
 * needs it to fire runs serve from source (`SERVE_FROM_SOURCE`; VIGIL_SERVE_SOURCE overrides the
 * entry point), and the same environment given to the binary shows the binary ignores it.
 */
import type { EventsEnv } from "./events-serve.ts";
import { VIGIL_SOURCE } from "./wrap.ts";

/** `vigil` from source: the argv prefix that honours the seam. */
export const SERVE_FROM_SOURCE: readonly string[] =
  process.env.VIGIL_SERVE_SOURCE === undefined ? VIGIL_SOURCE : [process.execPath, process.env.VIGIL_SERVE_SOURCE];

/** `env` with the seam set: session `session` throws at `when`. */
export function withSessionThrow(env: EventsEnv, session: string, when: "run_settled" | "coalescer_fire"): EventsEnv {
  return { ...env, env: { ...env.env, VIGIL_TEST_SESSION_THROW: `${session}:${when}` } };
}
