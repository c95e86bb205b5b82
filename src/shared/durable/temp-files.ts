/**
 * The temporary files of atomic writes (atomic-file.ts), named `.<target>.tmp-<pid>-<n>-<random>`
 * next to their target. A crash (kill -9, power loss) between the create and the rename leaves one
 * behind and nothing else would ever remove it, so the owner of a state directory sweeps them when
 * it opens its files (issue 11 item 11).
 *
 * Only exact matches of that name for the given targets are touched, and only regular files. There
 * is no lock on a state directory, so the pid in the name decides: a file whose writer is still
 * alive (another vigil on the same state dir, or this process) may be in the middle of its write and
 * is left alone; a reused pid only delays the sweep to a later open.
 */
import { lstat, opendir, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { errnoCode } from "../errors.ts";

/** A directory with more entries than this is not scanned further (a session dir holds a handful). */
const MAX_SCANNED_ENTRIES = 10_000;

/** The temp path of one atomic write of `target`. */
export function tempPathFor(target: string, pid: number, n: number, random: string): string {
  return join(dirname(target), `.${basename(target)}.tmp-${pid}-${n}-${random}`);
}

/** The writer's pid when `name` is exactly a temp name of `target` (a base name), else null. */
export function tempWriterPid(name: string, target: string): number | null {
  const prefix = `.${target}.tmp-`;
  if (!name.startsWith(prefix)) return null;
  const m = /^([1-9][0-9]{0,9})-([1-9][0-9]{0,15})-([0-9a-z]{0,8})$/.exec(name.slice(prefix.length));
  return m === null ? null : Number(m[1]);
}

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errnoCode(e) !== "ESRCH";
  }
}

export interface SweepResult {
  /** Base names of the stale temp files removed. */
  removed: string[];
  /** Stale temp files (or the directory) that could not be removed or read, with the reason. */
  failed: string[];
}

/**
 * Removes the temp files of `targets` (base names) in `dir` whose writer is gone. Best effort: a
 * missing `dir` has nothing to sweep, and what cannot be read or removed is listed in `failed`.
 */
export async function removeStaleTemps(dir: string, targets: readonly string[], alive: (pid: number) => boolean = processAlive): Promise<SweepResult> {
  const result: SweepResult = { removed: [], failed: [] };
  let handle: Awaited<ReturnType<typeof opendir>>;
  try {
    handle = await opendir(dir);
  } catch (e) {
    if (errnoCode(e) !== "ENOENT") result.failed.push(`${dir}: ${errnoCode(e) ?? String(e)}`);
    return result;
  }
  const stale: string[] = [];
  let scanned = 0;
  try {
    for await (const entry of handle) {
      if (++scanned > MAX_SCANNED_ENTRIES) break;
      for (const target of targets) {
        const pid = tempWriterPid(entry.name, target);
        if (pid !== null && !alive(pid)) stale.push(entry.name);
      }
    }
  } finally {
    // Breaking out of the iteration closes the handle already; a second close is refused, harmlessly.
    await handle.close().catch(() => {});
  }
  for (const name of stale) {
    const path = join(dir, name);
    try {
      if (!(await lstat(path)).isFile()) continue;
      await unlink(path);
      result.removed.push(name);
    } catch (e) {
      if (errnoCode(e) !== "ENOENT") result.failed.push(`${name}: ${errnoCode(e) ?? String(e)}`);
    }
  }
  return result;
}
