// `vigil serve --listen` against the compiled binary: health, commands over POST, frames over SSE
// (two clients, replay across a restart), bad requests, idle reaping, and shutdown on SIGTERM.
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { type MockModel, startMockModel } from "../fixtures/mock-model.ts";
import { requireBinary, VIGIL_BIN } from "../helpers/bin.ts";
import { LineClient, fixtureArgv, procStat, tmpDir, waitForFile, waitUntil } from "../helpers/fixture.ts";
import { groupAlive } from "../../src/shared/process-group.ts";

type Frame = Record<string, unknown> & { type: string; seq: number };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
beforeAll(() => requireBinary());

interface Env {
  configFile: string;
  stateDir: string;
  grandchildFile: string;
  model: MockModel;
}

async function environment(): Promise<Env> {
  const tmp = tmpDir("vigil-serve-daemon");
  cleanups.push(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.push(() => model.close());
  const grandchildFile = tmp.file("grandchild.pid");
  const [command, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: grandchildFile });
  const configFile = tmp.file("vigil.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 20_000 },
      mcp_servers: [{ name: "fx", transport: "stdio", command, args }],
    }),
  );
  cleanups.push(() => killServerGroup(grandchildFile));
  return { configFile, stateDir: tmp.file("state"), grandchildFile, model };
}

function killServerGroup(grandchildFile: string): void {
  if (!existsSync(grandchildFile)) return;
  const pgrp = procStat(Number(readFileSync(grandchildFile, "utf8").trim()))?.pgrp;
  if (pgrp !== undefined && pgrp > 1) {
    try {
      process.kill(-pgrp, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

interface Daemon {
  client: LineClient;
  base: string;
}

async function startDaemon(env: Env, extra: string[] = []): Promise<Daemon> {
  const client = new LineClient(
    [VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0", ...extra],
    { env: { ...process.env, VIGIL_SHUTDOWN_GRACE_MS: "500" } },
  );
  cleanups.push(() => client.dispose());
  await client.waitForStderr("vigil serve listening http://", 20_000);
  const base = /vigil serve listening (http:\/\/\S+)/.exec(client.stderrText())![1]!;
  return { client, base };
}

const post = (d: Daemon, session: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${d.base}/v1/sessions/${session}/commands`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });

/** A minimal SSE reader: frames (`event: frame`) and comments, each wait bounded. */
class SseReader {
  readonly frames: Frame[] = [];
  comments = 0;
  private readonly controller = new AbortController();
  private buffer = "";
  closed = false;

  static async open(url: string): Promise<SseReader> {
    const r = new SseReader();
    const res = await fetch(url, { signal: r.controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    void r.pump(res.body!);
    cleanups.push(() => r.close());
    if (!(await waitUntil(() => r.comments > 0 || r.frames.length > 0, 10_000))) throw new Error("SSE: nothing received");
    return r;
  }

  async until(done: (f: Frame) => boolean, ms = 15_000): Promise<Frame[]> {
    if (!(await waitUntil(() => this.frames.some(done), ms))) {
      throw new Error(`SSE: frame not received; got ${JSON.stringify(this.frames.map((f) => f.type))}`);
    }
    return this.frames.slice(0, this.frames.findIndex(done) + 1);
  }

  close(): void {
    this.controller.abort();
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buffer += decoder.decode(chunk, { stream: true });
        for (let end = this.buffer.indexOf("\n\n"); end !== -1; end = this.buffer.indexOf("\n\n")) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          if (block.startsWith(":")) this.comments++;
          const fields = Object.fromEntries(block.split("\n").filter((l) => !l.startsWith(":")).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]));
          if (fields.event === "frame") {
            const frame = JSON.parse(fields.data!) as Frame;
            expect(Number(fields.id)).toBe(frame.seq);
            this.frames.push(frame);
          }
        }
      }
    } catch {
      // aborted
    } finally {
      this.closed = true;
    }
  }
}

const isRunEnd = (f: Frame) => f.type === "run_end";

describe("vigil serve --listen", () => {
  test("health, a prompt over POST, two SSE clients get every frame, SIGTERM exits 0 and ends the server group", async () => {
    const env = await environment();
    const d = await startDaemon(env);
    const health = await fetch(`${d.base}/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, sessions: 0, version: expect.any(String) });

    const a = await SseReader.open(`${d.base}/v1/sessions/ops/frames`);
    const b = await SseReader.open(`${d.base}/v1/sessions/ops/frames`);
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
    const live = await SseReader.open(`${first.base}/v1/sessions/keep/frames`);
    expect((await post(first, "keep", { type: "prompt", id: "p1", message: "hello" })).status).toBe(200);
    const before = await live.until(isRunEnd);
    process.kill(first.client.pid, "SIGTERM");
    expect((await first.client.exited(15_000)).code).toBe(0);

    const second = await startDaemon(env);
    const replay = await SseReader.open(`${second.base}/v1/sessions/keep/frames?since=0`);
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
    const attached = await SseReader.open(`${d.base}/v1/sessions/watched/frames`);
    expect((await post(d, "idle", { type: "get_state", id: "g" })).status).toBe(200);
    const sessions = async () => ((await (await fetch(`${d.base}/v1/health`)).json()) as { sessions: number }).sessions;
    expect(await sessions()).toBe(2);
    let n = 2;
    const deadline = performance.now() + 15_000;
    while (n !== 1 && performance.now() < deadline) {
      await Bun.sleep(100);
      n = await sessions();
    }
    expect(n).toBe(1);
    expect(d.client.stderrText()).toContain('session "idle" reaped');
    expect(attached.closed).toBe(false);
  });

  test("a malformed --listen or --mcp-events-callback-url without --listen exits 2", async () => {
    const env = await environment();
    for (const argv of [["--listen", "localhost"], ["--listen", "127.0.0.1:99999"], ["--mcp-events-callback-url", "https://agent.example.com"]]) {
      const c = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, ...argv]);
      cleanups.push(() => c.dispose());
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
    cleanups.push(() => c.dispose());
    expect((await c.exited(20_000)).code).toBe(2);
    expect(c.stderrText()).toContain("address in use");
    expect((await fetch(`${first.base}/v1/health`)).status).toBe(200);
  });
});
