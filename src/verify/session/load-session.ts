/**
 * The I/O half of `vigil verify sessions/<name>`: each evidence file of a serve session directory
 * read within its bound (regular files only, never through a link), nothing parsed. Other files of
 * the directory (transcript, mcp-events.*) are not evidence and are not read.
 */
import { lstatSync, opendirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { SESSION_FILES } from "../../evidence/format.ts";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { readFileState } from "../load-capture.ts";
import { SESSION_BOUNDS, type SessionInput, type StopEntry, type StopsState } from "./session-input.ts";

/** A stop envelope's file name: its number (from 1, no leading zero) and the suffix. */
const STOP_NAME = /^([1-9][0-9]{0,8})\.dsse\.json$/;

export function loadSession(dir: string): SessionInput {
  return {
    name: basename(resolve(dir)),
    decisions: readFileState(join(dir, SESSION_FILES.decisions), SESSION_BOUNDS.logBytes),
    events: readFileState(join(dir, SESSION_FILES.events), SESSION_BOUNDS.logBytes),
    checkpoints: readFileState(join(dir, SESSION_FILES.checkpoints), SESSION_BOUNDS.checkpointBytes),
    stops: readStops(dir),
  };
}

function readStops(dir: string): StopsState {
  const stopsDir = join(dir, SESSION_FILES.stopsDir);
  try {
    const st = lstatSync(stopsDir);
    if (!st.isDirectory()) return { kind: "problem", problem: "not_regular", message: st.isSymbolicLink() ? "is a symbolic link" : "is not a directory" };
  } catch (e) {
    // No stops/ yet is a session that never stopped; anything else (EACCES, EIO) is a directory
    // verify could not read, which must not pass for one with no stops.
    if (errnoCode(e) === "ENOENT") return { kind: "read", entries: [] };
    return { kind: "problem", problem: "unreadable", message: `cannot read: ${errorMessage(e)}` };
  }
  const found: { n: number; name: string }[] = [];
  let handle: ReturnType<typeof opendirSync>;
  try {
    handle = opendirSync(stopsDir);
  } catch (e) {
    return { kind: "problem", problem: "unreadable", message: `cannot list: ${String(e)}` };
  }
  try {
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      // Anything else in stops/ is not a stop envelope of ours and cannot vouch for anything.
      const m = STOP_NAME.exec(entry.name);
      if (m === null) continue;
      if (found.length >= SESSION_BOUNDS.stopEnvelopes) return { kind: "problem", problem: "too_large", message: `more than ${SESSION_BOUNDS.stopEnvelopes} stop envelopes` };
      found.push({ n: Number(m[1]), name: entry.name });
    }
  } finally {
    handle.closeSync();
  }
  found.sort((a, b) => a.n - b.n);
  const entries: StopEntry[] = [];
  let total = 0;
  for (const { n, name } of found) {
    const state = readFileState(join(stopsDir, name), SESSION_BOUNDS.envelopeBytes);
    if (state.kind === "read") total += state.bytes.length;
    if (total > SESSION_BOUNDS.stopBytesTotal) return { kind: "problem", problem: "too_large", message: `stop envelopes over ${SESSION_BOUNDS.stopBytesTotal} bytes together` };
    entries.push({ n, file: `${SESSION_FILES.stopsDir}/${name}`, state });
  }
  return { kind: "read", entries };
}
