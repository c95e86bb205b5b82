/**
 * Where session state lives (serve.md §3):
 *
 *   <state-dir>/sessions/<name>/{transcript.jsonl, mcp-events.json, mcp-events.log, decisions.ndjson}
 *
 * (with evidence also events.ndjson, checkpoints.ndjson and stops/<n>.dsse.json: session-evidence.ts)
 * plus the transcript's later segments and its compaction pointer (transcript-segments.ts).
 *
 * The state dir is `--state-dir`, else `$XDG_STATE_HOME/vigil`, else `~/.local/state/vigil`. Every
 * directory we create is 0700. A state dir (or sessions dir, or session dir) that is a symlink, is
 * not a directory, is group- or world-writable, or belongs to another user is refused: the
 * transcripts and the webhook secrets in it must not be readable or replaceable by someone else.
 */
import { lstatSync, mkdirSync, type Stats } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { errnoCode, errorMessage } from "../../shared/errors.ts";
import { DIR_MODE, FILE_MODE } from "../../shared/durable/modes.ts";
import { StateError } from "../../shared/durable/state-error.ts";

export const SESSIONS_DIR = "sessions";
export const TRANSCRIPT_FILE = "transcript.jsonl";
export const DECISIONS_FILE = "decisions.ndjson";
export const STOPS_DIR = "stops";

export { DIR_MODE, FILE_MODE };
/** The events client owns the names of its state files; serve lays out the directory around them. */
export { EVENTS_LOG_FILE, EVENTS_SNAPSHOT_FILE } from "../../events/store/files.ts";

const SESSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The state dir from the flag, else the environment (XDG base directory rules: a relative XDG_STATE_HOME is ignored). */
export function resolveStateDir(flag: string | undefined, env: Record<string, string | undefined> = process.env): string {
  if (flag !== undefined) {
    if (flag === "") throw new StateError("unsafe_state_dir", "--state-dir: empty path");
    return resolve(flag);
  }
  const xdg = env.XDG_STATE_HOME;
  if (xdg !== undefined && xdg !== "" && isAbsolute(xdg)) return join(xdg, "vigil");
  const home = env.HOME !== undefined && env.HOME !== "" ? env.HOME : homedir();
  return join(home, ".local", "state", "vigil");
}

export function isValidSessionName(name: string): boolean {
  return SESSION_NAME.test(name) && !name.includes("..");
}

/** Returns the name, or throws invalid_session_name (the message quotes the name only when it is short and printable). */
export function validateSessionName(name: string): string {
  if (isValidSessionName(name)) return name;
  const shown = name.length <= 80 && /^[\x20-\x7e]*$/.test(name) ? JSON.stringify(name) : `(${name.length} characters)`;
  throw new StateError(
    "invalid_session_name",
    `invalid session name ${shown}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'`,
  );
}

/** `<stateDir>/sessions/<name>`; validates the name, touches nothing. */
export function sessionDir(stateDir: string, name: string): string {
  return join(stateDir, SESSIONS_DIR, validateSessionName(name));
}

/** Creates the state dir if missing (0700, parents too) and checks it is safe to use. Returns its absolute path. */
export function ensureStateDir(stateDir: string): string {
  const dir = resolve(stateDir);
  if (lstatOrNull(dir) === null) {
    try {
      mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    } catch (e) {
      throw new StateError("unsafe_state_dir", `cannot create state directory ${dir}: ${errorMessage(e)}`, { cause: e });
    }
  }
  checkPrivateDir(dir, "state directory");
  return dir;
}

/** Ensures the state dir, `sessions/` and `sessions/<name>/` exist and are safe. Returns the session dir. */
export function ensureSessionDir(stateDir: string, name: string): string {
  const root = ensureStateDir(stateDir);
  const sessions = join(root, SESSIONS_DIR);
  ensureChildDir(sessions, "sessions directory");
  const dir = join(sessions, validateSessionName(name));
  ensureChildDir(dir, `session directory of ${JSON.stringify(name)}`);
  return dir;
}

/** `sessions/<name>/stops/` (the signed stop statements), created 0700 if missing and checked like the others. */
export function ensureStopsDir(sessionDir: string): string {
  const dir = join(sessionDir, STOPS_DIR);
  ensureChildDir(dir, "stop statements directory");
  return dir;
}

function ensureChildDir(dir: string, what: string): void {
  try {
    mkdirSync(dir, { mode: DIR_MODE });
  } catch (e) {
    if (errnoCode(e) !== "EEXIST") throw new StateError("unsafe_state_dir", `cannot create ${what} ${dir}: ${errorMessage(e)}`, { cause: e });
  }
  checkPrivateDir(dir, what);
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return null;
    throw new StateError("unsafe_state_dir", `cannot inspect ${path}: ${errorMessage(e)}`, { cause: e });
  }
}

/** lstat-based: a symlink is refused rather than followed. Also state-dir-check.ts's (serve --check-config). */
export function checkPrivateDir(dir: string, what: string): void {
  const st = lstatOrNull(dir);
  const refuse = (why: string, hint?: string) =>
    new StateError("unsafe_state_dir", `refusing ${what} ${dir}: ${why}`, hint === undefined ? {} : { hint });
  if (st === null) throw refuse("it disappeared while being set up");
  if (st.isSymbolicLink()) throw refuse("it is a symbolic link", "point --state-dir at the real directory");
  if (!st.isDirectory()) throw refuse("it is not a directory");
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw refuse(`it is owned by uid ${st.uid}, not by the current user (uid ${uid})`);
  const mode = st.mode & 0o777;
  if ((mode & 0o022) !== 0) {
    throw refuse(`it is group- or world-writable (mode ${mode.toString(8).padStart(4, "0")})`, `chmod 700 ${dir}`);
  }
}
