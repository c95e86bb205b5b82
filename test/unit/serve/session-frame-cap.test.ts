/**
 * A frame the transcript refuses is never broadcast (issue 11 item 8): a run fails with
 * `frame_not_stored`, an over-cap response is replaced by a stored `response_too_large`, and every
 * frame a subscriber got is in the transcript. Real files, a scripted runner.
 */
import { describe, expect, test } from "bun:test";
import { messageFrame, runEndFrame, runStartFrame } from "../../../src/serve/protocol/frames.ts";
import { Session } from "../../../src/serve/session/session.ts";
import type { Runner } from "../../../src/serve/session/types.ts";
import { TRANSCRIPT_DEFAULTS, type TranscriptRecord } from "../../../src/serve/state/transcript.ts";
import { unitSessions } from "../../helpers/unit-sessions.ts";
import { waitFor } from "../../helpers/wait.ts";

const sessions = unitSessions("vigil-unit-frame-cap");

/** Each run answers with the next text of `answers` (then "ok"). */
async function openSession(answers: string[]) {
  const runner: Runner = async (req, emit) => {
    emit(runStartFrame(req.runId, req.trigger));
    const text = answers.shift() ?? "ok";
    emit(messageFrame("assistant", text));
    emit(runEndFrame(req.runId, "ok"));
    return { status: "ok", appended: [{ role: "assistant", text }], steersSeen: 0 };
  };
  const s = sessions.track(await Session.open({ name: "s1", dir: sessions.dir(), runner }));
  const seen: TranscriptRecord[] = [];
  s.subscribe((f) => seen.push(f));
  return { s, seen };
}

const runEnds = (frames: TranscriptRecord[]) => frames.filter((f) => f.type === "run_end");
const ended = (seen: TranscriptRecord[], n: number) =>
  waitFor(() => runEnds(seen).length >= n, { timeoutMs: 3000, label: `${n} run_end frames`, intervalMs: 5 });

describe("frames over the record cap", () => {
  test("a run frame the transcript refuses fails the run with frame_not_stored and reaches no subscriber", async () => {
    const { s, seen } = await openSession(["x".repeat(TRANSCRIPT_DEFAULTS.maxRecordBytes)]);
    await s.handle({ type: "prompt", id: "p1", message: "hello" });
    await ended(seen, 1);
    expect(runEnds(seen)[0]).toMatchObject({ status: "failed", code: "frame_not_stored" });
    expect(runEnds(seen)[0]!.error).toContain("a message frame of the run could not be stored");
    expect(seen.some((f) => f.type === "error" || (f.type === "message" && f.role === "assistant"))).toBe(false);
    // The session serves on, and what subscribers got is exactly what is stored.
    await s.handle({ type: "prompt", id: "p2", message: "again" });
    await ended(seen, 2);
    expect(runEnds(seen)[1]).toMatchObject({ status: "ok" });
    expect((await s.replay(0)).records).toEqual(seen);
    expect(s.history.map((m) => m.text)).not.toContain("x".repeat(16));
  });

  test("a response over the record cap is answered with a stored response_too_large", async () => {
    const { s, seen } = await openSession(["y".repeat(TRANSCRIPT_DEFAULTS.maxRecordBytes - 200)]);
    await s.handle({ type: "prompt", id: "p1", message: "hello" });
    await ended(seen, 1);
    expect(runEnds(seen)[0]).toMatchObject({ status: "ok" });
    // A page starts with its first record whatever its size: here the big one.
    const since = seen.find((f) => f.type === "run_start")!.seq;
    const r = await s.handle({ type: "get_transcript", id: "t1", since });
    expect(r).toMatchObject({ type: "response", id: "t1", success: false, error: { code: "response_too_large" } });
    expect((r as { seq?: number }).seq).toBe(seen.at(-1)!.seq);
    expect((await s.replay(seen.at(-2)!.seq)).records).toEqual([seen.at(-1)!]);
  });
});
