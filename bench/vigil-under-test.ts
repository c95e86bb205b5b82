/**
 * The vigil binary a harness measures — dist/vigil, or $VIGIL_BIN (e.g. a build of another tree,
 * for a before/after comparison) — and how a report names it and the machine it ran on.
 */
import { existsSync, statSync } from "node:fs";
import { availableParallelism, release } from "node:os";
import { join, resolve } from "node:path";
import { cpuModel } from "./report.ts";

const ROOT = resolve(import.meta.dir, "..");
/** The binary under test: dist/vigil, or $VIGIL_BIN. */
export const VIGIL = process.env.VIGIL_BIN ? resolve(process.env.VIGIL_BIN) : join(ROOT, "dist/vigil");
const VIGIL_LABEL = process.env.VIGIL_BIN ? `VIGIL_BIN=${VIGIL}` : "dist/vigil";

/** False, with the reason on stderr, when the binary under test is not there. */
export function vigilPresent(): boolean {
  if (existsSync(VIGIL)) return true;
  process.stderr.write(`bench: ${VIGIL} is missing; build it first (make build)${process.env.VIGIL_BIN ? " or fix VIGIL_BIN" : ""}\n`);
  return false;
}

/** CPUs, CPU model, kernel and Bun: the machine without the binary. */
export function host(): string {
  return `${availableParallelism()} CPUs (nproc), ${cpuModel()}, Linux ${release()}, Bun ${Bun.version}`;
}

/** The machine and the binary under test: its version, when it was built and from what. */
export function machine(): string {
  const version = Bun.spawnSync([VIGIL, "--version"]).stdout.toString().trim();
  const built = new Date(statSync(VIGIL).mtimeMs).toISOString().slice(0, 16).replace("T", " ");
  const prefix = `${host()}, vigil ${version}`;
  // A binary from elsewhere (VIGIL_BIN) is not this tree's build: name it, not the tree.
  if (process.env.VIGIL_BIN) return `${prefix} (${VIGIL_LABEL}, built ${built} UTC)`;
  const dirty = Bun.spawnSync(["git", "-C", ROOT, "status", "--porcelain", "--", "src"]).stdout.toString().trim() !== "";
  const head = Bun.spawnSync(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"]).stdout.toString().trim() || "unknown";
  return `${prefix} (dist/vigil built ${built} UTC from tree ${head}${dirty ? " + uncommitted changes in src/" : ""})`;
}
