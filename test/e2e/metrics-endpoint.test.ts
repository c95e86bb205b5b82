/**
 * `GET /metrics` of `vigil serve` (issue 15 item 1), against the compiled binary: the text format's
 * content type, build info and the process gauges; a run with two tool calls through a policy (one
 * allowed, one denied) shows up in the tool, model and run families with decision and reason-code
 * labels and no argument text anywhere in the scrape; `--metrics-listen` serves it on a second
 * loopback listener while the main one answers 404; `VIGIL_METRICS=off` answers 404 and refuses
 * `--metrics-listen`. `promtool check metrics` (Debian's, `make debian-tools`) finds nothing to say
 * about a scrape taken after the tool run — skipped with a printed reason where promtool is
 * missing, except under CI, where it fails.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { vigilEnv } from "../helpers/bin.ts";
import { debianTool, skipWithout } from "../helpers/debian-tools.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type Daemon, type ServeEnv, SseReader, framesUrl, isRunEnd, killServerGroup, post, serveEnvironment, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

const PROMTOOL = debianTool("promtool");
const SKIP_PROMTOOL = skipWithout("metrics-endpoint", PROMTOOL === null ? "no promtool binary in .tools/debian/usr/bin or on PATH (the promtool check)" : null);

const EXPOSITION = "text/plain; version=0.0.4; charset=utf-8";
const SESSION = "ops";
/** Argument values the model sends: none may appear in a scrape. */
const SECRET_ARGS = { echo: "arg-text-echo-5c1e9a", exec: "arg-text-exec-77b0d2" };
const POLICY = 'version: 1\ntools:\n  deny: ["exec"]\n';
const METRICS_LINE = /vigil serve metrics (http:\/\/[^\s"]+)/;

async function scrape(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

/** The value of the sample `series` (exact name and labels as rendered), or undefined. */
function value(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function policyEnvironment(): Promise<ServeEnv> {
  const env = await serveEnvironment(cleanups, { prefix: "vigil-metrics-e2e" });
  writeFileSync(resolve(env.dir, "policy.yaml"), POLICY);
  const config = JSON.parse(readFileSync(env.configFile, "utf8"));
  config.policy = "policy.yaml";
  writeFileSync(env.configFile, JSON.stringify(config));
  return env;
}

/** One run in which the model calls fx__echo (allowed) and fx__exec (denied by the policy). */
async function toolRun(env: ServeEnv, d: Daemon): Promise<void> {
  const sse = await SseReader.open(cleanups, framesUrl(d.base, SESSION));
  env.model.script([
    { toolCalls: [{ name: "fx__echo", arguments: { text: SECRET_ARGS.echo } }, { name: "fx__exec", arguments: { cmd: SECRET_ARGS.exec } }] },
    { text: "done" },
  ]);
  expect((await post(d, SESSION, { type: "prompt", id: "p1", message: "go" })).status).toBe(200);
  const frames = await sse.until(isRunEnd);
  expect(frames.filter((f) => f.type === "tool_call").map((f) => [f.tool, f.decision])).toEqual([["echo", "allow"], ["exec", "deny"]]);
  expect(frames.at(-1)).toMatchObject({ type: "run_end", status: "ok" });
  sse.close();
}

describe("serve: GET /metrics", () => {
  test("the exposition format with build info, process gauges, and a governed run's tool, model and run series — no argument text", async () => {
    const env = await policyEnvironment();
    const d = await startDaemon(cleanups, env);
    const first = await scrape(`${d.base}/metrics`);
    expect(first.status).toBe(200);
    expect(first.type).toBe(EXPOSITION);
    expect(first.text).toMatch(/^vigil_build_info\{version="[^"]+",commit="[^"]+"\} 1$/m);
    expect(value(first.text, 'vigil_mcp_server_state{server="fx",state="connected"}')).toBe(1);
    expect(value(first.text, 'vigil_mcp_server_state{server="fx",state="reconnecting"}')).toBe(0);
    expect(value(first.text, "vigil_process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(value(first.text, "vigil_process_open_fds")).toBeGreaterThan(2);
    expect(value(first.text, "vigil_process_start_time_seconds")).toBeGreaterThan(1_600_000_000);
    expect(value(first.text, "vigil_event_loop_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(value(first.text, 'vigil_mcp_server_reconnects_total{server="fx"}')).toBe(0);
    const head = await fetch(`${d.base}/metrics`, { method: "HEAD", signal: AbortSignal.timeout(10_000) });
    expect([head.status, head.headers.get("content-type")]).toEqual([200, EXPOSITION]);
    const postTo = await fetch(`${d.base}/metrics`, { method: "POST", signal: AbortSignal.timeout(10_000) });
    expect([postTo.status, postTo.headers.get("allow")]).toEqual([405, "GET"]);

    await toolRun(env, d);
    const after = await scrape(`${d.base}/metrics`);
    const t = after.text;
    expect(value(t, 'vigil_tool_calls_total{server="fx",tool="echo",decision="allow",code="P_ALLOW"}')).toBe(1);
    expect(value(t, 'vigil_tool_calls_total{server="fx",tool="exec",decision="deny",code="E_TOOL_DENIED"}')).toBe(1);
    // Only the forwarded call is timed.
    expect(value(t, 'vigil_tool_call_duration_seconds_count{server="fx",tool="echo"}')).toBe(1);
    expect(t).not.toContain('vigil_tool_call_duration_seconds_count{server="fx",tool="exec"}');
    expect(value(t, 'vigil_model_requests_total{outcome="ok"}')).toBe(2);
    expect(value(t, 'vigil_model_request_duration_seconds_count{outcome="ok"}')).toBe(2);
    // The mock model reports usage on both requests.
    expect(env.model.requests.length).toBe(2);
    expect(value(t, 'vigil_model_tokens_total{type="input"}')).toBeGreaterThan(0);
    expect(value(t, 'vigil_model_tokens_total{type="output"}')).toBeGreaterThan(0);
    expect(value(t, 'vigil_runs_total{outcome="ok"}')).toBe(1);
    expect(value(t, "vigil_sessions_open")).toBeGreaterThanOrEqual(1);
    expect(value(t, "vigil_model_unavailable_seconds_total")).toBe(0);
    for (const secret of Object.values(SECRET_ARGS)) expect(t).not.toContain(secret);

    // An SSE client is counted while attached.
    const sse = await SseReader.open(cleanups, framesUrl(d.base, SESSION));
    expect(value((await scrape(`${d.base}/metrics`)).text, "vigil_sse_clients")).toBe(1);
    sse.close();
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
  });

  test("a stdio server killed is restarted: counted as a reconnect, its state back to connected", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-metrics-e2e" });
    const d = await startDaemon(cleanups, env);
    await waitFor(() => existsSync(env.grandchildFile), { timeoutMs: 15_000, label: "the fixture server's grandchild pid file" });
    killServerGroup(env.grandchildFile);
    const reconnected = (t: string) =>
      (value(t, 'vigil_mcp_server_reconnects_total{server="fx"}') ?? 0) >= 1 && value(t, 'vigil_mcp_server_state{server="fx",state="connected"}') === 1;
    const t = await waitFor(async () => (await scrape(`${d.base}/metrics`)).text, {
      until: reconnected,
      timeoutMs: 20_000,
      label: "fx reconnected in the scrape",
      intervalMs: 100,
      show: (text) => text.split("\n").filter((l) => l.startsWith("vigil_mcp_")).join("; "),
    });
    expect(value(t, 'vigil_mcp_server_state{server="fx",state="reconnecting"}')).toBe(0);
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
  });

  test("--metrics-listen: /metrics on the loopback listener only; the main listener answers 404 there", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-metrics-e2e", fixture: false });
    const d = await startDaemon(cleanups, env, ["--metrics-listen", "127.0.0.1:0"]);
    const stderr = d.client.stderrText();
    const metricsBase = METRICS_LINE.exec(stderr)?.[1];
    expect(metricsBase).toBeDefined();
    // Printed before the main readiness line.
    expect(stderr.indexOf("vigil serve metrics ")).toBeLessThan(stderr.indexOf("vigil serve listening "));
    expect(metricsBase).not.toBe(d.base);
    const there = await scrape(`${metricsBase}/metrics`);
    expect([there.status, there.type]).toEqual([200, EXPOSITION]);
    expect(there.text).toContain("vigil_build_info{");
    expect((await scrape(`${d.base}/metrics`)).status).toBe(404);
    expect((await scrape(`${metricsBase}/v1/health`)).status).toBe(404);
    expect((await scrape(`${d.base}/v1/health`)).status).toBe(200);
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });

    // A public address is refused before anything starts.
    const refused = await runVigil(["serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:0"], { env: vigilEnv() });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--metrics-listen \"0.0.0.0:0\": not a loopback address");
  });

  test("VIGIL_METRICS=off: no /metrics (404), and --metrics-listen is refused", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-metrics-e2e", fixture: false });
    const d = await startDaemon(cleanups, env, [], vigilEnv({ VIGIL_METRICS: "off" }));
    const off = await scrape(`${d.base}/metrics`);
    expect(off.status).toBe(404);
    expect(off.text).toContain('"not_found"');
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });

    const args = ["serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"];
    const refused = await runVigil(args, { env: vigilEnv({ VIGIL_METRICS: "off" }) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("VIGIL_METRICS=off");
    const bad = await runVigil(["serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0"], { env: vigilEnv({ VIGIL_METRICS: "maybe" }) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('VIGIL_METRICS: expected "on" or "off"');
  });

  test.skipIf(SKIP_PROMTOOL)("promtool check metrics: nothing to say about a scrape after a tool run", async () => {
    if (PROMTOOL === null) throw new Error("no promtool binary: run `make debian-tools` (CI must have it)");
    const env = await policyEnvironment();
    const d = await startDaemon(cleanups, env);
    await toolRun(env, d);
    const { text } = await scrape(`${d.base}/metrics`);
    const check = Bun.spawn([PROMTOOL, "check", "metrics"], { stdin: new Blob([text]), stdout: "pipe", stderr: "pipe" });
    const killer = setTimeout(() => check.kill("SIGKILL"), 20_000);
    const [out, err, code] = await Promise.all([new Response(check.stdout).text(), new Response(check.stderr).text(), check.exited]);
    clearTimeout(killer);
    expect({ code, out, err }).toEqual({ code: 0, out: "", err: "" });
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
  });
});
