// A poll page's new cursor and its dedup ids are durable with the page's events — a `position`
// record in the same pending-log append — so vigil serve killed with SIGKILL in the middle of a
// burst, whenever its last snapshot checkpoint was, restarts from the last page it stored: its
// first poll asks from that page's cursor, and no event is queued twice (src/events/store/positions.ts).
//
// Against the compiled binary and the HTTP events fixture (its own process, so it outlives vigil).
import { expect, test } from "bun:test";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { EVENTS_SESSION, durableSubscriptions, eventsEnvironment, httpServer, pendingOnDisk, startEventsDaemon } from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

test("kill -9 mid-burst: the restart polls from the last stored page's cursor and queues nothing twice", async () => {
  const env = await eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])],
    knobs: { VIGIL_EVENTS_POLL_FLOOR_MS: "1" },
  });
  // Nothing reaches the model: every event stays in the pending queue, where it can be counted.
  env.model.script([{ stall: true }]);
  const first = await startEventsDaemon(cleanups, env);
  await waitFor(async () => (await env.fixture!.state()).polls >= 2, { timeoutMs: E2E_WAIT_MS, label: "the subscription polling" });

  const burst = await env.fixture!.control<{ first_seq: number; last_seq: number }>("emit_burst", { name: "build.finished", count: 400 });
  const queued = () => pendingOnDisk(env.stateDir, EVENTS_SESSION).length;
  // Some pages are in, not all: the kill lands mid-burst.
  await waitFor(queued, { until: (n) => n >= 100, timeoutMs: E2E_WAIT_MS, label: "100 events in the pending log" });
  first.client.killGroup("SIGKILL");
  await first.client.exited(10_000);

  const stored = Object.values(durableSubscriptions(env.stateDir, EVENTS_SESSION))[0];
  const storedQueue = pendingOnDisk(env.stateDir, EVENTS_SESSION);
  expect(stored?.cursor).not.toBeNull();
  // The stored position is the page boundary of what the log holds: the cursor is the newest queued event's.
  const newest = storedQueue.at(-1)!.event as { eventId: string };
  expect(stored!.recent.at(-1)).toBe(newest.eventId);
  const pollsBefore = (await env.fixture!.state()).polls;

  await startEventsDaemon(cleanups, env);
  await waitFor(async () => (await env.fixture!.state()).polls > pollsBefore, { timeoutMs: E2E_WAIT_MS, label: "a poll after the restart" });
  expect((await env.fixture!.state()).poll_cursors[pollsBefore]).toBe(stored!.cursor);
  // The rest of the burst arrives, and every event is queued exactly once.
  await waitFor(queued, { until: (n) => n >= burst.last_seq - burst.first_seq + 1, timeoutMs: E2E_WAIT_MS, label: "the whole burst in the pending log" });
  const ids = pendingOnDisk(env.stateDir, EVENTS_SESSION).map((p) => (p.event as { eventId: string }).eventId);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids).toHaveLength(burst.last_seq - burst.first_seq + 1);
});
