// `vigil serve --listen` runs, against the compiled binary (serve.md §4, §5): steer and follow_up
// while a run is busy, abort of a stalled model turn, get_state / get_transcript, the `command`
// model, and the conversation history across a daemon restart. Every wait is bounded; no timing
// is asserted.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { waitUntil } from "../helpers/fixture.ts";
import {
  type Frame,
  SseReader,
  command,
  conversationOf,
  gate,
  framesUrl,
  isRunEnd,
  isRunStart,
  messagesOf,
  serveEnvironment,
  startDaemon,
  stopDaemon,
} from "../helpers/serve.ts";

const cleanups = e2eSuite();

describe("vigil serve runs", () => {
  test("steer while a run is busy reaches the model at its next turn", async () => {
    const env = await serveEnvironment(cleanups);
    const d = await startDaemon(cleanups, env);
    const hold = gate();
    cleanups.add(() => hold.open());
    env.model.script([
      async () => {
        await hold.promise;
        return { toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] };
      },
      { text: "steered answer" },
    ]);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "st"));

    const p1 = await command(d, "st", { type: "prompt", id: "p1", message: "start working" });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ type: "response", id: "p1", success: true });
    const runId = p1.body.data!.run_id as string;
    await env.model.waitForRequests(1, 10_000);

    const p2 = await command(d, "st", { type: "prompt", id: "p2", message: "STEER-TEXT", streaming_behavior: "steer" });
    expect(p2.body).toMatchObject({ type: "response", id: "p2", command: "prompt", success: true, data: { queued: "steer" } });
    hold.open();

    const frames = await sse.until(isRunEnd);
    expect(frames.at(-1)).toMatchObject({ type: "run_end", run_id: runId, status: "ok" });
    expect(frames.filter(isRunStart)).toHaveLength(1);
    expect(frames.find((f) => f.type === "message" && f.role === "user" && f.text === "STEER-TEXT")).toBeDefined();
    expect(frames.at(-2)).toMatchObject({ type: "message", role: "assistant", text: "steered answer" });

    expect(env.model.requests).toHaveLength(2);
    expect(JSON.stringify(messagesOf(env.model.requests[0]))).not.toContain("STEER-TEXT");
    const second = messagesOf(env.model.requests[1]);
    // The steer comes after the tool result of the first turn, as the newest user message.
    expect(second.at(-1)).toEqual({ role: "user", content: "STEER-TEXT" });
    expect(second.at(-2)).toMatchObject({ role: "tool", content: "hi" });
    expect(sse.problems).toEqual([]);
  });

  test("follow_up while a run is busy runs after it, as its own run", async () => {
    const env = await serveEnvironment(cleanups);
    const d = await startDaemon(cleanups, env);
    env.model.script([{ stall: true, then: { text: "first answer" } }, { text: "second answer" }]);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "fu"));

    const p1 = await command(d, "fu", { type: "prompt", id: "p1", message: "first question" });
    const firstRun = p1.body.data!.run_id as string;
    await env.model.waitForRequests(1, 10_000);
    const p2 = await command(d, "fu", { type: "prompt", id: "p2", message: "FOLLOW-TEXT", streaming_behavior: "follow_up" });
    expect(p2.body).toMatchObject({ success: true, data: { queued: "follow_up", position: 1 } });
    expect(env.model.release()).toBe(1);

    const frames = await sse.untilNth(isRunEnd, 2);
    const starts = frames.filter(isRunStart);
    const ends = frames.filter(isRunEnd);
    expect(starts).toHaveLength(2);
    expect(starts[0]).toMatchObject({ run_id: firstRun, trigger: "prompt" });
    expect(starts[1]).toMatchObject({ trigger: "follow_up" });
    expect(starts[1]!.run_id).not.toBe(firstRun);
    expect(ends.map((f) => [f.run_id, f.status])).toEqual([
      [firstRun, "ok"],
      [starts[1]!.run_id, "ok"],
    ]);
    // The second run starts after the first ended, and announces the follow-up as its prompt.
    expect(frames.indexOf(starts[1]!)).toBeGreaterThan(frames.indexOf(ends[0]!));
    const secondRunFrames = frames.slice(frames.indexOf(starts[1]!));
    expect(secondRunFrames.filter((f) => f.type === "message").map((f) => [f.role, f.text])).toEqual([
      ["user", "FOLLOW-TEXT"],
      ["assistant", "second answer"],
    ]);

    expect(env.model.requests).toHaveLength(2);
    expect(JSON.stringify(messagesOf(env.model.requests[0]))).not.toContain("FOLLOW-TEXT");
    expect(messagesOf(env.model.requests[1]).at(-1)).toEqual({ role: "user", content: "FOLLOW-TEXT" });
  });

  test("abort during a stalled model turn: the response names the run, run_end aborted follows, a later prompt works", async () => {
    const env = await serveEnvironment(cleanups);
    const d = await startDaemon(cleanups, env);
    env.model.script([{ stall: true }, { text: "after abort" }]);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "ab"));

    const p1 = await command(d, "ab", { type: "prompt", id: "p1", message: "wait forever" });
    const runId = p1.body.data!.run_id as string;
    await env.model.waitForRequests(1, 10_000);
    const a1 = await command(d, "ab", { type: "abort", id: "a1" });
    expect(a1.status).toBe(200);
    expect(a1.body).toMatchObject({ type: "response", id: "a1", command: "abort", success: true, data: { aborted: runId } });

    const frames = await sse.until(isRunEnd);
    expect(frames.at(-1)).toMatchObject({ type: "run_end", run_id: runId, status: "aborted" });
    // The model request itself was cancelled, not left hanging.
    expect(await waitUntil(() => env.model.requests[0]!.outcome === "aborted", 10_000)).toBe(true);

    const idle = await command(d, "ab", { type: "get_state", id: "g1" });
    expect(idle.body.data).toMatchObject({ state: "idle" });
    const again = await command(d, "ab", { type: "abort", id: "a2" });
    expect(again.body).toMatchObject({ success: true, data: { aborted: null } });

    const p2 = await command(d, "ab", { type: "prompt", id: "p2", message: "try again" });
    expect(p2.body).toMatchObject({ success: true, data: { run_id: expect.any(String) } });
    const run2 = p2.body.data!.run_id as string;
    expect(run2).not.toBe(runId);
    const after = await sse.untilNth(isRunEnd, 2);
    expect(after.at(-1)).toMatchObject({ type: "run_end", run_id: run2, status: "ok" });
    expect(after.at(-2)).toMatchObject({ type: "message", role: "assistant", text: "after abort" });
  });

  test("get_state while running and idle; get_transcript {since} returns the frames after since", async () => {
    const env = await serveEnvironment(cleanups);
    const d = await startDaemon(cleanups, env);
    env.model.script([{ stall: true, then: { text: "finally" } }]);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "gs"));

    const fresh = await command(d, "gs", { type: "get_state", id: "g0" });
    expect(fresh.body).toMatchObject({ success: true, data: { name: "gs", state: "idle", queued: { follow_up: 0, steer: 0 } } });
    expect(fresh.body.data!.run_id).toBeUndefined();

    const p1 = await command(d, "gs", { type: "prompt", id: "p1", message: "slow one" });
    const runId = p1.body.data!.run_id as string;
    await env.model.waitForRequests(1, 10_000);
    await command(d, "gs", { type: "prompt", id: "p2", message: "later", streaming_behavior: "follow_up" });
    const running = await command(d, "gs", { type: "get_state", id: "g1" });
    expect(running.body).toMatchObject({
      type: "response",
      command: "get_state",
      success: true,
      data: { name: "gs", state: "running", run_id: runId, queued: { follow_up: 1, steer: 0 } },
    });

    expect(env.model.release()).toBe(1);
    const frames = await sse.untilNth(isRunEnd, 2);
    const idle = await command(d, "gs", { type: "get_state", id: "g2" });
    expect(idle.body).toMatchObject({ success: true, data: { state: "idle", queued: { follow_up: 0, steer: 0 } } });
    expect(idle.body.data!.run_id).toBeUndefined();
    // last_seq is the last frame stored before the response.
    expect(idle.body.data!.last_seq).toBe(frames.at(-1)!.seq);
    expect(idle.body.seq).toBe(frames.at(-1)!.seq + 1);

    const since = frames.find(isRunStart)!.seq;
    const t = await command(d, "gs", { type: "get_transcript", id: "t1", since });
    expect(t.body).toMatchObject({ success: true, data: { more: false } });
    const got = t.body.data!.frames as Frame[];
    const expected = [...frames.filter((f) => f.seq > since), sse.frames.find((f) => f.id === "g2")!];
    expect(got.map((f) => [f.seq, f.type])).toEqual(expected.map((f) => [f.seq, f.type]));
    expect(got).toEqual(expected);
    expect(got.every((f) => f.seq > since)).toBe(true);

    const all = await command(d, "gs", { type: "get_transcript", id: "t2" });
    expect((all.body.data!.frames as Frame[])[0]).toMatchObject({ seq: 1, type: "response", id: "g0" });
    const none = await command(d, "gs", { type: "get_transcript", id: "t3", since: all.body.seq });
    expect(none.body.data).toEqual({ frames: [], more: false });
  });

  test("the command model provider answers with its stdout", async () => {
    const env = await serveEnvironment(cleanups, {
      fixture: false,
      model: () => ({ provider: "command", command: ["sh", "-c", "cat >/dev/null; echo from-command"], timeout_ms: 20_000 }),
    });
    const d = await startDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "cmd"));
    const p1 = await command(d, "cmd", { type: "prompt", id: "p1", message: "hello command" });
    expect(p1.body).toMatchObject({ success: true, data: { run_id: expect.any(String) } });
    const frames = await sse.until(isRunEnd);
    expect(frames.map((f) => f.type)).toEqual(["response", "run_start", "message", "message", "run_end"]);
    expect(frames[2]).toMatchObject({ role: "user", text: "hello command" });
    // stdout is recorded verbatim (echo's newline included), as runCommandModel documents.
    expect(frames[3]).toMatchObject({ type: "message", role: "assistant" });
    expect((frames[3]!.text as string).trimEnd()).toBe("from-command");
    expect(frames[4]).toMatchObject({ type: "run_end", run_id: p1.body.data!.run_id, status: "ok" });
    expect(env.model.requests).toHaveLength(0);
  });

  test("after a daemon restart on the same --state-dir, the next model request carries the earlier conversation", async () => {
    const env = await serveEnvironment(cleanups);
    const first = await startDaemon(cleanups, env);
    env.model.script([{ text: "noted, you said REMEMBER-ME" }, { text: "it was REMEMBER-ME" }]);
    const live = await SseReader.open(cleanups, framesUrl(first.base, "hist"));
    expect((await command(first, "hist", { type: "prompt", id: "p1", message: "REMEMBER-ME" })).body.success).toBe(true);
    await live.until(isRunEnd);
    expect((await stopDaemon(first)).code).toBe(0);

    const second = await startDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(second.base, "hist"));
    expect((await command(second, "hist", { type: "prompt", id: "p2", message: "what did I say?" })).body.success).toBe(true);
    const frames = await sse.until(isRunEnd);
    expect(frames.at(-1)).toMatchObject({ status: "ok" });
    expect(env.model.requests).toHaveLength(2);
    expect(conversationOf(env.model.requests[1])).toEqual([
      ["user", "REMEMBER-ME"],
      ["assistant", "noted, you said REMEMBER-ME"],
      ["user", "what did I say?"],
    ]);
  });

  test("within one daemon, the next model request carries each earlier message once (as after a restart)", async () => {
    const env = await serveEnvironment(cleanups);
    const d = await startDaemon(cleanups, env);
    env.model.script([{ text: "first answer" }, { text: "second answer" }]);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "same"));
    await command(d, "same", { type: "prompt", id: "p1", message: "first question" });
    await sse.until(isRunEnd);
    await command(d, "same", { type: "prompt", id: "p2", message: "second question" });
    await sse.untilNth(isRunEnd, 2);
    expect(env.model.requests).toHaveLength(2);
    expect(conversationOf(env.model.requests[1])).toEqual([
      ["user", "first question"],
      ["assistant", "first answer"],
      ["user", "second question"],
    ]);
  });
});
