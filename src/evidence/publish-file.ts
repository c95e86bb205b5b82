/**
 * A single-record evidence file that only ever appears whole (a serve session's stop envelope):
 * the record is written to a temp file beside its name (record-file.ts: exclusive, 0600, fsynced),
 * which is then hard-linked to the name and removed. `link` never replaces a file, so the name is
 * still created exclusively (EEXIST when it exists), and a kill -9 or power loss mid-write leaves
 * at most a temp file (`.<name>.tmp-<pid>-…`, named as shared/durable/temp-files.ts names them),
 * never an empty or cut file under the name — which `vigil verify` would refuse for good.
 */
import { linkSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { syncDirSync } from "../shared/durable/atomic-file.ts";
import { processAlive, tempPathFor, tempWriterPid } from "../shared/durable/temp-files.ts";
import { RecordWriteError, writeRecordFile } from "./record-file.ts";
import { writeErrorText } from "./write-error.ts";

let published = 0;

/** Writes `record` as the new file `path`, or throws a RecordWriteError (its cause EEXIST when `path` exists). */
export function publishRecordFile(path: string, record: unknown): void {
  const temp = tempPathFor(path, process.pid, ++published, Math.random().toString(36).slice(2, 10));
  writeRecordFile(temp, record);
  try {
    linkSync(temp, path);
  } catch (e) {
    throw new RecordWriteError(writeErrorText(e, path), { cause: e });
  } finally {
    try {
      unlinkSync(temp);
      syncDirSync(dirname(path));
    } catch {
      // A temp file left behind names nothing; a later sweep removes it.
    }
  }
}

/**
 * Removes, among `names` (entries of `dir`), the temp files of `publishRecordFile` whose writer is
 * gone; `target(name)` is the file a name would be a temp of, or null. Best effort; returns how many.
 */
export function sweepPublishTemps(dir: string, names: readonly string[], target: (name: string) => string | null): number {
  let removed = 0;
  for (const name of names) {
    const of = target(name);
    const pid = of === null ? null : tempWriterPid(name, of);
    if (pid === null || processAlive(pid)) continue;
    try {
      unlinkSync(join(dir, name));
      removed++;
    } catch {
      // gone already, or not ours to remove: it names no stop either way
    }
  }
  return removed;
}
