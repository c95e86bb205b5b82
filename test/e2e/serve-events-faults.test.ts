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
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { waitControl } from "../helpers/events-fixture.ts";
import {
  EVENTS_SESSION,
  StdioServe,
  eventsEnvironment,
  httpServer,
  inBatch,
  isEventFrame,
  isStatus,
  pendingOnDisk,
  startEventsDaemon,
  stdioFixtureEnvironment,
  waitRuns,
} from "../helpers/events-serve.ts";
import { procStat } from "../helpers/fixture.ts";
import { type Frame, SseReader, framesUrl, health, isRunEnd, promptAndWait, stopDaemon } from "../helpers/serve.ts";
import { SERVE_FROM_SOURCE, withSessionThrow } from "../helpers/session-throw-seam.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const isError = (f: Frame) => f.type === "error";
const TIX_POLL = [{ name: "ticket.updated", delivery: "poll" }];

describe("vigil serve: an exception in the events client's own async code is contained", () => {
  test("daemon: the coalescer throws from its timer; session b streams on; the events session restarts and delivers the pending event and the next", async () => {
    const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])] });
    const d = await startEventsDaemon(cleanups, withSessionThrow(env, EVENTS_SESSION, "coalescer_fire"), [], SERVE_FROM_SOURCE);
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
    const { env, entry } = await stdioFixtureEnvironment(cleanups, "tix", TIX_POLL);
    const serve = StdioServe.start(cleanups, withSessionThrow(env, "s", "coalescer_fire"), "s", [], SERVE_FROM_SOURCE);
    await serve.until(isStatus("subscribed"), E2E_WAIT_MS);
    const fixture = await waitControl(entry.controlFile, { cleanups });
    const group = procStat(fixture.pid)?.pgrp;
    expect(group).toBe(fixture.pid);

    await fixture.control("emit", { name: "ticket.updated", event_id: "s-1" });
    const status = await serve.client.exited(E2E_WAIT_MS);
    await serve.ended;
    expect(status.code).toBe(4);
    const crash = serve.frames.find(isError);
    expect(crash).toMatchObject({ type: "error", code: "session_crashed" });
    expect(String(crash!.message)).toContain("a test exception at coalescer_fire");
    expect(serve.frames.some(isEventFrame("s-1"))).toBe(true);
    // Shut down in order: no MCP server process is left, and the event waits on disk for the next start.
    expect(groupAlive(group!)).toBe(false);
    expect(pendingOnDisk(env.stateDir, "s").map((p) => p.event.eventId)).toEqual(["s-1"]);
    expect(serve.client.stderrText()).toContain('session "s" failed on an internal error');
  }, 60_000);

  test("the release binary ignores the seam: stdio serve delivers the event and keeps running", async () => {
    const { env, entry } = await stdioFixtureEnvironment(cleanups, "tix", TIX_POLL);
    const serve = StdioServe.start(cleanups, withSessionThrow(env, "s", "coalescer_fire"));
    await serve.until(isStatus("subscribed"), E2E_WAIT_MS);
    const fixture = await waitControl(entry.controlFile, { cleanups });
    await fixture.control("emit", { name: "ticket.updated", event_id: "r-1" });
    await waitRuns(env.model, inBatch("r-1"), 1, E2E_WAIT_MS);
    await serve.until(isRunEnd, E2E_WAIT_MS);
    expect(serve.frames.some(isError)).toBe(false);
    expect(serve.client.proc.exitCode).toBeNull();
    serve.client.closeStdin();
    expect((await serve.client.exited(E2E_WAIT_MS)).code).toBe(0);
  }, 60_000);
});
