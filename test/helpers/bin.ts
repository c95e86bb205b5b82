/** The compiled binary under test: `make test` builds it first; VIGIL_BIN overrides. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export const VIGIL_BIN = process.env.VIGIL_BIN ?? resolve("dist/vigil");

export function requireBinary(): void {
  if (!existsSync(VIGIL_BIN)) throw new Error(`${VIGIL_BIN} is missing: run \`make build\` (make test does it for you)`);
}
