/**
 * Test-only fault injection, documented in the README. A release build (scripts/build.ts defines
 * VIGIL_RELEASE) ignores it, so an operator's environment can never weaken real evidence.
 *
 * VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES=N: the decision-log writer behaves as if the device
 * fills after N bytes (a short write, then ENOSPC).
 * VIGIL_TEST_SESSION_THROW=<session>:<when>: see `sessionThrowSeam`.
 */
declare const VIGIL_RELEASE: boolean | undefined;

export const IS_RELEASE = typeof VIGIL_RELEASE === "boolean" && VIGIL_RELEASE;

export function decisionLogFaultBytes(env: Record<string, string | undefined> = process.env): number | undefined {
  if (IS_RELEASE) return undefined;
  const raw = env.VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES;
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}

/** Where a session's test throw happens (issue 12 item F); see `sessionThrowSeam`. */
export type SessionThrowPoint = "run_settled" | "coalescer_fire";
const SESSION_THROW_POINTS: readonly SessionThrowPoint[] = ["run_settled", "coalescer_fire"];

/**
 * VIGIL_TEST_SESSION_THROW=<session>:<when>: session <session> throws an unexpected exception at
 * <when> — `run_settled`: while its first run settles (from a run-settled listener, where the
 * events client's own listener runs); `coalescer_fire`: when the events client's coalescer first
 * fires from its timer (an async root of the events code that nobody awaits) — once per process,
 * so a restarted session serves normally. It proves the containment boundary of serve
 * (src/serve/session-faults.ts). Malformed: ignored.
 */
export function sessionThrowSeam(env: Record<string, string | undefined> = process.env): { session: string; when: SessionThrowPoint } | undefined {
  if (IS_RELEASE) return undefined;
  const raw = env.VIGIL_TEST_SESSION_THROW;
  const m = raw === undefined ? null : /^([^:]{1,64}):([a-z_]{1,32})$/.exec(raw);
  if (m === null || !SESSION_THROW_POINTS.includes(m[2] as SessionThrowPoint)) return undefined;
  return { session: m[1]!, when: m[2] as SessionThrowPoint };
}

let sessionThrowFired = false;

/**
 * Throws the seam's exception when session `session` reaches `when` and the seam names both —
 * the first time only, in this process. A no-op in release builds and without the seam.
 */
export function throwAtSessionSeam(session: string, when: SessionThrowPoint, env: Record<string, string | undefined> = process.env): void {
  if (sessionThrowFired) return;
  const seam = sessionThrowSeam(env);
  if (seam === undefined || seam.session !== session || seam.when !== when) return;
  sessionThrowFired = true;
  throw new Error(`VIGIL_TEST_SESSION_THROW: a test exception at ${when}`);
}
