/**
 * Tests that need a Debian tool (prometheus, promtool, systemd-analyze, python3-securesystemslib;
 * scripts/ci-debian-tools.sh, `make debian-tools`): where the tool is missing they skip with a
 * printed reason — except under CI, where they run and fail, so CI never passes by skipping.
 *
 *   const PROMTOOL = debianTool("promtool");
 *   const SKIP = skipWithout("metrics-endpoint", PROMTOOL === null ? "no promtool binary" : null);
 *   test.skipIf(SKIP)("…", () => { if (PROMTOOL === null) throw new Error("…"); … });
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

/** CI is set (and not "false" or "0"). */
export const IN_CI = (process.env.CI ?? "") !== "" && process.env.CI !== "false" && process.env.CI !== "0";

/** The tool `make debian-tools` unpacked into .tools/debian/usr/bin, else the one on PATH; null when neither. */
export function debianTool(name: string): string | null {
  return [resolve(import.meta.dir, "../../.tools/debian/usr/bin", name), Bun.which(name) ?? ""].find((p) => p !== "" && existsSync(p)) ?? null;
}

/**
 * Prints why the tests of `file` that need a missing tool skip (or, under CI, will fail); true
 * when they should skip. `missing`: null when the tool is there.
 */
export function skipWithout(file: string, missing: string | null, install = "install it with `make debian-tools`"): boolean {
  if (missing === null) return false;
  if (IN_CI) console.error(`${file}: ${missing} — CI must have it (scripts/ci-debian-tools.sh): FAILING`);
  else console.warn(`${file}: skipped: ${missing}; ${install}`);
  return !IN_CI;
}
