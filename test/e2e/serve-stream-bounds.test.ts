// What a daemon client sees at the edges of the frame stream, against the compiled binary
// (serve.md §4; issue 11 items 6–8): a client that falls too far behind is disconnected for real,
// `?since=` past the last frame is refused, and a model answer over the cap fails its run with every
// frame a client saw also on record. Every wait is bounded; no timing is asserted.
import { describe, expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import {
  type Daemon,
  type Frame,
  type ServeEnv,
  SseReader,
  command,
  conversationOf,
  framesUrl,
  isRunEnd,
  serveEnvironment,
  startDaemon,
  stopDaemon,
} from "../helpers/serve.ts";
import { SmallWindowSocket } from "../helpers/small-window-socket.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

/** A raw HTTP/1.1 client of the frames stream with a 4 KB receive buffer, reading only when told to. */
async function stalledClient(base: string, session: string): Promise<SmallWindowSocket> {
  const url = new URL(framesUrl(base, session));
  const socket = SmallWindowSocket.open(Number(url.port), 4096, `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
  cleanups.add(() => socket.close());
  await waitFor(() => (socket.readAvailable(), socket.bytes > 0), { timeoutMs: 10_000, label: "the frames response to start" });
  return socket;
}

/**
 * Stores at least `bytes` of frames in session `name`: 1 MB prompts, each stored and broadcast as a
 * user message frame (get_transcript pages are not: their stored form is a stub). Returns the id of
 * the last prompt's response. Paced by `reader`: the next prompt goes once it has seen the last
 * one's run end. Unpaced, prompts sent while a run was going queued up, and the run that took them
 * sent several 1 MB frames at once: more than the 4 MiB a client may have untaken, however fast it
 * reads, so on a loaded machine the reading client was disconnected too.
 */
async function produceFrames(d: Daemon, env: ServeEnv, name: string, bytes: number, reader: SseReader): Promise<string> {
  const prompts = Math.ceil(bytes / 1_000_000);
  for (let i = 0; i < prompts; i++) {
    expect((await command(d, name, { type: "prompt", id: `big${i}`, message: String.fromCharCode(97 + (i % 26)).repeat(1_000_000) })).status).toBe(200);
    await reader.untilNth(isRunEnd, i + 1);
  }
  await waitFor(async () => (await command(d, name, { type: "get_state", id: "idle?" })).body.data?.state, {
    until: (state) => state === "idle",
    timeoutMs: 20_000,
    label: "the big prompts answered",
  });
  expect(env.model.requests.length).toBeGreaterThan(0);
  return `big${prompts - 1}`;
}

describe("vigil serve --listen: the edges of the frame stream", () => {
  test("a client with a 4 KB receive buffer that falls more than 4 MiB behind is disconnected, even when it reads nothing meanwhile", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-stream-slow", fixture: false });
    const d = await startDaemon(cleanups, env);
    const slow = await stalledClient(d.base, "slow");
    // The kernel doubles the request (a floor applies): the window it advertises stays a few KB.
    expect(slow.receiveBufferBytes).toBeLessThanOrEqual(16 * 1024);
    const healthy = await SseReader.open(cleanups, framesUrl(d.base, "slow"));

    // Far more than the kernel buffers on both sides plus the 4 MiB a client may lag.
    const last = await produceFrames(d, env, "slow", 24 * 1024 * 1024, healthy);
    // The client that reads kept up and is still attached.
    await healthy.until((f) => f.id === last);
    expect(healthy.closed).toBe(false);

    // It gets what was already on its way, then the end of the connection: it knows to reconnect.
    await waitFor(() => (slow.readAvailable(), slow.ended), { timeoutMs: 20_000, label: "the slow client's connection to end", show: () => `${slow.bytes} bytes read` });
    expect(slow.ended).toBe(true);
    expect(healthy.closed).toBe(false);
    expect(d.client.stderrText()).toContain("an SSE client fell more than 4194304 bytes behind and was disconnected");
    expect((await stopDaemon(d)).code).toBe(0);
  });

  test("?since= beyond the last frame is refused with 400 invalid_since naming the last seq; since=last gets the next frame", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-stream-since", fixture: false });
    const d = await startDaemon(cleanups, env);
    const first = await command(d, "s", { type: "get_state", id: "g1" });
    const last = first.body.seq;
    expect(last).toBeGreaterThan(0);

    // A client that remembers seq 1000 of a state directory that was wiped since.
    const res = await fetch(framesUrl(d.base, "s", last + 1000), { signal: AbortSignal.timeout(10_000) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string; last_seq: number } };
    expect(body.error).toMatchObject({ code: "invalid_since", last_seq: last });
    expect(body.error.message).toContain(`seq ${last}`);
    expect((await fetch(framesUrl(d.base, "s", last + 1), { signal: AbortSignal.timeout(10_000) })).status).toBe(400);

    // since = the last seq is valid: nothing to replay, and the next frame arrives.
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "s", last));
    const next = await command(d, "s", { type: "get_state", id: "g2" });
    const seen = await sse.until((f) => f.id === "g2");
    expect(seen.map((f) => f.seq)).toEqual([next.body.seq]);
    expect(next.body.seq).toBe(last + 1);
    expect((await stopDaemon(d)).code).toBe(0);
  });

  test("a model answer over the cap fails its run with model_answer_too_large; every frame a client saw is on record after a restart", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-stream-cap" });
    const d = await startDaemon(cleanups, env);
    const live = await SseReader.open(cleanups, framesUrl(d.base, "cap"));
    const HUGE = 9_000_000;
    env.model.script([
      { text: `HUGE-TEXT ${"x".repeat(HUGE)}` },
      { toolCalls: [{ name: `fx__${"n".repeat(HUGE)}`, arguments: {} }] },
      { text: "small answer" },
    ]);

    const runEnds: Frame[] = [];
    for (const [i, message] of ["write a lot", "call a tool", "say something small"].entries()) {
      const p = await command(d, "cap", { type: "prompt", id: `p${i}`, message });
      expect(p.body.success).toBe(true);
      const frames = await live.until((f) => f.type === "run_end" && f.run_id === p.body.data!.run_id);
      runEnds.push(frames.at(-1)!);
    }
    expect(runEnds[0]).toMatchObject({ status: "failed", code: "model_answer_too_large" });
    expect(runEnds[0]!.error).toContain("text has 9000010 characters");
    expect(runEnds[1]).toMatchObject({ status: "failed", code: "model_answer_too_large" });
    expect(runEnds[1]!.error).toContain("name of tool call 1");
    expect(runEnds[2]).toMatchObject({ status: "ok" });
    // The over-cap answers reached no client, no tool and no later model request.
    expect(live.frames.some((f) => f.type === "error")).toBe(false);
    expect(live.frames.filter((f) => f.type === "message" && f.role === "assistant").map((f) => f.text)).toEqual(["small answer"]);
    expect(live.frames.some((f) => f.type === "tool_call")).toBe(false);
    const third = conversationOf(env.model.requests[2]);
    expect(JSON.stringify(third).length).toBeLessThan(10_000);
    live.close();
    expect((await stopDaemon(d)).code).toBe(0);

    // After a restart, the transcript holds exactly what the client saw, and the history agrees.
    const again = await startDaemon(cleanups, env);
    const replay = await SseReader.open(cleanups, framesUrl(again.base, "cap", 0));
    const stored = await replay.until((f) => f.type === "run_end" && f.run_id === runEnds[2]!.run_id);
    expect(stored.map((f) => [f.seq, f.type])).toEqual(live.frames.map((f) => [f.seq, f.type]));
    const p = await command(again, "cap", { type: "prompt", id: "p3", message: "and again" });
    await replay.until((f) => f.type === "run_end" && f.run_id === p.body.data!.run_id);
    expect(conversationOf(env.model.requests[3])).toEqual([...third, ["assistant", "small answer"], ["user", "and again"]]);
    expect((await stopDaemon(again)).code).toBe(0);
  });
});
