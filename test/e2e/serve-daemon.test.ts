// `vigil serve --listen` against the compiled binary: health, commands over POST, frames over SSE
// (two clients, replay across a restart), bad requests, idle reaping, and shutdown on SIGTERM.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN } from "../helpers/bin.ts";
import { LineClient, procStat, waitForFile, waitUntil } from "../helpers/fixture.ts";
import {
  type Daemon,
  type Frame,
  type ServeEnv,
  SseReader,
  isRunEnd,
  post,
  serveEnvironment,
  startDaemon as startDaemonFor,
} from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { groupAlive } from "../../src/shared/process-group.ts";

const cleanups = e2eSuite();

const environment = () => serveEnvironment(cleanups, { prefix: "vigil-serve-daemon" });
const startDaemon = (env: ServeEnv, extra: string[] = []): Promise<Daemon> => startDaemonFor(cleanups, env, extra);
const readers: SseReader[] = [];
afterEach(() => {
  // Every frame of every stream had an `id:` equal to its seq.
  for (const r of readers.splice(0)) expect(r.problems).toEqual([]);
});
async function openSse(url: string): Promise<SseReader> {
  const r = await SseReader.open(cleanups, url);
  readers.push(r);
  return r;
}

describe("vigil serve --listen", () => {
  test("health, a prompt over POST, two SSE clients get every frame, SIGTERM exits 0 and ends the server group", async () => {
    const env = await environment();
    const d = await startDaemon(env);
    const health = await fetch(`${d.base}/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, sessions: 0, version: expect.any(String) });

    const a = await openSse(`${d.base}/v1/sessions/ops/frames`);
    const b = await openSse(`${d.base}/v1/sessions/ops/frames`);
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "hi" } }] }, { text: "done" }]);
    const res = await post(d, "ops", { type: "prompt", id: "p1", message: "hello" });
    expect(res.status).toBe(200);
    const response = (await res.json()) as Frame;
    const responseSeq = response.seq;
    expect(typeof responseSeq).toBe("number");
    expect(response).toMatchObject({ type: "response", id: "p1", command: "prompt", success: true });

    const fa = await a.until(isRunEnd);
    const fb = await b.until(isRunEnd);
    expect(fa.map((f) => f.type)).toEqual(["response", "run_start", "message", "tool_call", "tool_result", "message", "run_end"]);
    expect(fb).toEqual(fa);
    expect(fa[0]!.seq).toBe(responseSeq);
    expect(fa.at(-2)).toMatchObject({ type: "message", role: "assistant", text: "done" });
    expect(fa.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
    const second = (env.model.requests[1]!.body as { messages: Record<string, unknown>[] }).messages;
    expect(second.at(-1)).toMatchObject({ role: "tool", content: "hi" });
    expect(await (await fetch(`${d.base}/v1/health`)).json()).toMatchObject({ sessions: 1 });

    const pgrp = procStat(Number((await waitForFile(env.grandchildFile, 10_000)).trim()))!.pgrp;
    process.kill(d.client.pid, "SIGTERM");
    expect(await d.client.exited(15_000)).toEqual({ code: 0, signal: null });
    expect(await waitUntil(() => !groupAlive(pgrp), 5000)).toBe(true);
    expect(await waitUntil(() => a.closed && b.closed, 5000)).toBe(true);
  });

  test("a restart on the same --state-dir replays earlier frames with ?since=0", async () => {
    const env = await environment();
    const first = await startDaemon(env);
    env.model.script([{ text: "remember me" }]);
    const live = await openSse(`${first.base}/v1/sessions/keep/frames`);
    expect((await post(first, "keep", { type: "prompt", id: "p1", message: "hello" })).status).toBe(200);
    const before = await live.until(isRunEnd);
    process.kill(first.client.pid, "SIGTERM");
    expect((await first.client.exited(15_000)).code).toBe(0);

    const second = await startDaemon(env);
    const replay = await openSse(`${second.base}/v1/sessions/keep/frames?since=0`);
    const replayed = await replay.until(isRunEnd);
    expect(replayed.map((f) => [f.seq, f.type])).toEqual(before.map((f) => [f.seq, f.type]));
    expect(replayed.filter((f) => f.type === "message").map((f) => [f.role, f.text])).toEqual([
      ["user", "hello"],
      ["assistant", "remember me"],
    ]);

    // Live frames follow the replay without a gap or a duplicate.
    const res = (await (await post(second, "keep", { type: "get_state", id: "g1" })).json()) as Frame;
    const after = await replay.until((f) => f.id === "g1");
    expect(after.at(-1)!.seq).toBe(res.seq);
    expect(after.at(-1)!.seq).toBe(before.at(-1)!.seq + 1);
  });

  test("bad requests get clear JSON errors", async () => {
    const env = await environment();
    const d = await startDaemon(env);
    const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

    let res = await fetch(`${d.base}/v1/nowhere`);
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe("not_found");

    res = await post(d, "s1", "{not json");
    expect(res.status).toBe(400);
    expect(await res.clone().json()).toMatchObject({ type: "response", success: false });
    expect((await errorOf(res)).code).toBe("invalid_json");

    res = await post(d, "s1", { type: "prompt", id: "x" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe("invalid_command");

    res = await post(d, "s1", JSON.stringify({ type: "prompt", id: "big", message: "x".repeat(1_500_000) }));
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe("too_large");

    res = await post(d, "bad..name", { type: "get_state", id: "g" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe("invalid_session_name");
    res = await fetch(`${d.base}/v1/sessions/%2Fetc/frames`);
    expect(res.status).toBe(400);

    res = await post(d, "s1", { type: "get_state", id: "g" }, { "content-type": "text/plain" });
    expect(res.status).toBe(415);
    expect((await errorOf(res)).code).toBe("unsupported_media_type");

    res = await fetch(`${d.base}/v1/sessions/s1/commands`);
    expect(res.status).toBe(405);

    res = await fetch(`${d.base}/v1/sessions/s1/frames?since=-1`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe("invalid_since");

    // Nothing above started a session, and the daemon still serves.
    expect(await (await fetch(`${d.base}/v1/health`)).json()).toMatchObject({ ok: true, sessions: 0 });
  });

  test("an idle session with no client is reaped; an attached one is kept", async () => {
    const env = await environment();
    const d = await startDaemon(env, ["--session-idle-timeout", "1"]);
    const attached = await openSse(`${d.base}/v1/sessions/watched/frames`);
    expect((await post(d, "idle", { type: "get_state", id: "g" })).status).toBe(200);
    const sessions = async () => ((await (await fetch(`${d.base}/v1/health`)).json()) as { sessions: number }).sessions;
    expect(await sessions()).toBe(2);
    const n = await waitFor(sessions, { until: (count) => count === 1, timeoutMs: 15_000, label: "the idle session reaped (sessions left)" });
    expect(n).toBe(1);
    expect(d.client.stderrText()).toContain('session "idle" reaped');
    expect(attached.closed).toBe(false);
  });

  test("a malformed --listen or --mcp-events-callback-url without --listen exits 2", async () => {
    const env = await environment();
    for (const argv of [["--listen", "localhost"], ["--listen", "127.0.0.1:99999"], ["--mcp-events-callback-url", "https://agent.example.com"]]) {
      const c = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, ...argv]);
      cleanups.add(() => c.dispose());
      expect((await c.exited(15_000)).code).toBe(2);
      expect(c.stderrText()).toMatch(/--listen|--mcp-events-callback-url requires --listen/);
    }
    expect(existsSync(env.grandchildFile)).toBe(false);
  });

  test("a second daemon on an address already in use exits 2 instead of sharing it", async () => {
    const env = await environment();
    const first = await startDaemon(env);
    const port = new URL(first.base).port;
    const c = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", `127.0.0.1:${port}`]);
    cleanups.add(() => c.dispose());
    expect((await c.exited(20_000)).code).toBe(2);
    expect(c.stderrText()).toContain("address in use");
    expect((await fetch(`${first.base}/v1/health`)).status).toBe(200);
  });
});
