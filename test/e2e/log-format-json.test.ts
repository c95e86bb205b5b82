// `vigil serve --log-format json` (issue 15 item 3), against the compiled binary: in an events run
// of the daemon every stderr line is one JSON object with time, level and msg, lines about sessions
// and servers carry `session` / `server`, a stdio server's stderr lines are `server_stderr` records,
// and no configured secret (the model's API key, a `${VAR}` header value, a stdio server's env
// value) appears in any line — while each did reach where it was sent, so the check can fail. A
// refusal in JSON mode is one JSON line with the error's code (exit 2); text mode is unchanged.
import { describe, expect, test } from "bun:test";
import type { MockModel } from "../fixtures/mock-model.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { inBatch, startEventsDaemon, waitRuns } from "../helpers/events-serve.ts";
import { LineClient } from "../helpers/fixture.ts";
import { MODEL_KEY_ENV, secretServeEnvironment } from "../helpers/secret-serve.ts";
import { LISTENING_LINE, messagesOf, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

const PLACEHOLDER = "<redacted>";
const HEADER_TOKEN = "tok-LOGJSON-header-6d2b8e14";
const MODEL_KEY = "sk-LOGJSON-model-key-31c7a9f0";
const STDIO_TOKEN = "env-LOGJSON-stdio-a48e05b7";
const SECRETS = [HEADER_TOKEN, MODEL_KEY, STDIO_TOKEN];
const LEVELS = ["debug", "info", "warn", "error"];

/**
 * The secrets' set-up (secret-serve.ts) with one polled event subscription on `tickets`, and no
 * VIGIL_LOG_FORMAT from the runner's own environment; `config` replaces the whole config.
 */
const setup = (knobs: Record<string, string> = {}, config?: Record<string, unknown>) =>
  secretServeEnvironment(cleanups, {
    prefix: "vigil-logjson-e2e",
    secrets: { header: HEADER_TOKEN, model: MODEL_KEY, stdio: STDIO_TOKEN },
    events: [{ name: "ticket.updated", delivery: "poll" }],
    knobs: { VIGIL_LOG_FORMAT: "", ...knobs },
    ...(config === undefined ? {} : { config }),
  });

type Record_ = Record<string, unknown> & { time: string; level: string; msg: string };

/** Every stderr line parsed; a line that is not a JSON object with time, level and msg fails the test, named. */
function jsonLines(stderr: string): Record_[] {
  expect(stderr.endsWith("\n")).toBe(true);
  return stderr.slice(0, -1).split("\n").map((line) => {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      throw new Error(`stderr line is not JSON: ${line}`);
    }
    expect({ line, shape: shapeOf(record) }).toEqual({ line, shape: "ok" });
    return record as Record_;
  });
}

function shapeOf(record: unknown): string {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return "not an object";
  const r = record as Record<string, unknown>;
  if (typeof r.time !== "string" || new Date(r.time).toISOString() !== r.time) return "time";
  if (typeof r.level !== "string" || !LEVELS.includes(r.level)) return "level";
  if (typeof r.msg !== "string") return "msg";
  for (const key of ["session", "server", "event", "code", "hint"]) if (key in r && typeof r[key] !== "string") return key;
  return "ok";
}

const chatRequests = (model: MockModel) => model.requests.filter((r) => r.path.endsWith("/chat/completions"));

describe("vigil serve --log-format json", () => {
  test("an events run in daemon mode: every stderr line is JSON, sessions and servers are fields, no secret in any line", async () => {
    const { env, fixture, model } = await setup({ VIGIL_LOG_LEVEL: "debug" });
    // The event's run: a model error first (a retry line), then two tool calls whose answers hold
    // the header secret and the stdio secret (the stdio one also written to the server's stderr).
    model.script([
      { status: 500 },
      {
        toolCalls: [
          { name: "tickets__echo", arguments: { header: "authorization" } },
          { name: "local__echo", arguments: { env: "LOCAL_TOKEN", fail: "stderr" } },
        ],
      },
      { text: "triaged" },
    ]);
    const daemon = await startEventsDaemon(cleanups, env, ["--log-format", "json"]);
    await waitFor(() => fixture.state(), { until: (s) => s.polls > 0, timeoutMs: 15_000, label: "a first events/poll" });
    await fixture.control("emit", { name: "ticket.updated", event_id: "lj-1", data: { ticket_id: "T-1" } });
    await waitRuns(model, inBatch("lj-1"));
    await waitFor(() => chatRequests(model).length, { until: (n) => n >= 3, timeoutMs: 20_000, label: "the run's three model requests" });
    await daemon.client.waitForStderr(`echo failed: ${PLACEHOLDER}`, 15_000);
    expect((await stopDaemon(daemon)).code).toBe(0);

    // Each secret reached its destination: the model answered (its key was right; it refuses any
    // other), and what the tools echoed back was the secret, scrubbed before the model saw it.
    const tools = messagesOf(chatRequests(model)[2]!).filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(tools).toEqual([PLACEHOLDER, `echo failed: ${PLACEHOLDER}`]);

    const stderr = daemon.client.stderrText();
    for (const secret of SECRETS) expect(stderr).not.toContain(secret);
    const lines = jsonLines(stderr);
    expect(lines.find((l) => l.code === "listening")?.msg).toMatch(/^vigil serve listening http:\/\/127\.0\.0\.1:\d+$/);
    expect(LISTENING_LINE.exec(stderr)?.[1]).toBe(daemon.base);
    expect(lines.find((l) => l.code === "config_loaded")?.msg).toStartWith("serve: model=");
    // A stdio server's stderr: its line as msg (no `[name]` prefix), the name a field, scrubbed.
    const forwarded = lines.filter((l) => l.code === "server_stderr");
    expect(forwarded.some((l) => l.server === "local" && l.msg.startsWith("events-fixture stdio ready"))).toBe(true);
    expect(forwarded.find((l) => l.msg.includes("echo failed"))).toMatchObject({ level: "info", server: "local", msg: `echo failed: ${PLACEHOLDER}` });
    expect(lines.find((l) => l.code === "model_retry")).toMatchObject({ level: "warn", msg: expect.stringContaining("model: HTTP 500; retry 1/") });
    expect(lines.some((l) => typeof l.session === "string" && l.session === "mcp-events")).toBe(true);
    expect(lines.some((l) => l.level === "debug")).toBe(true);
    // Text lines are not mixed in.
    expect(stderr).not.toContain("vigil: ");
  });

  test("a refused config is one JSON error line with its code (exit 2), the header secret in none of it", async () => {
    const { env } = await setup({}, {
      model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m", api_key_env: MODEL_KEY_ENV },
      mcp_servers: [{ name: "tickets", transport: "http", url: "http://127.0.0.1:9/mcp", headers: { Authorization: "Bearer ${TICKETS_TOKEN}" }, bogus: true }],
      unknown_member: 1,
    });
    const serve = new LineClient([VIGIL_BIN, "serve", "--log-format", "json", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0"], { env: env.env });
    cleanups.add(() => serve.dispose());
    expect((await serve.exited(15_000)).code).toBe(2);
    const stderr = serve.stderrText();
    for (const secret of SECRETS) expect(stderr).not.toContain(secret);
    const lines = jsonLines(stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "error", code: "config_invalid" });
    expect(lines[0]!.msg).toContain("unknown_member: unknown key");
    expect(lines[0]!.msg).toContain("bogus");
  });

  test("VIGIL_LOG_FORMAT=json: even a refused flag is a JSON line; a bad --log-format is refused in text", async () => {
    const run = async (args: string[], knobs: Record<string, string>) => {
      const p = new LineClient([VIGIL_BIN, "serve", ...args], { env: vigilEnv({ VIGIL_LOG_FORMAT: "", ...knobs }) });
      cleanups.add(() => p.dispose());
      return { code: (await p.exited(15_000)).code, stderr: p.stderrText() };
    };
    const typo = await run(["--lisen", "8080"], { VIGIL_LOG_FORMAT: "json" });
    expect(typo.code).toBe(2);
    expect(jsonLines(typo.stderr)).toEqual([{ time: expect.any(String), level: "error", msg: "serve: unknown flag --lisen (did you mean --listen?)", code: "usage" }]);
    // --log-format is applied before the other flags are judged: their refusal is a JSON line too.
    const flagged = await run(["--log-format", "json", "--max-sessions", "5"], {});
    expect(flagged.code).toBe(2);
    expect(jsonLines(flagged.stderr)).toEqual([{ time: expect.any(String), level: "error", msg: "--max-sessions caps the daemon's sessions: it requires --listen", code: "usage" }]);

    const bad = await run(["--log-format", "yaml"], {});
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({ code: 2, stderr: 'vigil: --log-format: expected "text" or "json" (got "yaml")\n' });
    const badEnv = await run([], { VIGIL_LOG_FORMAT: "logfmt" });
    expect({ code: badEnv.code, stderr: badEnv.stderr }).toEqual({ code: 2, stderr: 'vigil: VIGIL_LOG_FORMAT: expected "text" or "json" (got "logfmt")\n' });
    // The flag wins over the variable.
    const text = await run(["--log-format", "text", "--config", "/nonexistent/vigil.json"], { VIGIL_LOG_FORMAT: "json" });
    expect(text.code).toBe(2);
    expect(text.stderr).toStartWith("vigil: config /nonexistent/vigil.json: cannot read");
  });

  test("text mode (the default) is unchanged: `vigil: ` lines, the bare readiness line, `[name]` server lines", async () => {
    const { env } = await setup();
    const daemon = await startEventsDaemon(cleanups, env);
    await daemon.client.waitForStderr("[local] events-fixture stdio ready", 15_000);
    expect((await stopDaemon(daemon)).code).toBe(0);
    const lines = daemon.client.stderrText().split("\n").filter((l) => l !== "");
    expect(lines).toContain(`vigil serve listening ${daemon.base}`);
    for (const line of lines) if (!line.startsWith("vigil serve listening ")) expect(line).toStartWith("vigil: ");
    expect(lines.some((l) => l.startsWith("vigil: serve: model="))).toBe(true);
    expect(lines.some((l) => l.startsWith("{"))).toBe(false);
  });
});
