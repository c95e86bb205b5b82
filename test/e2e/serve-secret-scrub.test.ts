// No secret vigil holds for others reaches a frame, a log line or a state file (serve.md §2; issue
// 11 item 2), against the compiled binary: a header value (through `${VAR}`), a stdio server's env
// value and the model's API key, each echoed back by a server in an error message, an error's
// `data`, a terminated stream, a stream error notice, a failed tool result, a JSON-RPC tool error,
// an HTTP error body, a server's stderr and a model provider's error. Each test looks for the
// secrets in everything vigil wrote — stdout frames, stderr, every file under the state dir — and
// for the placeholder where they were.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { StdioServe, isStatus } from "../helpers/events-serve.ts";
import { secretServeEnvironment } from "../helpers/secret-serve.ts";
import { type Frame, isRunEnd, messagesOf } from "../helpers/serve.ts";

const cleanups = e2eSuite();

const PLACEHOLDER = "<redacted>";
const HEADER_TOKEN = "tok-SECRET-header-5c1e9a77";
const MODEL_KEY = "sk-SECRET-model-key-0b4d2f19";
const STDIO_TOKEN = "env-SECRET-stdio-93ae61d0";
const SECRETS = [HEADER_TOKEN, MODEL_KEY, STDIO_TOKEN];

const setup = (events: Record<string, unknown>[] | undefined) =>
  secretServeEnvironment(cleanups, { prefix: "vigil-scrub-e2e", secrets: { header: HEADER_TOKEN, model: MODEL_KEY, stdio: STDIO_TOKEN }, ...(events === undefined ? {} : { events }) });

/** Ends stdio mode (EOF), so every state file is complete; returns what stderr said. */
async function finish(serve: StdioServe): Promise<string> {
  serve.client.closeStdin();
  const status = await serve.client.exited(20_000);
  expect(status.code).toBe(0);
  return serve.client.stderrText();
}

function stateFiles(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push({ path, text: readFileSync(path, "utf8") });
    }
  };
  walk(dir);
  return out;
}

/** No secret anywhere vigil wrote; the placeholder in the frames and in the transcript. */
function expectScrubbed(serve: StdioServe, stderr: string, stateDir: string, expectedFiles: string[]): void {
  const frames = JSON.stringify(serve.frames);
  const files = stateFiles(stateDir);
  for (const name of expectedFiles) expect(files.map((f) => f.path.split("/").at(-1))).toContain(name);
  for (const secret of SECRETS) {
    expect(frames).not.toContain(secret);
    expect(stderr).not.toContain(secret);
    for (const file of files) expect({ file: file.path, leaks: file.text.includes(secret) }).toEqual({ file: file.path, leaks: false });
  }
  expect(frames).toContain(PLACEHOLDER);
  expect(files.find((f) => f.path.endsWith("transcript.jsonl"))!.text).toContain(PLACEHOLDER);
}

const errorText = (f: Frame) => JSON.stringify(f);

describe("vigil serve scrubs secrets echoed by servers and models", () => {
  test("push: a terminated stream's message and data, and a stream error notice", async () => {
    const { env, fixture } = await setup([{ name: "ticket.updated", delivery: "push" }]);
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));

    await fixture.control("stream_error", { message: `upstream rejected ${HEADER_TOKEN}`, reason: `token ${HEADER_TOKEN} expired` });
    const notice = await serve.until((f) => isStatus("error")(f) && errorText(f).includes("upstream rejected"));
    expect(notice.error).toContain(`upstream rejected ${PLACEHOLDER}`);

    await fixture.control("terminate", { message: `token ${HEADER_TOKEN} revoked`, reason: `token ${HEADER_TOKEN} revoked` });
    const terminated = await serve.until(isStatus("terminated"));
    expect(terminated.error).toMatchObject({ message: `token ${PLACEHOLDER} revoked`, data: { reason: `token ${PLACEHOLDER} revoked` } });
    // The configured subscription comes back after the termination: the notice was handled in full.
    await serve.until(isStatus("resubscribed"));

    expectScrubbed(serve, await finish(serve), env.stateDir, ["transcript.jsonl", "mcp-events.json"]);
  });

  test("poll: an error's message and data.reason, in status frames and logs", async () => {
    const { env, fixture } = await setup([{ name: "build.finished" }]);
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));

    await fixture.control("events_down", { down: true, message: `gateway saw ${HEADER_TOKEN}`, reason: `token ${HEADER_TOKEN} revoked` });
    const failed = await serve.until((f) => isStatus("error")(f) && errorText(f).includes("gateway saw"));
    expect(failed.error).toContain(`gateway saw ${PLACEHOLDER}`);
    expect(failed.error).toContain(`(reason: token ${PLACEHOLDER} revoked)`);
    await fixture.control("events_down", { down: false });

    expectScrubbed(serve, await finish(serve), env.stateDir, ["transcript.jsonl", "mcp-events.json"]);
  });

  test("runs: failed tool results, tool errors, an HTTP error body, a server's stderr and a model error", async () => {
    const { env, model } = await setup(undefined);
    // The servers answer with what they hold: the request's Authorization header, their environment.
    const echo = (server: string, from: Record<string, string>, fail?: string) => ({ name: `${server}__echo`, arguments: { ...from, ...(fail ? { fail } : {}) } });
    model.script([
      {
        toolCalls: [
          echo("tickets", { header: "authorization" }, "result"),
          echo("tickets", { env: "ECHO_MODEL_KEY" }, "error"),
          echo("tickets", { header: "authorization" }, "http"),
          echo("local", { env: "LOCAL_TOKEN" }, "stderr"),
          echo("local", { env: "LOCAL_TOKEN" }),
        ],
      },
      { status: 401, body: { error: { message: `Incorrect API key provided: ${MODEL_KEY}`, type: "invalid_request_error" } } },
    ]);
    const serve = StdioServe.start(cleanups, env);
    const response = await serve.command({ type: "prompt", id: "p1", message: "use the tools" });
    expect(response.success).toBe(true);
    const end = await serve.until(isRunEnd, 25_000);
    expect(end).toMatchObject({ status: "failed" });

    // What the model was given back for each call (the transcript keeps the same messages).
    const second = model.requests.filter((r) => r.path.endsWith("/chat/completions"))[1];
    const toolTexts = messagesOf(second).filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(toolTexts).toHaveLength(5);
    expect(toolTexts[0]).toBe(`echo failed: ${PLACEHOLDER}`);
    expect(toolTexts[1]).toContain(`echo failed: ${PLACEHOLDER}`);
    expect(toolTexts[2]).toContain(`upstream rejected: ${PLACEHOLDER}`);
    expect(toolTexts[3]).toBe(`echo failed: ${PLACEHOLDER}`);
    expect(toolTexts[4]).toBe(PLACEHOLDER);
    for (const secret of SECRETS) expect(JSON.stringify(second?.body)).not.toContain(secret);
    expect(end.error).toContain(`Incorrect API key provided: ${PLACEHOLDER}`);

    const stderr = await finish(serve);
    // The stdio server's stderr line is forwarded, scrubbed.
    expect(stderr).toContain(`[local] echo failed: ${PLACEHOLDER}`);
    expectScrubbed(serve, stderr, env.stateDir, ["transcript.jsonl"]);
  });
});
