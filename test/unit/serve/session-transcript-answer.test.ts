/**
 * A get_transcript answer is not copied into the transcript (transcript-answer.ts): the asker gets
 * the whole page, numbered like what is stored and broadcast — a stub saying which frames it held.
 * Real files, a scripted runner.
 */
import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { messageFrame, runEndFrame, runStartFrame } from "../../../src/serve/protocol/frames.ts";
import { Session } from "../../../src/serve/session/session.ts";
import type { Runner } from "../../../src/serve/session/types.ts";
import type { TranscriptRecord } from "../../../src/serve/state/transcript.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

const sessions = unitSessions("vigil-unit-transcript-answer");
const BIG = "z".repeat(64 * 1024);

async function sessionWithHistory() {
  const runner: Runner = async (req, emit) => {
    emit(runStartFrame(req.runId, req.trigger));
    emit(messageFrame("assistant", BIG));
    emit(runEndFrame(req.runId, "ok"));
    return { status: "ok", appended: [{ role: "assistant", text: BIG }], steersSeen: 0 };
  };
  const dir = sessions.dir();
  const s = sessions.track(await Session.open({ name: "s1", dir, runner }));
  const seen: { record: TranscriptRecord; json: string; answerJson?: string }[] = [];
  s.subscribe((record, json, answerJson) => seen.push({ record, json, ...(answerJson === undefined ? {} : { answerJson }) }));
  await s.handle({ type: "prompt", id: "p1", message: "hello" });
  await waitFor(() => seen.some((f) => f.record.type === "run_end"), { timeoutMs: 3000, label: "the run's run_end", intervalMs: 5 });
  return { s, seen, transcriptBytes: () => statSync(join(dir, "transcript.jsonl")).size };
}

describe("get_transcript answers", () => {
  test("the asker gets every frame; the transcript and other streams get a stub of constant size", async () => {
    const { s, seen, transcriptBytes } = await sessionWithHistory();
    const before = transcriptBytes();
    const lastBefore = s.lastSeq;
    const answers = [];
    for (let i = 0; i < 10; i++) answers.push(await s.handle({ type: "get_transcript", id: `t${i}`, since: 0 }));
    // Ten pages of a history holding a 64 KiB message: the transcript grew by ten small stubs only.
    expect(transcriptBytes() - before).toBeLessThan(10 * 512);

    const first = answers[0] as unknown as TranscriptRecord & { data: { frames: TranscriptRecord[]; more: boolean } };
    expect(first.success).toBe(true);
    expect(first.data.frames.map((f) => f.seq)).toEqual(Array.from({ length: lastBefore }, (_, i) => i + 1));
    expect(first.data.frames.some((f) => f.type === "message" && f.text === BIG)).toBe(true);
    expect(first.seq).toBe(lastBefore + 1);

    const stored = (await s.replay(lastBefore, { limit: 1 })).records[0]!;
    expect(stored).toEqual({
      seq: lastBefore + 1, time: first.time, type: "response", id: "t0", command: "get_transcript", success: true,
      data: { stored: "stub", count: lastBefore, first_seq: 1, last_seq: lastBefore, more: false },
    });
    // A stream gets the stub; the asker's line (stdio mode writes it) is the whole answer, same seq.
    const broadcast = seen.find((f) => f.record.seq === lastBefore + 1)!;
    expect(broadcast.record).toEqual(stored);
    expect(JSON.parse(broadcast.json)).toEqual(stored);
    expect(JSON.parse(broadcast.answerJson!)).toEqual(first);
    // Later pages show the earlier answers as stubs, never their frames again.
    const later = answers[9] as unknown as { data: { frames: TranscriptRecord[] } };
    const stubs = later.data.frames.filter((f) => f.type === "response" && f.command === "get_transcript");
    expect(stubs.length).toBe(9);
    for (const stub of stubs) expect((stub.data as { stored?: string }).stored).toBe("stub");
  });

  test("an empty page and a bounded one describe themselves; other responses are stored whole", async () => {
    const { s } = await sessionWithHistory();
    const last = s.lastSeq;
    await s.handle({ type: "get_transcript", id: "empty", since: last });
    await s.handle({ type: "get_transcript", id: "two", since: 0, limit: 2 });
    await s.handle({ type: "get_state", id: "st" });
    const tail = (await s.replay(last)).records;
    expect(tail.map((r) => r.data)).toEqual([
      { stored: "stub", count: 0, first_seq: null, last_seq: null, more: false },
      { stored: "stub", count: 2, first_seq: 1, last_seq: 2, more: true },
      expect.objectContaining({ name: "s1", state: "idle" }),
    ]);
  });
});
