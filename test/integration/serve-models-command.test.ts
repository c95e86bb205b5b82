// The command model adapter: real processes in their own groups; no timing assertions.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupAlive, pollUntil } from "../../src/shared/process-group.ts";
import { type CommandModelConfig, runCommandModel } from "../../src/serve/models/command.ts";
import { ModelError } from "../../src/serve/models/types.ts";

const dir = mkdtempSync(join(tmpdir(), "vigil-command-model-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cfg = (command: string[], timeout_ms = 10_000): CommandModelConfig => ({ provider: "command", command, timeout_ms });
const never = new AbortController().signal;

async function failure(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

/** Reads a pid the command wrote; waits (bounded) for the file to be complete. */
async function readPid(file: string): Promise<number> {
  expect(await pollUntil(() => existsSync(file) && readFileSync(file, "utf8").endsWith("\n"), 10_000)).toBe(true);
  return Number(readFileSync(file, "utf8").trim());
}

describe("command model", () => {
  test("stdin gets the prompt, stdout is the answer", async () => {
    const out = await runCommandModel(cfg(["sh", "-c", "cat; echo done"]), "[User]\nhello\n", never);
    expect(out).toEqual({ text: "[User]\nhello\ndone\n" });
  });

  test("env is passed to the command", async () => {
    const out = await runCommandModel(cfg(["sh", "-c", 'printf %s "$MODEL_TEST_VAR"']), "", never, { env: { MODEL_TEST_VAR: "v1", PATH: process.env.PATH } });
    expect(out.text).toBe("v1");
  });

  test("a command that ignores stdin still succeeds", async () => {
    expect((await runCommandModel(cfg(["sh", "-c", "echo hi"]), "x".repeat(1 << 20), never)).text).toBe("hi\n");
  });

  test("non-zero exit is an error with the code and the last stderr line", async () => {
    const e = await failure(runCommandModel(cfg(["sh", "-c", "cat >/dev/null; echo first >&2; echo 'quota exceeded' >&2; exit 3"]), "p", never));
    expect(e).toMatchObject({ kind: "exit", exitCode: 3 });
    expect(e.message).toContain("code 3");
    expect(e.message).toContain("quota exceeded");
  });

  test("a missing program is a spawn error", async () => {
    expect((await failure(runCommandModel(cfg([join(dir, "no-such-program")]), "p", never))).kind).toBe("spawn");
  });

  test("timeout kills the whole group, including a background child", async () => {
    const pidFile = join(dir, "timeout.pid");
    const bgFile = join(dir, "timeout-bg.pid");
    const script = `echo $$ > ${pidFile}; sleep 60 & echo $! > ${bgFile}; sleep 60`;
    const e = await failure(runCommandModel(cfg(["sh", "-c", script], 1500), "p", never));
    expect(e.kind).toBe("timeout");
    const pgid = await readPid(pidFile);
    await readPid(bgFile);
    expect(groupAlive(pgid)).toBe(false);
  });

  test("a background child left after a clean exit is swept", async () => {
    const pidFile = join(dir, "clean.pid");
    const out = await runCommandModel(cfg(["sh", "-c", `echo $$ > ${pidFile}; sleep 60 >/dev/null 2>&1 & echo answer`]), "p", never);
    expect(out.text).toBe("answer\n");
    expect(groupAlive(await readPid(pidFile))).toBe(false);
  });

  test("abort stops the command and its group", async () => {
    const pidFile = join(dir, "abort.pid");
    const ac = new AbortController();
    const run = runCommandModel(cfg(["sh", "-c", `echo $$ > ${pidFile}; sleep 60 & wait`]), "p", ac.signal);
    const pgid = await readPid(pidFile);
    ac.abort();
    expect((await failure(run)).kind).toBe("aborted");
    expect(groupAlive(pgid)).toBe(false);
  });

  test("stdout over the bound is refused", async () => {
    const e = await failure(runCommandModel(cfg(["sh", "-c", "head -c 9000000 /dev/zero"]), "", never));
    expect(e.kind).toBe("protocol");
    expect(e.message).toContain("exceeds");
  });
});
