// Graceful restarts are not attempts (issue 12 item B, serve.md §5 "Outages are not attempts"),
// against the compiled binary, the HTTP events fixture and the mock model. An operator restarts
// serve (SIGTERM: a deploy, `systemctl restart`) three times while the model is still working on
// the same batch: each run is aborted because the session is closing, which is no fault of the
// batch, so the event must still reach the model afterwards instead of being dropped after the
// persisted attempts reach 3.
import { expect, test } from "bun:test";
import { e2eSuite } from "../helpers/e2e.ts";
import { StdioServe, eventsEnvironment, httpServer, inBatch, isStatus, pendingOnDisk, runsFor, waitRuns } from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const RESTARTS = 3;

test("three SIGTERM restarts while the model holds the same batch: the event is not dropped and reaches the model once it answers", async () => {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "ci", [{ name: "build.finished" }])] });
  // Every run is held by the model until serve aborts it.
  env.model.setDefaultReply({ stall: true });
  const needle = inBatch("slow-1");
  for (let i = 1; i <= RESTARTS; i++) {
    const serve = StdioServe.start(cleanups, env);
    await serve.until(isStatus("subscribed"));
    if (i === 1) await env.fixture!.control("emit", { name: "build.finished", event_id: "slow-1" });
    // The batch is at the model (the i-th run carrying it), then the operator restarts serve.
    await waitRuns(env.model, needle, i);
    process.kill(serve.client.pid, "SIGTERM");
    await serve.client.exited(15_000);
    expect(serve.count(isStatus("dropped"))).toBe(0);
  }

  env.model.setDefaultReply({ text: "ok" });
  const last = StdioServe.start(cleanups, env);
  await waitFor(() => pendingOnDisk(env.stateDir, "s").length === 0 || last.count(isStatus("dropped")) > 0, {
    timeoutMs: 30_000,
    label: "the pending event delivered (or dropped)",
  });
  expect(last.count(isStatus("dropped"))).toBe(0);
  // It reached the model in a run that was answered.
  expect(runsFor(env.model, needle)).toBe(RESTARTS + 1);
  // (`needle` as it appears inside the JSON text of a request body.)
  const inJson = JSON.stringify(needle).slice(1, -1);
  expect(env.model.requests.some((r) => r.outcome === 200 && JSON.stringify(r.body).includes(inJson))).toBe(true);
});
