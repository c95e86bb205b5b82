// Sessions opened by unit tests, in one temporary state directory per test: closed and removed
// after each test (registers its own afterEach).
import { afterEach } from "bun:test";
import type { Session } from "../../src/serve/session/session.ts";
import { ensureSessionDir } from "../../src/serve/state/paths.ts";
import { type TmpDir, tmpDir } from "./fixture.ts";

export interface UnitSessions {
  /** The directory of session `name` (created), below this test's temporary state directory. */
  dir(name?: string): string;
  /** Keeps `session` to be closed after the test; returns it. */
  track<S extends Session>(session: S): S;
}

export function unitSessions(prefix: string): UnitSessions {
  let tmp: TmpDir | undefined;
  const opened: Session[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => {});
    tmp?.cleanup();
    tmp = undefined;
  });
  return {
    dir(name = "s1") {
      tmp ??= tmpDir(prefix);
      return ensureSessionDir(tmp.path, name);
    },
    track(session) {
      opened.push(session);
      return session;
    },
  };
}
