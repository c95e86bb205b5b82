// MCP Events durability in `vigil serve` (serve.md §3, §6 item 5; design notes §3.2, §3.3, §6.3),
// against the compiled binary, the HTTP events fixture and the mock model: pending events survive
// SIGTERM and kill -9, an acknowledged event (cursor moved on disk) is never lost, a graceful exit
// never duplicates a delivered batch, full queues hold the cursor instead of losing events, and a
// batch that does not reach the model is injected again, up to a bound.
//
// The fixture runs in its own process (HTTP mode), so it outlives every vigil that is killed here.
import { expect, test } from "bun:test";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import {
  type EventsEnv,
  StdioServe,
  eventsEnvironment,
  httpServer,
  EVENTS_SESSION,
  inBatch,
  isEventFrame,
  isStatus,
  pendingOnDisk,
  runsFor,
  snapshotOnDisk,
  startEventsDaemon,
  waitRuns,
} from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Frame, SseReader, framesUrl } from "../helpers/serve.ts";

const cleanups = e2eSuite();

/** The event ids still pending in the session's log on disk, in order. */
const pendingIds = (env: EventsEnv, session: string) =>
  pendingOnDisk(env.stateDir, session).map((p) => (p.event as { eventId?: string }).eventId ?? "(gap)");

/** The one subscription's cursor in the snapshot on disk (undefined: no snapshot or no entry yet). */
function cursorOnDisk(env: EventsEnv, session: string): string | null | undefined {
  const snapshot = snapshotOnDisk(env.stateDir, session);
  return snapshot === null ? undefined : Object.values(snapshot.subscriptions)[0]?.cursor;
}

const emit = (env: EventsEnv, eventId: string, extra: Record<string, unknown> = {}) =>
  env.fixture!.control<{ event_id: string; seq: number }>("emit", { name: "build.finished", event_id: eventId, ...extra });

/** Poll-only configured subscription (build.finished), action follow_up unless told. */
const pollEnv = (knobs: Record<string, string> = {}, entry: Record<string, unknown> = {}) =>
  eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished", ...entry }])], knobs });

/** A poll subscription has taken its starting position once the fixture saw a second poll. */
const pollingSettled = (env: EventsEnv, polls = 2) => waitFor(async () => (await env.fixture!.state()).polls >= polls, { timeoutMs: E2E_WAIT_MS, label: `${polls} polls at the fixture` });

const isFullError = (f: Frame) => isStatus("error")(f) && String(f.error).includes("full");
const isMcpEventsRunStart = (f: Frame) => f.type === "run_start" && f.trigger === "mcp_events";

test("a follow_up held during a run survives SIGTERM and reaches the model exactly once after the restart", async () => {
  const env = await pollEnv();
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  // A run in flight: follow-ups are held until it ends, which it never does here.
  env.model.script([{ stall: true }]);
  await first.command({ type: "prompt", id: "p1", message: "a long task" });
  await waitRuns(env.model, "a long task");
  await emit(env, "held-1");
  await first.until(isEventFrame("held-1"));
  await waitFor(() => pendingIds(env, "s").includes("held-1"), { timeoutMs: E2E_WAIT_MS, label: "held-1 in the pending log" });

  process.kill(first.client.pid, "SIGTERM");
  await first.client.exited(15_000);
  expect(runsFor(env.model, inBatch("held-1"))).toBe(0);
  expect(pendingIds(env, "s")).toEqual(["held-1"]);

  const second = StdioServe.start(cleanups, env);
  await waitRuns(env.model, inBatch("held-1"));
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  // A later event goes through the whole path; had held-1 still been pending (or been taken
  // again by a poll), it would have been injected by then.
  await second.until(isStatus("subscribed"));
  await emit(env, "after-1");
  await waitRuns(env.model, inBatch("after-1"));
  expect(runsFor(env.model, inBatch("held-1"))).toBe(1);
  // after-1 leaves the log once its run has ended (the model's request alone does not count).
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained again" });
});

test("kill -9 with acknowledged events pending: after the restart every one reaches the model and the cursor skips nothing", async () => {
  const env = await pollEnv();
  // The first batch stalls the model; everything after it waits in the queue.
  env.model.script([{ stall: true }]);
  const d1 = await startEventsDaemon(cleanups, env);
  await pollingSettled(env);
  await emit(env, "ack-1");
  await waitRuns(env.model, inBatch("ack-1"));
  await emit(env, "ack-2");
  const last = await emit(env, "ack-3");
  // Acknowledged: the cursor on disk has passed ack-3, so the server will not send them again.
  await waitFor(() => cursorOnDisk(env, EVENTS_SESSION) === String(last.seq), { timeoutMs: E2E_WAIT_MS, label: "the cursor on disk past ack-3" });
  expect(pendingIds(env, EVENTS_SESSION)).toEqual(["ack-1", "ack-2", "ack-3"]);

  d1.client.killGroup("SIGKILL");
  await d1.client.exited(10_000);
  // Emitted while vigil is down: only a cursor that did not skip ahead finds it.
  await emit(env, "down-1");

  await startEventsDaemon(cleanups, env);
  for (const id of ["ack-1", "ack-2", "ack-3", "down-1"]) await waitRuns(env.model, inBatch(id));
  expect(runsFor(env.model, inBatch("ack-1"))).toBeGreaterThanOrEqual(2);
  for (const id of ["up-1", "up-2"]) await emit(env, id);
  for (const id of ["up-1", "up-2"]) await waitRuns(env.model, inBatch(id));
  await waitFor(() => pendingIds(env, EVENTS_SESSION).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
});

test("kill -9 with a batch in flight: the batch is injected again after the restart", async () => {
  const env = await pollEnv();
  env.model.script([{ stall: true }]);
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  await emit(env, "flight-1");
  // The model has the batch and never answers: not delivered.
  await waitRuns(env.model, inBatch("flight-1"));
  expect(pendingIds(env, "s")).toEqual(["flight-1"]);

  first.client.killGroup("SIGKILL");
  await first.client.exited(10_000);

  StdioServe.start(cleanups, env);
  await waitRuns(env.model, inBatch("flight-1"), 2);
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  const reinjected = env.model.requests.filter((r) => r.path.endsWith("/chat/completions")).at(-1)!;
  expect(JSON.stringify(reinjected.body)).toContain("[MCP events · batch");
});

test("SIGTERM right after a batch was delivered does not deliver it again after the restart (daemon)", async () => {
  const env = await pollEnv();
  const d1 = await startEventsDaemon(cleanups, env);
  await pollingSettled(env);
  const frames = await SseReader.open(cleanups, framesUrl(d1.base, EVENTS_SESSION));
  await emit(env, "once-1");
  await frames.until((f) => f.type === "run_end" && f.status === "ok");
  process.kill(d1.client.pid, "SIGTERM");
  expect((await d1.client.exited(15_000)).code).toBe(0);
  frames.close();
  expect(pendingIds(env, EVENTS_SESSION)).toEqual([]);

  const polls = (await env.fixture!.state()).polls;
  await startEventsDaemon(cleanups, env);
  await pollingSettled(env, polls + 2);
  // A later event runs the model after the restart's pending events would have been injected.
  await emit(env, "once-2");
  await waitRuns(env.model, inBatch("once-2"));
  expect(runsFor(env.model, inBatch("once-1"))).toBe(1);
});

test("stdin EOF right after a batch was delivered does not deliver it again after the restart (stdio)", async () => {
  const env = await pollEnv();
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  await emit(env, "eof-1");
  await first.until((f) => f.type === "run_end" && f.status === "ok");
  first.client.closeStdin();
  expect((await first.client.exited(15_000)).code).toBe(0);
  expect(pendingIds(env, "s")).toEqual([]);

  const second = StdioServe.start(cleanups, env);
  await second.until(isStatus("subscribed"));
  await emit(env, "eof-2");
  await waitRuns(env.model, inBatch("eof-2"));
  expect(runsFor(env.model, inBatch("eof-1"))).toBe(1);
});

test("a full queue holds the poll cursor: every event reaches the model exactly once and the server resent some", async () => {
  const env = await pollEnv({ VIGIL_EVENTS_MAX_PENDING: "1" });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  env.model.script([{ stall: true, then: { text: "done" } }]);
  await serve.command({ type: "prompt", id: "p1", message: "busy for a while" });
  await waitRuns(env.model, "busy for a while");
  // One burst: the three land on one poll page, and only the first fits the queue.
  const burst = await env.fixture!.control<{ first_seq: number; last_seq: number }>("emit_burst", { name: "build.finished", count: 3 });
  const ids = [0, 1, 2].map((i) => `evt-${burst.first_seq + i}`);
  await serve.until(isFullError);
  await waitFor(() => pendingIds(env, "s").length === 1, { timeoutMs: E2E_WAIT_MS, label: "the first event in the pending log" });
  expect(pendingIds(env, "s")).toEqual([ids[0]!]);

  env.model.release();
  for (const id of ids) await waitRuns(env.model, inBatch(id));
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  const list = await serve.command({ type: "mcp_events_list", id: "l1" });
  expect(list.success).toBe(true);
  // The held cursor made the server send the already-taken events again.
  expect(list.data.subscriptions[0].duplicates).toBeGreaterThanOrEqual(1);
  // Nothing comes twice: a later event goes through first.
  await emit(env, "last-1");
  await waitRuns(env.model, inBatch("last-1"));
  for (const id of ids) expect(runsFor(env.model, inBatch(id))).toBe(1);
  expect(serve.count((f) => f.type === "mcp_event")).toBe(4);
});

test("a steered event that an abort drops is injected again", async () => {
  const env = await pollEnv({}, { action: "steer" });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  env.model.script([{ stall: true }]);
  await serve.command({ type: "prompt", id: "p1", message: "working on it" });
  await waitRuns(env.model, "working on it");
  await emit(env, "steer-1");
  await serve.until(isEventFrame("steer-1"));
  // The batch was handed to the running run as a steer, which has not taken it yet.
  let n = 0;
  await waitFor(async () => {
    const state = await serve.command({ type: "get_state", id: `st${n++}` });
    return state.data.queued.steer === 1;
  }, { timeoutMs: E2E_WAIT_MS, label: "the batch queued as a steer" });
  const abort = await serve.command({ type: "abort", id: "a1" });
  expect(abort.success).toBe(true);
  await serve.until((f) => f.type === "run_end" && f.status === "aborted");
  await waitRuns(env.model, inBatch("steer-1"));
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
});

test("an event whose runs keep failing is injected 3 times, then dropped and reported", async () => {
  const env = await pollEnv();
  // Every model request is refused as bad (a 4xx counts as an attempt; a 5xx would be an outage).
  env.model.setDefaultReply({ status: 400 });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  await emit(env, "poison-1");
  const dropped = await serve.until(isStatus("dropped"), 30_000);
  expect((dropped.event as { eventId?: string }).eventId).toBe("poison-1");
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });

  const runs = serve.frames.filter(isMcpEventsRunStart).map((f) => f.run_id);
  expect(runs.length).toBe(3);
  for (const id of runs) expect(serve.frames.find((f) => f.type === "run_end" && f.run_id === id)?.status).toBe("failed");
  // Each of the three runs asked the model about the event (and none after the drop).
  expect(runsFor(env.model, inBatch("poison-1"))).toBeGreaterThanOrEqual(3);
  expect(serve.frames.findIndex(isStatus("dropped"))).toBeGreaterThan(serve.frames.findLastIndex(isMcpEventsRunStart));
});

test("the pending queue is bounded in bytes: the push subscription holds, and after the model catches up every event arrives", async () => {
  const env = await eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "tickets", [{ name: "ticket.updated", delivery: "push" }])],
    knobs: { VIGIL_EVENTS_MAX_PENDING_BYTES: "1024" },
  });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  env.model.script([{ stall: true, then: { text: "done" } }]);
  await serve.command({ type: "prompt", id: "p1", message: "busy for a while" });
  await waitRuns(env.model, "busy for a while");
  // Each pending line is over half the byte bound: the second does not fit.
  const ids = ["big-1", "big-2", "big-3"];
  for (const id of ids) await env.fixture!.control("emit", { name: "ticket.updated", event_id: id, data: { blob: "x".repeat(600) } });
  await serve.until(isFullError);
  await waitFor(() => pendingIds(env, "s").length === 1, { timeoutMs: E2E_WAIT_MS, label: "the first event in the pending log" });
  expect(pendingIds(env, "s")).toEqual(["big-1"]);

  env.model.release();
  for (const id of ids) await waitRuns(env.model, inBatch(id));
  await waitFor(() => pendingIds(env, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  for (const id of ids) expect(runsFor(env.model, inBatch(id))).toBe(1);
});
