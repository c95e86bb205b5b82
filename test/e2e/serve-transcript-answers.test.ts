// A get_transcript answer is not copied into the transcript (README "Commands and frames"), against
// the compiled binary in both modes: polling `get_transcript since=0` grows the transcript by a small
// stub per call (not by a page of up to 4 MiB each, which would fill --transcript-retain-bytes and
// make retention delete the real history), while the asker — the HTTP body, the stdio line — still
// gets every frame, numbered like the stored stub.
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { LineClient } from "../helpers/fixture.ts";
import { type Frame, command, serveEnvironment, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const POLLS = 12;
/** A stub is a couple of hundred bytes; a page of this history is over 64 KiB. */
const STUB_BOUND = 512;
const BIG = "q".repeat(64 * 1024);

type Page = Frame & { id: string; success: boolean; data: { frames: Frame[]; more: boolean } };

const transcriptFile = (stateDir: string, session: string) => join(stateDir, "sessions", session, "transcript.jsonl");
/** The complete records on disk (a line still being written is left out). */
const storedRecords = (file: string) => {
  const text = readFileSync(file, "utf8");
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Frame);
};

/** The answer carries the whole history; what the transcript holds for it is a stub naming the range. */
function expectWholeAnswerAndStub(answer: Page, stored: Frame[], lastBefore: number) {
  expect(answer.success).toBe(true);
  expect(answer.data.frames.map((f) => f.seq)).toEqual(Array.from({ length: lastBefore }, (_, i) => i + 1));
  expect(answer.data.frames.some((f) => f.type === "message" && f.text === BIG)).toBe(true);
  const stub = stored.find((f) => f.seq === answer.seq)!;
  expect(stub).toMatchObject({ type: "response", id: answer.id, command: "get_transcript", success: true, time: answer.time });
  expect(stub.data).toEqual({ stored: "stub", count: lastBefore, first_seq: 1, last_seq: lastBefore, more: false });
}

describe("get_transcript answers are not stored again", () => {
  test("daemon: polling since=0 grows the transcript by a small stub per call; the HTTP body has every frame", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-answers", fixture: false, model: () => ({ provider: "command", command: ["cat"], timeout_ms: 10_000 }) });
    const d = await startDaemon(cleanups, env);
    const p = await command(d, "ops", { type: "prompt", id: "p1", message: BIG });
    expect(p.body.success).toBe(true);
    const file = transcriptFile(env.stateDir, "ops");
    await waitFor(() => storedRecords(file).some((f) => f.type === "run_end"), { timeoutMs: E2E_WAIT_MS, label: "the run's run_end stored" });

    const before = statSync(file).size;
    const lastBefore = storedRecords(file).at(-1)!.seq;
    const answers: Page[] = [];
    for (let i = 0; i < POLLS; i++) answers.push((await command(d, "ops", { type: "get_transcript", id: `t${i}`, since: 0, limit: lastBefore })).body as unknown as Page);
    expect(statSync(file).size - before).toBeLessThan(POLLS * STUB_BOUND);
    expectWholeAnswerAndStub(answers[0]!, storedRecords(file), lastBefore);
    expect((await stopDaemon(d)).code).toBe(0);
  });

  test("stdio: the client's line carries every frame; the transcript holds the stub", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-answers", fixture: false, model: () => ({ provider: "command", command: ["cat"], timeout_ms: 10_000 }) });
    const client = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--session", "cli"], { env: vigilEnv() });
    cleanups.add(() => client.dispose());
    const next = async () => JSON.parse((await client.next(20_000))!) as Frame;
    client.send({ type: "prompt", id: "p1", message: BIG });
    for (let f = await next(); f.type !== "run_end"; f = await next()) expect(f.type).not.toBe("error");

    const file = transcriptFile(env.stateDir, "cli");
    const before = statSync(file).size;
    const lastBefore = storedRecords(file).at(-1)!.seq;
    const answers: Page[] = [];
    for (let i = 0; i < POLLS; i++) {
      client.send({ type: "get_transcript", id: `t${i}`, since: 0, limit: lastBefore });
      answers.push((await next()) as Page);
    }
    client.closeStdin();
    expect(await client.next(20_000)).toBeNull();
    expect((await client.exited(20_000)).code).toBe(0);
    expect(answers.map((a) => a.id)).toEqual(Array.from({ length: POLLS }, (_, i) => `t${i}`));
    expect(statSync(file).size - before).toBeLessThan(POLLS * STUB_BOUND);
    expectWholeAnswerAndStub(answers[0]!, storedRecords(file), lastBefore);
    // Each line is numbered like its stub: seqs go on without a gap.
    expect(answers.map((a) => a.seq)).toEqual(Array.from({ length: POLLS }, (_, i) => lastBefore + 1 + i));
  });
});
