/** Shared set-up for the transcript test files: temp dirs, opened transcripts closed after each test. */
import { afterEach, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { StateError } from "../../src/shared/durable/state-error.ts";
import { TRANSCRIPT_FILE } from "../../src/serve/state/paths.ts";
import { Transcript, type TranscriptOptions } from "../../src/serve/state/transcript.ts";
import { type TmpDir, tmpDir } from "./fixture.ts";

/** Registers the afterEach clean-up in the calling test file and returns its helpers. */
export function transcriptHarness(prefix: string) {
  let tmp: TmpDir | undefined;
  const open: Transcript[] = [];
  afterEach(async () => {
    for (const t of open.splice(0)) await t.close().catch(() => {});
    tmp?.cleanup();
  });
  return {
    setup(): TmpDir {
      tmp = tmpDir(prefix);
      return tmp;
    },
    async openT(dir: string, options: TranscriptOptions = {}): Promise<Transcript> {
      const t = await Transcript.open(dir, options);
      open.push(t);
      return t;
    },
  };
}

export const fileOf = (dir: string) => join(dir, TRANSCRIPT_FILE);
export const linesOf = (dir: string) => readFileSync(fileOf(dir), "utf8").split("\n");
export const msg = (i: number) => ({ type: "message", role: "user", text: `m${i}` });

export async function rejection(p: Promise<unknown>): Promise<StateError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(StateError);
    return e as StateError;
  }
  throw new Error("expected a rejection");
}

export function thrown(fn: () => unknown): StateError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StateError);
    return e as StateError;
  }
  throw new Error("expected a throw");
}
