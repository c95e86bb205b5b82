/**
 * wrap on a full disk (issue 11 item 11; wrap.md §5, §7, §8), against the compiled binary and real
 * size-limited tmpfs mounts (this needs root; elsewhere the tests say they were skipped):
 *
 * - a decision log whose device fills mid-line reports the real errno once, with the path — not a
 *   made-up `EIO: short write`, and not the code twice (`ENOSPC: ENOSPC: …`);
 * - a session-context record that cannot be written leaves no empty file behind and is not tried
 *   again into EEXIST on our own leftover; the failure is reported once and the stop record says
 *   there is no context record.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, tmpDir } from "../helpers/fixture.ts";
import { EVENT_SOURCE, type WrapSession, completeLines, readJson, startWrap } from "../helpers/wrap.ts";

e2eSuite();

const POLICY = { version: 1, tools: { allow: ["*"] } };
const PAGE = 4096;

/** A tmpfs of `pages` pages with `freePages` left free (a filler file takes the rest); null when mounting is not allowed here. */
function smallFilesystem(scratch: TmpDir, name: string, pages: number, freePages: number): string | null {
  const mount = scratch.file(name);
  mkdirSync(mount);
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${pages * PAGE}`, "tmpfs", mount], { stderr: "pipe" });
  if (r.exitCode !== 0) {
    console.warn(`SKIPPED: cannot mount a size-limited tmpfs here (${r.stderr.toString().trim()}); needs root`);
    return null;
  }
  if (pages > freePages) writeFileSync(`${mount}/filler`, Buffer.alloc((pages - freePages) * PAGE, 0x61));
  return mount;
}

/** Allowed calls until one is refused for lack of evidence (bounded); returns how many were forwarded. */
async function callUntilRefused(s: WrapSession, maxCalls: number): Promise<number> {
  for (let i = 0; i < maxCalls; i++) {
    const response = await s.call("echo", { text: `call ${i} ${"p".repeat(60)}` });
    if ((response.result as any)?.isError) {
      expect((response.result as any).structuredContent.vigil).toMatchObject({ decision: "deny", error_code: "E_EVIDENCE_UNAVAILABLE" });
      return i;
    }
  }
  throw new Error(`no call was refused within ${maxCalls} calls`);
}

const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

/** The full-disk error text: the real errno and its description, nothing invented, nothing doubled. */
function expectCleanEnospc(stderr: string, path: string): void {
  expect(stderr).not.toContain("short write");
  expect(stderr).not.toContain("EIO");
  expect(stderr).not.toContain("ENOSPC: ENOSPC");
  expect(stderr).not.toContain("EEXIST");
  expect(occurrences(stderr, `ENOSPC: no space left on device (${path})`)).toBe(1);
}

describe("wrap on a full disk", () => {
  const mounts: string[] = [];
  let scratch: TmpDir;
  beforeAll(() => {
    scratch = tmpDir("vigil-e2e-full-disk");
  });
  afterAll(() => {
    for (const m of mounts) Bun.spawnSync(["umount", m]);
    scratch.cleanup();
  });
  const mount = (name: string, pages: number, freePages: number) => {
    const m = smallFilesystem(scratch, name, pages, freePages);
    if (m !== null) mounts.push(m);
    return m;
  };

  test("a decision log that fills mid-line reports ENOSPC once, with its path; the stop record accounts for the complete lines", async () => {
    const fs = mount("partial", 2, 1);
    if (fs === null) return;
    const tmp = tmpDir("vigil-e2e");
    const log = `${fs}/decisions.ndjson`;
    const stopFile = tmp.file("stop.json");
    const s = startWrap(
      { capture: false, policy: POLICY, flags: ["--decision-log", log, "--decision-log-new", "--session-stop-out", stopFile, "--event-source", EVENT_SOURCE] },
      tmp,
    );
    await s.initialize();
    const forwarded = await callUntilRefused(s, 200);
    // The line that crossed the end of the device was written in part: a short write, then ENOSPC.
    expect(forwarded).toBeGreaterThan(0);
    expect((await s.finish()).code).toBe(3);
    const bytes = readFileSync(log);
    const { count, tail } = completeLines(bytes);
    expect(tail.length).toBeGreaterThan(0);
    expect(readJson(stopFile).data).toMatchObject({ decision_log: "incomplete", decision_events_written: count });
    expectCleanEnospc(s.client.stderrText(), log);
  });

  test("a session context that cannot be written leaves no file of ours, is reported once (no EEXIST), and the stop record says there is none", async () => {
    const fs = mount("full", 1, 0);
    if (fs === null) return;
    const tmp = tmpDir("vigil-e2e");
    const contextFile = `${fs}/context.json`;
    const stopFile = tmp.file("stop.json");
    const s = startWrap(
      { capture: false, flags: ["--allow-all", "--event-source", EVENT_SOURCE, "--session-context-out", contextFile, "--session-stop-out", stopFile] },
      tmp,
    );
    await s.initialize();
    await s.request("ping"); // the context record was attempted before this response was relayed
    const refused = await s.call("echo", { text: "x" });
    expect((refused.result as any).structuredContent.vigil).toMatchObject({ decision: "deny", error_code: "E_EVIDENCE_UNAVAILABLE" });
    expect((await s.finish()).code).toBe(3);
    // Nothing of ours is left on the full device: the empty file the failed attempt created is gone.
    expect(existsSync(contextFile)).toBe(false);
    expect(readJson(stopFile).data.session_context_id).toBeNull();
    expectCleanEnospc(s.client.stderrText(), contextFile);
  });
});
