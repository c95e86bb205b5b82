// Containment and bounds of `vigil serve --listen` (issue 12 item F; serve.md §6 items 9–10,
// "Operations"): a session that throws is ended alone (its client gets an `error` frame, another
// session streams on, the events session comes back and delivers again); `--max-sessions` refuses
// the next new session with 503 and leaves the open ones alone; `/v1/health` says ok:false with
// reasons (still 200) at the cap and while a configured server is down.
//
// The throw comes from the test-only seam VIGIL_TEST_SESSION_THROW, so that test runs serve from
// source (VIGIL_SERVE_SOURCE overrides the entry point) and shows the release binary ignores it.
// The rest runs against the binary. Every wait is bounded; nothing about timing is asserted.
import { describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { writeFileSync } from "node:fs";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { type EventsEnv, EVENTS_SESSION, eventsEnvironment, httpServer, inBatch, isEventFrame, isStatus, startEventsDaemon, waitRuns } from "../helpers/events-serve.ts";
import { type Frame, SseReader, framesUrl, health, isRunEnd, promptAndWait, serveEnvironment, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { SERVE_FROM_SOURCE, withSessionThrow } from "../helpers/session-throw-seam.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

/** The events session throws while its first run settles (honoured from source only). */
const eventsEnv = async () =>
  withSessionThrow(await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])] }), EVENTS_SESSION, "run_settled");
const emit = (env: EventsEnv, id: string) => env.fixture!.control("emit", { name: "build.finished", event_id: id });
const isError = (f: Frame) => f.type === "error";

describe("vigil serve: one session's exception is contained", () => {
  test("the events session throws: its client gets an error frame, session b streams on, the events session restarts and delivers again", async () => {
    const env = await eventsEnv();
    const d = await startEventsDaemon(cleanups, env, [], SERVE_FROM_SOURCE);
    const events1 = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION, 0));
    await events1.until(isStatus("subscribed"), E2E_WAIT_MS);
    const b = await SseReader.open(cleanups, framesUrl(d.base, "b"));
    await promptAndWait(d, b, "b", "before");

    // The event's run settles in the events session, and the seam throws there.
    await emit(env, "e-1");
    await events1.until(isEventFrame("e-1"), E2E_WAIT_MS);
    const crash = (await events1.until(isError, E2E_WAIT_MS)).at(-1)!;
    expect(crash).toMatchObject({ type: "error", code: "session_crashed", seq: expect.any(Number) });
    expect(String(crash.message)).toContain("VIGIL_TEST_SESSION_THROW");
    // Its stream ends after the error frame: the client knows to reconnect.
    await waitFor(() => events1.closed, { timeoutMs: E2E_WAIT_MS, label: "the failed session's stream ended" });

    // Session b never noticed: the same stream carries its next run.
    await promptAndWait(d, b, "b", "during");

    // The daemon brings the events session back by itself (no client addressed it meanwhile).
    await d.client.waitForStderr(`session "${EVENTS_SESSION}" restarted`, E2E_WAIT_MS);
    await waitFor(async () => (await health(d)).body.ok, { timeoutMs: E2E_WAIT_MS, label: "health ok again" });
    const events2 = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION));
    await emit(env, "e-2");
    await events2.until(isEventFrame("e-2"), E2E_WAIT_MS);
    await waitRuns(env.model, inBatch("e-2"), 1, E2E_WAIT_MS);
    await events2.until(isRunEnd, E2E_WAIT_MS);
    expect(events2.frames.some(isError)).toBe(false);
    expect(b.closed).toBe(false);
    await promptAndWait(d, b, "b", "after");
    expect((await stopDaemon(d)).code).toBe(0);
  }, 90_000);

  test("the release binary ignores the seam: the events session serves two runs on one stream", async () => {
    const env = await eventsEnv();
    const d = await startEventsDaemon(cleanups, env);
    const events = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION, 0));
    await events.until(isStatus("subscribed"), E2E_WAIT_MS);
    await emit(env, "r-1");
    await events.untilNth(isRunEnd, 1, E2E_WAIT_MS);
    // Had the seam fired at the first settlement, this session would be gone and the stream ended.
    await emit(env, "r-2");
    await events.untilNth(isRunEnd, 2, E2E_WAIT_MS);
    expect(events.frames.some(isError)).toBe(false);
    expect(events.closed).toBe(false);
    expect(d.client.stderrText()).not.toContain("unexpected exception");
    expect((await stopDaemon(d)).code).toBe(0);
  }, 60_000);
});

describe("vigil serve --max-sessions", () => {
  test("--max-sessions 5: the sixth new session gets 503 too_many_sessions, the first five keep working, health says why", async () => {
    const env = await serveEnvironment(cleanups, { fixture: false });
    const d = await startDaemon(cleanups, env, ["--max-sessions", "5"]);
    const names = ["s1", "s2", "s3", "s4", "s5"];
    const streams: SseReader[] = [];
    for (const name of names) streams.push(await SseReader.open(cleanups, framesUrl(d.base, name)));

    const sixth = await fetch(`${d.base}/v1/sessions/s6/commands`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "get_state", id: "g6" }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(sixth.status).toBe(503);
    expect(((await sixth.json()) as { error: { code: string } }).error.code).toBe("too_many_sessions");
    const sse6 = await fetch(framesUrl(d.base, "s6"), { signal: AbortSignal.timeout(10_000) });
    expect(sse6.status).toBe(503);
    await sse6.body?.cancel();

    const h = await health(d);
    expect(h.status).toBe(200);
    expect(h.body.ok).toBe(false);
    expect(h.body.reasons.some((r) => r.includes("sessions at the cap: 5 of --max-sessions 5"))).toBe(true);

    for (const [i, name] of names.entries()) await promptAndWait(d, streams[i]!, name, `hello ${name}`);
    expect((await stopDaemon(d)).code).toBe(0);
  }, 60_000);
});

describe("vigil serve /v1/health", () => {
  test("a configured MCP server that is down: ok:false with a reason naming it, still 200", async () => {
    const env = await serveEnvironment(cleanups, { fixture: false });
    const port = await closedPort();
    const config = {
      model: { provider: "openai", base_url: env.model.url, model: "mock-model", timeout_ms: 20_000 },
      mcp_servers: [{ name: "gone", transport: "http", url: `http://127.0.0.1:${port}/mcp` }],
    };
    writeFileSync(env.configFile, JSON.stringify(config));
    const d = await startDaemon(cleanups, env);
    const h = await health(d);
    expect(h.status).toBe(200);
    expect(h.body.ok).toBe(false);
    expect(h.body.reasons.some((r) => r.startsWith('MCP server "gone" is '))).toBe(true);
    expect((await stopDaemon(d)).code).toBe(0);
  }, 60_000);
});

/** A loopback port nothing listens on (bound, read, released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
