/**
 * The state dir as `vigil serve --check-config` judges it: the same refusals as `ensureStateDir`
 * (paths.ts), without creating or changing anything — the check runs as systemd's
 * `ExecStartPre=`, before the real start, and must leave the machine as it found it.
 *
 * Decision (issue 15 item 5), refused (exit 2) vs warned:
 * - refused: whatever serve itself would refuse at start or at its first session — a state dir or
 *   `sessions/` dir that is a symlink, not a directory, not ours, or group/world-writable; a state
 *   dir we cannot write into (serve could not create a session in it); a missing state dir whose
 *   nearest existing ancestor is not a directory we can write into (serve could not create it).
 * - warned: a state dir that is group- or world-readable or -searchable (serve creates it 0700 and
 *   accepts a wider one, but transcripts and webhook secrets live in it). A missing state dir is
 *   neither: the summary says serve will create it (0700).
 */
import { accessSync, constants, lstatSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { StateError } from "../../shared/durable/state-error.ts";
import { SESSIONS_DIR, checkPrivateDir } from "./paths.ts";

export interface StateDirReport {
  /** The absolute path serve would use. */
  path: string;
  /** false: missing, and serve would create it (0700, parents too). */
  exists: boolean;
  /** What serve accepts but an operator should look at, one sentence each. */
  warnings: string[];
}

/** Judges the state dir without touching it; throws StateError("unsafe_state_dir") for a refusal. */
export function inspectStateDir(stateDir: string): StateDirReport {
  const dir = resolve(stateDir);
  if (!exists(dir)) {
    checkCreatable(dir);
    return { path: dir, exists: false, warnings: [] };
  }
  checkPrivateDir(dir, "state directory");
  if (!writable(dir)) throw refuse(`refusing state directory ${dir}: the current user cannot write into it`);
  const warnings: string[] = [];
  const mode = lstatSync(dir).mode & 0o777;
  if ((mode & 0o055) !== 0) {
    warnings.push(`state directory ${dir} is readable by group or others (mode ${mode.toString(8).padStart(4, "0")}): transcripts and webhook secrets live there; chmod 700 ${dir}`);
  }
  const sessions = join(dir, SESSIONS_DIR);
  if (exists(sessions)) {
    checkPrivateDir(sessions, "sessions directory");
    if (!writable(sessions)) throw refuse(`refusing sessions directory ${sessions}: the current user cannot write into it`);
  }
  return { path: dir, exists: true, warnings };
}

/** A missing dir: mkdir -p would start at its nearest existing ancestor, which must be a directory we can write into. */
function checkCreatable(dir: string): void {
  let ancestor = dirname(dir);
  while (!exists(ancestor) && dirname(ancestor) !== ancestor) ancestor = dirname(ancestor);
  let isDir: boolean;
  try {
    // Followed, as mkdir follows it: a symlinked /var/lib is fine, only the state dir itself may not be one.
    isDir = statSync(ancestor).isDirectory();
  } catch (e) {
    throw refuse(`cannot create state directory ${dir}: cannot inspect ${ancestor}: ${errorMessage(e)}`);
  }
  if (!isDir) throw refuse(`cannot create state directory ${dir}: ${ancestor} is not a directory`);
  if (!writable(ancestor)) {
    throw refuse(`cannot create state directory ${dir}: the current user cannot write into ${ancestor}`, `create ${dir} (mode 0700, owned by the user serve runs as), or pass another --state-dir`);
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    // ENOTDIR: a file on the way; checkCreatable names it.
    if (errnoCode(e) === "ENOENT" || errnoCode(e) === "ENOTDIR") return false;
    throw refuse(`cannot inspect ${path}: ${errorMessage(e)}`);
  }
}

/** access(2) with W_OK|X_OK: also false on a read-only mount (systemd's ProtectSystem=strict), which a mode check would miss. */
function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function refuse(message: string, hint?: string): StateError {
  return new StateError("unsafe_state_dir", message, hint === undefined ? {} : { hint });
}
