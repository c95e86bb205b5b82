/**
 * Small state snapshots (serve.md §3): written atomically — a temp file (0600, created exclusively
 * in the same directory), write, fsync, rename over the target, fsync the directory — so a reader
 * or a crash sees either the old content or the new, never a mix. A failure at any step removes
 * the temp file and leaves the old content in place.
 *
 * Asynchronous on purpose: the fsyncs happen off the event loop, so one session's snapshot does
 * not stall every other session of the daemon. The fsyncs and the rename (a journal commit can
 * hold it for a while) go to the thread pool; open, write (into the page cache) and close are quick
 * system calls made in place, since each fs/promises step is a trip to the thread pool — the events
 * store writes one snapshot per page of events, and eight such trips cost it more CPU than the
 * fsyncs themselves (issue 16; bench/events/hotpath.ts).
 */
import { closeSync, constants, fsync, fsyncSync, openSync, rename, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { readBounded } from "./bounded-file.ts";
import { StateError } from "./state-error.ts";
import { FILE_MODE } from "./modes.ts";
import { tempPathFor } from "./temp-files.ts";

export type AtomicWriteStage = "after_write" | "before_rename" | "after_rename";

export interface AtomicWriteOptions {
  /** Test seam: called at each stage; a throw there behaves like a failing system call at that point. */
  fault?: (stage: AtomicWriteStage) => void | Promise<void>;
}

let counter = 0;

/** A replacement written and fsync'd beside its target, not yet in place (`stageFileAtomic`). */
export interface StagedFile {
  /** Renames it over the target and syncs the directory. Rejects with the system error; the old content is then intact unless the rename itself was done. */
  install(): Promise<void>;
  /** Removes the temp file: the write it was staged for is abandoned (the old content stays). */
  discard(): void;
}

/** Replaces `path` with `bytes` atomically and durably. Rejects with the system error; the old content is then intact. */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string, options: AtomicWriteOptions = {}): Promise<void> {
  await (await stageFileAtomic(path, bytes, options)).install();
}

/**
 * The first half of `writeFileAtomic`: the temp file created, written and fsync'd, but not renamed.
 * For a writer whose new content may only take effect once something else is durable, and which
 * can sync both at once (events-store.ts: the pending log before the snapshot, serve.md §3).
 */
export async function stageFileAtomic(path: string, bytes: Uint8Array | string, options: AtomicWriteOptions = {}): Promise<StagedFile> {
  const dir = dirname(path);
  // A crash can leave this file behind: its owner sweeps it on open (temp-files.ts).
  const tmp = tempPathFor(path, process.pid, ++counter, Math.random().toString(36).slice(2, 8));
  const data = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
  let fd: number | undefined;
  try {
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, FILE_MODE);
    let off = 0;
    while (off < data.length) {
      const n = writeSync(fd, data, off, data.length - off);
      if (!(n > 0)) throw new Error("the write made no progress");
      off += n;
    }
    await options.fault?.("after_write");
    await fsyncFd(fd);
    closeSync(fd);
    fd = undefined;
  } catch (e) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // already failing: the first error is the one to report
      }
    }
    removeQuietly(tmp);
    throw e;
  }
  let used = false;
  return {
    async install() {
      if (used) throw new Error(`the staged replacement of ${path} was already installed or discarded`);
      used = true;
      try {
        await options.fault?.("before_rename");
        await new Promise<void>((done, fail) => rename(tmp, path, (e) => (e ? fail(e) : done())));
      } catch (e) {
        removeQuietly(tmp);
        throw e;
      }
      await options.fault?.("after_rename");
      await syncDir(dir);
    },
    discard() {
      if (used) return;
      used = true;
      removeQuietly(tmp);
    },
  };
}

function removeQuietly(tmp: string): void {
  try {
    unlinkSync(tmp);
  } catch {
    // never created, or already gone
  }
}

/** fsync on the thread pool (the callback API: one trip, no FileHandle). */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((done, fail) => fsync(fd, (e) => (e ? fail(e) : done())));
}

/** fsync a directory so a rename survives a crash; best effort where the filesystem refuses it. */
export async function syncDir(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    await fsyncFd(fd);
  } catch {
    // some filesystems refuse fsync on directories; the file itself was synced
  } finally {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // nothing was written through it
      }
    }
  }
}

/** The synchronous `syncDir`, for writers that must not yield between the fsync and the next step. */
export function syncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on directories; the file itself was synced
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Reads a small state file whole: null when it does not exist; a StateError (file_unreadable) when
 * it is over maxBytes, a symlink, not a regular file, or unreadable. Never an unbounded read.
 */
export function readSmallFile(path: string, maxBytes: number): Buffer | null {
  const r = readBounded(path, maxBytes);
  if (r.ok) return r.bytes;
  if (r.problem === "missing") return null;
  throw new StateError("file_unreadable", `cannot read ${path}: ${r.message}`);
}
