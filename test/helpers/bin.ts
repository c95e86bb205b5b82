/** The compiled binary under test (`make test` builds it first; VIGIL_BIN overrides) and the environment it runs with. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export const VIGIL_BIN = process.env.VIGIL_BIN ?? resolve("dist/vigil");

export function requireBinary(): void {
  if (!existsSync(VIGIL_BIN)) throw new Error(`${VIGIL_BIN} is missing: run \`make build\` (make test does it for you)`);
}

/** Test-sized knobs every e2e vigil gets: a short shutdown grace so a stop does not wait seconds. */
export const E2E_KNOBS: Readonly<Record<string, string>> = { VIGIL_SHUTDOWN_GRACE_MS: "500" };

/** The environment vigil runs with in e2e tests: this process's, the e2e knobs, then a test's own. */
export function vigilEnv(knobs: Record<string, string> = {}): Record<string, string | undefined> {
  return { ...inheritedEnv(), ...E2E_KNOBS, ...knobs };
}

/**
 * This process's environment without the knobs that change what vigil writes or sends as a whole
 * (log format, metrics, OpenTelemetry export): a runner that exports one of them must not change
 * every e2e test's outcome. A test that wants one passes it in `knobs`.
 */
function inheritedEnv(): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === "VIGIL_LOG_FORMAT" || k === "VIGIL_METRICS" || k.startsWith("OTEL_")) continue;
    env[k] = v;
  }
  return env;
}
