// Delivery that survives model outages (serve.md §5 "Outages are not attempts", §6 item 5; issue 12
// item B), against the compiled binary, the HTTP events fixture and the in-process mock model:
// - a model answering 503, and a model refusing connections, for longer than three runs: nothing
//   is dropped, clients see `model_unavailable`, and every event reaches the model once it is back;
// - a poison batch (400) is still dropped after 3 attempts, and the count survives a kill -9;
// - a steered batch is delivered when the model received it: a crash later in its run does not
//   inject it again.
//
// No timing is asserted: the outage lasts until the session has failed more runs than the attempt
// bound (on a build that counted outages as attempts, the events would be dropped by then), and
// every wait is bounded and waits for a state, not a time.
import { expect, test } from "bun:test";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { MockModel } from "../fixtures/mock-model.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { type EventsEnv, StdioServe, eventsEnvironment, httpServer, inBatch, isStatus, pendingOnDisk, runsFor, waitRuns } from "../helpers/events-serve.ts";
import { type Frame, lastUserText } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const MAX_ATTEMPTS = 3;
const OUTAGE_WAIT_MS = 60_000;

/** Poll subscription to build.finished; the backoff cap is small so the test spends little time waiting. */
const outageEnv = (entry: Record<string, unknown> = {}) =>
  eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished", ...entry }])],
    knobs: { VIGIL_MODEL_BACKOFF_CAP_MS: "200" },
  });

const emit = (env: EventsEnv, eventId: string, extra: Record<string, unknown> = {}) =>
  env.fixture!.control<{ event_id: string; seq: number }>("emit", { name: "build.finished", event_id: eventId, ...extra });

const pendingIds = (env: EventsEnv) => pendingOnDisk(env.stateDir, "s").map((p) => (p.event as { eventId?: string }).eventId);

/** Chat requests the model answered (200) whose newest user message carries `needle`. */
const answered = (model: MockModel, needle: string) =>
  model.requests.filter((r) => r.path.endsWith("/chat/completions") && r.outcome === 200 && lastUserText(r).includes(needle)).length;

const failedEventRuns = (serve: StdioServe) => {
  const runs = new Set(serve.frames.filter((f) => f.type === "run_start" && f.trigger === "mcp_events").map((f) => f.run_id));
  return serve.count((f) => f.type === "run_end" && f.status === "failed" && runs.has(f.run_id));
};

/** The attempts counts in the session's pending log on disk, by seq (last record wins). */
function attemptsOnDisk(env: EventsEnv): Map<number, number> {
  const file = join(env.stateDir, "sessions", "s", "mcp-events.log");
  const counts = new Map<number, number>();
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith('{"attempts":')) continue;
    for (const [seq, n] of (JSON.parse(line) as { attempts: [number, number][] }).attempts) counts.set(seq, n);
  }
  return counts;
}

async function outageSurvived(mode: "503" | "refuse") {
  const env = await outageEnv();
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  await env.model.outage(mode);
  const ids = Array.from({ length: 20 }, (_, i) => `out-${i + 1}`);
  for (const id of ids) await emit(env, id);
  await waitFor(() => ids.every((id) => pendingIds(env).includes(id)), { timeoutMs: E2E_WAIT_MS, label: "all 20 events acknowledged and pending" });

  // The outage outlasts the attempt bound: more failed runs than attempts (or, on a build that
  // counts outages, the drop that ends them).
  await waitFor(() => serve.count(isStatus("dropped")) > 0 || failedEventRuns(serve) > MAX_ATTEMPTS, {
    timeoutMs: OUTAGE_WAIT_MS,
    label: `more than ${MAX_ATTEMPTS} failed runs during the outage`,
    show: () => `${failedEventRuns(serve)} failed runs; stderr:\n${serve.client.stderrText()}`,
  });
  expect(serve.count(isStatus("dropped"))).toBe(0);
  const unavailable = serve.frames.filter((f) => f.type === "model_unavailable");
  expect(unavailable.length).toBeGreaterThanOrEqual(MAX_ATTEMPTS);
  expect(typeof unavailable[0]!.retry_in_ms).toBe("number");
  expect(String(unavailable[0]!.error)).toContain(mode === "503" ? "HTTP 503" : "cannot reach the model");
  const ends = serve.frames.filter((f) => f.type === "run_end" && f.status === "failed");
  expect(ends.every((f) => f.code === "model_unavailable")).toBe(true);
  const state = await serve.command({ type: "get_state", id: "state-1" });
  expect(state.data.model_unavailable).toMatchObject({ error: unavailable.at(-1)!.error });

  await env.model.recover();
  await waitFor(() => ids.filter((id) => answered(env.model, inBatch(id)) === 0), {
    until: (missing) => missing.length === 0,
    timeoutMs: OUTAGE_WAIT_MS,
    label: "all 20 events answered by the model after it recovered",
    show: (missing) => `missing ${missing.join(", ")}`,
  });
  await waitFor(() => pendingIds(env).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  await serve.until((f) => f.type === "model_available");
  expect(serve.count(isStatus("dropped"))).toBe(0);
  const after = await serve.command({ type: "get_state", id: "state-2" });
  expect(after.data.model_unavailable).toBeUndefined();
}

test("a model answering 503 for longer than 3 runs: no event is dropped, all 20 reach it after recovery", async () => {
  await outageSurvived("503");
}, 120_000);

test("a model refusing connections for longer than 3 runs: no event is dropped, all 20 reach it after recovery", async () => {
  await outageSurvived("refuse");
}, 120_000);

test("a poison batch (400) is dropped after 3 attempts, counted across a kill -9", async () => {
  const env = await outageEnv();
  const MARK = "POISON-MARK-7f3a";
  env.model.rejectMarker(MARK);
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  await emit(env, "poison-1", { data: { note: MARK } });
  // Two attempts on record, then a crash.
  await waitFor(() => [...attemptsOnDisk(env).values()].some((n) => n === MAX_ATTEMPTS - 1), {
    timeoutMs: E2E_WAIT_MS,
    label: `${MAX_ATTEMPTS - 1} attempts recorded in the pending log`,
    show: () => `${runsFor(env.model, MARK)} requests with the marker`,
  });
  first.client.killGroup("SIGKILL");
  await first.client.exited(10_000);
  expect(pendingIds(env)).toEqual(["poison-1"]);

  const second = StdioServe.start(cleanups, env);
  const dropped = await second.until(isStatus("dropped"), OUTAGE_WAIT_MS);
  expect((dropped.event as { eventId?: string }).eventId).toBe("poison-1");
  // The model received the batch and refused it: the error says so, not that it never got it.
  expect(String(dropped.error)).toStartWith(`dropped after ${MAX_ATTEMPTS} attempts; the last run failed: model HTTP 400`);
  await waitFor(() => pendingIds(env).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  // 400 is not retried by the client: one request per attempt, three in all across both processes.
  expect(env.model.requests.filter((r) => JSON.stringify(r.body ?? "").includes(MARK)).length).toBe(MAX_ATTEMPTS);
}, 120_000);

test("a steered batch the model received is not injected again when its run later crashes", async () => {
  const env = await outageEnv({ action: "steer" });
  const toolCall = { toolCalls: [{ name: "tickets__no_such_tool", arguments: {} }] };
  // The client's run: turn 1 waits for release; turn 2 (which carries the steer) is answered; turn 3 hangs.
  env.model.script([{ stall: true, then: toolCall }, toolCall, { stall: true }]);
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  await first.command({ type: "prompt", id: "p1", message: "a long task" });
  await waitRuns(env.model, "a long task");
  await emit(env, "steer-1");
  let n = 0;
  await waitFor(async () => (await first.command({ type: "get_state", id: `st${n++}` })).data.queued.steer === 1, {
    timeoutMs: E2E_WAIT_MS,
    label: "the batch queued as a steer",
  });
  env.model.release();
  // Turn 3 was asked for: turn 2, with the steer, was answered.
  await waitRuns(env.model, inBatch("steer-1"), 2);
  await waitFor(() => pendingIds(env).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the received steer left the pending log while its run goes on" });
  const seenBefore = runsFor(env.model, inBatch("steer-1"));
  first.client.killGroup("SIGKILL");
  await first.client.exited(10_000);

  const second = StdioServe.start(cleanups, env);
  await second.until(isStatus("subscribed"));
  // A later event goes through the whole path; had steer-1 still been pending it would have gone in first.
  await emit(env, "after-1");
  await waitRuns(env.model, inBatch("after-1"));
  await waitFor(() => pendingIds(env).length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });
  expect(runsFor(env.model, inBatch("steer-1"))).toBe(seenBefore);
  expect(second.frames.some((f: Frame) => f.type === "run_start" && f.trigger === "mcp_events")).toBe(true);
}, 120_000);
