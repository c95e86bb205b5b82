/** Where session state lives, and which state directories are refused (serve.md §3). */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { StateError } from "../../../src/shared/durable/state-error.ts";
import {
  DECISIONS_FILE,
  EVENTS_LOG_FILE,
  EVENTS_SNAPSHOT_FILE,
  TRANSCRIPT_FILE,
  ensureSessionDir,
  ensureStateDir,
  isValidSessionName,
  resolveStateDir,
  sessionDir,
  validateSessionName,
} from "../../../src/serve/state/paths.ts";
import { type TmpDir, tmpDir } from "../../helpers/fixture.ts";

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());
const setup = () => (tmp = tmpDir("vigil-unit-state-paths"));
const mode = (p: string) => lstatSync(p).mode & 0o777;

function refusal(fn: () => unknown): StateError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StateError);
    return e as StateError;
  }
  throw new Error("expected a StateError");
}

describe("resolveStateDir", () => {
  test("--state-dir wins and is made absolute", () => {
    expect(resolveStateDir("/srv/vigil", { XDG_STATE_HOME: "/x", HOME: "/h" })).toBe("/srv/vigil");
    expect(resolveStateDir("rel/dir", {})).toBe(resolve("rel/dir"));
  });

  test("then $XDG_STATE_HOME/vigil, then ~/.local/state/vigil; a relative XDG_STATE_HOME is ignored", () => {
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: "/xdg/state", HOME: "/home/u" })).toBe("/xdg/state/vigil");
    expect(resolveStateDir(undefined, { HOME: "/home/u" })).toBe("/home/u/.local/state/vigil");
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: "relative", HOME: "/home/u" })).toBe("/home/u/.local/state/vigil");
    expect(resolveStateDir(undefined, { XDG_STATE_HOME: "", HOME: "/home/u" })).toBe("/home/u/.local/state/vigil");
  });

  test("an empty --state-dir is an error", () => {
    expect(refusal(() => resolveStateDir("", {})).reason).toBe("unsafe_state_dir");
  });
});

describe("session names", () => {
  test("valid names", () => {
    for (const name of ["default", "mcp-events", "a", "A.b_c-9", "0", "x".repeat(64), "a.b"]) {
      expect(isValidSessionName(name)).toBe(true);
      expect(validateSessionName(name)).toBe(name);
    }
  });

  test("invalid names are refused with invalid_session_name", () => {
    const bad = ["", ".", "..", ".hidden", "-x", "_x", "a..b", "a/b", "a\\b", "x".repeat(65), "café", "a b", "a\nb", "a\0b"];
    for (const name of bad) {
      expect(isValidSessionName(name)).toBe(false);
      const e = refusal(() => validateSessionName(name));
      expect(e.reason).toBe("invalid_session_name");
      expect(e.code).toBe("usage");
    }
  });

  test("sessionDir joins under sessions/ and validates", () => {
    expect(sessionDir("/state", "alpha")).toBe("/state/sessions/alpha");
    expect(refusal(() => sessionDir("/state", "../etc")).reason).toBe("invalid_session_name");
  });

  test("the file names of §3", () => {
    expect([TRANSCRIPT_FILE, EVENTS_SNAPSHOT_FILE, EVENTS_LOG_FILE, DECISIONS_FILE]).toEqual([
      "transcript.jsonl",
      "mcp-events.json",
      "mcp-events.log",
      "decisions.ndjson",
    ]);
  });
});

describe("ensureStateDir / ensureSessionDir", () => {
  test("creates missing directories (parents too) with mode 0700", () => {
    const t = setup();
    const state = join(t.path, "deep", "er", "vigil");
    expect(ensureStateDir(state)).toBe(state);
    expect(mode(state)).toBe(0o700);
    expect(mode(join(t.path, "deep"))).toBe(0o700);
    const dir = ensureSessionDir(state, "alpha");
    expect(dir).toBe(join(state, "sessions", "alpha"));
    expect(mode(join(state, "sessions"))).toBe(0o700);
    expect(mode(dir)).toBe(0o700);
    expect(ensureSessionDir(state, "alpha")).toBe(dir); // idempotent
  });

  test("an existing private or read-only-for-others directory is accepted as is", () => {
    const t = setup();
    const state = t.file("state");
    mkdirSync(state, { mode: 0o755 });
    chmodSync(state, 0o755);
    expect(ensureStateDir(state)).toBe(state);
    expect(mode(state)).toBe(0o755);
  });

  test("refuses a state dir that is a symlink, even to a good directory", () => {
    const t = setup();
    mkdirSync(t.file("real"), { mode: 0o700 });
    symlinkSync(t.file("real"), t.file("link"));
    const e = refusal(() => ensureStateDir(t.file("link")));
    expect(e.reason).toBe("unsafe_state_dir");
    expect(e.message).toContain("symbolic link");
    expect(e.message).toContain(t.file("link"));
  });

  test("refuses a group- or world-writable state dir, naming the mode", () => {
    const t = setup();
    for (const [name, m] of [["world", 0o777], ["group", 0o770], ["sticky", 0o1777]] as const) {
      mkdirSync(t.file(name));
      chmodSync(t.file(name), m);
      const e = refusal(() => ensureStateDir(t.file(name)));
      expect(e.reason).toBe("unsafe_state_dir");
      expect(e.message).toContain("writable");
      expect(e.message).toContain((m & 0o777).toString(8));
      expect(e.hint).toContain("chmod 700");
    }
  });

  test("refuses a state dir that is a file", () => {
    const t = setup();
    writeFileSync(t.file("f"), "x");
    expect(refusal(() => ensureStateDir(t.file("f"))).message).toContain("not a directory");
  });

  test("refuses a symlinked or world-writable directory inside the state dir", () => {
    const t = setup();
    const state = ensureStateDir(t.file("state"));
    mkdirSync(join(state, "sessions"), { mode: 0o700 });
    mkdirSync(t.file("elsewhere"), { mode: 0o700 });
    symlinkSync(t.file("elsewhere"), join(state, "sessions", "evil"));
    expect(refusal(() => ensureSessionDir(state, "evil")).message).toContain("symbolic link");
    mkdirSync(join(state, "sessions", "open"));
    chmodSync(join(state, "sessions", "open"), 0o777);
    expect(refusal(() => ensureSessionDir(state, "open")).message).toContain("writable");
    expect(refusal(() => ensureSessionDir(state, "a/../../x")).reason).toBe("invalid_session_name");
  });
});
