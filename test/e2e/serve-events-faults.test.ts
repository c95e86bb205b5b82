// The events client's own async roots are contained too (issue 12 item F, follow-up): an exception
// thrown from the coalescer's timer — code nobody awaits, which used to become an unhandled
// rejection and end the whole daemon — ends only its session. In daemon mode another session
// streams on and the events session comes back and delivers (the event pending at the failure
// included); in stdio mode the `error` frame is written, serve shuts down in order and exits 4
// with no MCP server process left and the pending event still on disk.
//
// The throw comes from the test-only seam VIGIL_TEST_SESSION_THROW=<session>:coalescer_fire, so
// those tests run serve from source (VIGIL_SERVE_SOURCE overrides the entry point); the release
// binary ignores it. Every wait is bounded; nothing about timing is asserted.
import { describe, expect, test } from "bun:test";
import { groupAlive } from "../../src/shared/process-group.ts";
import { VIGIL_BIN } from "../helpers/bin.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { waitControl } from "../helpers/events-fixture.ts";
import {
  type EventsEnv,
  EVENTS_SESSION,
  eventsEnvironment,
  eventsFixtureStdio,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  pendingOnDisk,
  stdioServer,
  waitRuns,
} from "../helpers/events-serve.ts";
import { LineClient, procStat, tmpDir } from "../helpers/fixture.ts";
import { type Daemon, type Frame, SseReader, command, framesUrl, health, isRunEnd, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { VIGIL_SOURCE } from "../helpers/wrap.ts";

const cleanups = e2eSuite();
const SEAM = "VIGIL_TEST_SESSION_THROW";
const SOURCE = process.env.VIGIL_SERVE_SOURCE === undefined ? VIGIL_SOURCE : [process.execPath, process.env.VIGIL_SERVE_SOURCE];
const isError = (f: Frame) => f.type === "error";

async function daemon(env: EventsEnv, vigil: string[]): Promise<Daemon> {
  const client = new LineClient([...vigil, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--listen", "127.0.0.1:0"], {
    env: { ...env.env, [SEAM]: `${EVENTS_SESSION}:coalescer_fire` },
  });
  cleanups.add(() => client.dispose());
  await client.waitForStderr("vigil serve listening http://", 30_000);
  return { client, base: /vigil serve listening (http:\/\/\S+)/.exec(client.stderrText())![1]! };
}

let ids = 0;
async function promptAndWait(d: Daemon, sse: SseReader, session: string, message: string): Promise<void> {
  const ends = sse.frames.filter(isRunEnd).length;
  const r = await command(d, session, { type: "prompt", id: `p${++ids}`, message });
  expect(r.body.success).toBe(true);
  const frames = await sse.untilNth(isRunEnd, ends + 1, E2E_WAIT_MS);
  expect(frames.at(-1)).toMatchObject({ type: "run_end", status: "ok", run_id: r.body.data!.run_id });
}

/** Frames read from a stdio serve's stdout (lines that are not JSON are ignored). */
function framesOf(client: LineClient): { frames: Frame[]; done: Promise<void> } {
  const frames: Frame[] = [];
  const done = (async () => {
    for (;;) {
      const line = await client.next(3_600_000);
      if (line === null) return;
      try {
        frames.push(JSON.parse(line) as Frame);
      } catch {
        // not a frame
      }
    }
  })();
  return { frames, done };
}

describe("vigil serve: an exception in the events client's own async code is contained", () => {
  test("daemon: the coalescer throws from its timer; session b streams on; the events session restarts and delivers the pending event and the next", async () => {
    const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])] });
    const d = await daemon(env, SOURCE);
    const events1 = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION, 0));
    await events1.until(isStatus("subscribed"), E2E_WAIT_MS);
    const b = await SseReader.open(cleanups, framesUrl(d.base, "b"));
    await promptAndWait(d, b, "b", "before");

    // The event is stored; the coalescer's timer fires to inject it, and the seam throws there.
    await env.fixture!.control("emit", { name: "build.finished", event_id: "e-1" });
    await events1.until(isEventFrame("e-1"), E2E_WAIT_MS);
    const crash = (await events1.until(isError, E2E_WAIT_MS)).find(isError)!;
    expect(crash).toMatchObject({ type: "error", code: "session_crashed" });
    expect(String(crash.message)).toContain("VIGIL_TEST_SESSION_THROW: a test exception at coalescer_fire");
    await waitFor(() => events1.closed, { timeoutMs: E2E_WAIT_MS, label: "the failed session's stream ended" });
    expect(d.client.proc.exitCode).toBeNull();
    expect(d.client.stderrText()).not.toContain("escaped every containment boundary");

    // Session b never noticed.
    await promptAndWait(d, b, "b", "during");

    // The events session comes back by itself and delivers what was pending at the failure, then more.
    await d.client.waitForStderr(`session "${EVENTS_SESSION}" restarted`, E2E_WAIT_MS);
    await waitRuns(env.model, inBatch("e-1"), 1, E2E_WAIT_MS);
    const events2 = await SseReader.open(cleanups, framesUrl(d.base, EVENTS_SESSION));
    await env.fixture!.control("emit", { name: "build.finished", event_id: "e-2" });
    await events2.until(isEventFrame("e-2"), E2E_WAIT_MS);
    await waitRuns(env.model, inBatch("e-2"), 1, E2E_WAIT_MS);
    await waitFor(async () => (await health(d)).body.ok, { timeoutMs: E2E_WAIT_MS, label: "health ok again" });
    expect(events2.frames.some(isError)).toBe(false);
    expect(b.closed).toBe(false);
    await promptAndWait(d, b, "b", "after");
    expect((await stopDaemon(d)).code).toBe(0);
  }, 90_000);

  test("stdio: the error frame is on stdout, serve exits 4, the stdio MCP server's group is gone, the event stays pending on disk", async () => {
    const tmp = tmpDir("vigil-stdio-fault-e2e");
    cleanups.add(() => tmp.cleanup());
    const entry = eventsFixtureStdio({ env: { MCP_FIXTURE_LOG_FILE: tmp.file("events.log") }, cleanups });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tix", [{ name: "ticket.updated", delivery: "poll" }])],
    });
    const client = new LineClient([...SOURCE, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--session", "s"], {
      env: { ...env.env, [SEAM]: "s:coalescer_fire" },
    });
    cleanups.add(() => client.dispose());
    const out = framesOf(client);
    await waitFor(() => out.frames.some(isStatus("subscribed")), { timeoutMs: E2E_WAIT_MS, label: "subscribed", show: () => client.stderrText() });
    const fixture = await waitControl(entry.controlFile, { cleanups });
    const group = procStat(fixture.pid)?.pgrp;
    expect(group).toBe(fixture.pid);

    await fixture.control("emit", { name: "ticket.updated", event_id: "s-1" });
    const status = await client.exited(E2E_WAIT_MS);
    await out.done;
    expect(status.code).toBe(4);
    const crash = out.frames.find(isError);
    expect(crash).toMatchObject({ type: "error", code: "session_crashed" });
    expect(String(crash!.message)).toContain("a test exception at coalescer_fire");
    expect(out.frames.some(isEventFrame("s-1"))).toBe(true);
    // Shut down in order: no MCP server process is left, and the event waits on disk for the next start.
    expect(groupAlive(group!)).toBe(false);
    expect(pendingOnDisk(env.stateDir, "s").map((p) => p.event.eventId)).toEqual(["s-1"]);
    expect(client.stderrText()).toContain('session "s" failed on an internal error');
  }, 60_000);

  test("the release binary ignores the seam: stdio serve delivers the event and keeps running", async () => {
    const tmp = tmpDir("vigil-stdio-fault-e2e");
    cleanups.add(() => tmp.cleanup());
    const entry = eventsFixtureStdio({ env: { MCP_FIXTURE_LOG_FILE: tmp.file("events.log") }, cleanups });
    const env = await eventsEnvironment(cleanups, {
      fixtureEnv: false,
      servers: () => [stdioServer(entry, "tix", [{ name: "ticket.updated", delivery: "poll" }])],
    });
    const client = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--session", "s"], {
      env: { ...env.env, [SEAM]: "s:coalescer_fire" },
    });
    cleanups.add(() => client.dispose());
    const out = framesOf(client);
    await waitFor(() => out.frames.some(isStatus("subscribed")), { timeoutMs: E2E_WAIT_MS, label: "subscribed" });
    const fixture = await waitControl(entry.controlFile, { cleanups });
    await fixture.control("emit", { name: "ticket.updated", event_id: "r-1" });
    await waitRuns(env.model, inBatch("r-1"), 1, E2E_WAIT_MS);
    await waitFor(() => out.frames.some(isRunEnd), { timeoutMs: E2E_WAIT_MS, label: "the event's run ended" });
    expect(out.frames.some(isError)).toBe(false);
    expect(client.proc.exitCode).toBeNull();
    client.closeStdin();
    expect((await client.exited(E2E_WAIT_MS)).code).toBe(0);
  }, 60_000);
});
