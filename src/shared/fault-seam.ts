/**
 * Test-only fault injection, documented in the README. A release build (scripts/build.ts defines
 * VIGIL_RELEASE) ignores it, so an operator's environment can never weaken real evidence.
 *
 * VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES=N: the decision-log writer behaves as if the device
 * fills after N bytes (a short write, then ENOSPC).
 */
declare const VIGIL_RELEASE: boolean | undefined;

export const IS_RELEASE = typeof VIGIL_RELEASE === "boolean" && VIGIL_RELEASE;

export function decisionLogFaultBytes(env: Record<string, string | undefined> = process.env): number | undefined {
  if (IS_RELEASE) return undefined;
  const raw = env.VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES;
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}
