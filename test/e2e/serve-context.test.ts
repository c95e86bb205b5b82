// Bounded model context in `vigil serve` (issue 12 item A), against the compiled binary, the HTTP
// events fixture and the mock model: a model that refuses requests over 1 MiB still gets every one
// of 400 events of 64 KiB, the history is compacted instead of growing, a restart reads only what
// follows the last compaction, and a SIGTERM restart never shows an event twice in one request.
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import type { RecordedRequest } from "../fixtures/mock-model.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { type EventsEnv, StdioServe, eventsEnvironment, httpServer, inBatch, isStatus, pendingOnDisk, runsFor, waitRuns } from "../helpers/events-serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

const MiB = 1024 * 1024;
/** 1,000,000 bytes of window at 4 bytes per token: under the mock's 1 MiB limit. */
const CONTEXT_TOKENS = 250_000;
const EVENTS = 400;
const EVENT_BYTES = 64 * 1024;

const chats = (env: EventsEnv) => env.model.requests.filter((r) => r.path.endsWith("/chat/completions"));
const EVENT_ID = /event_id=\\"(ev-\d+)\\"/g;
/** The event ids a request carries, one entry per occurrence in it (history included). */
const idsIn = (r: RecordedRequest) => [...JSON.stringify(r.body).matchAll(EVENT_ID)].map((m) => m[1]!);

function withContextTokens(env: EventsEnv, tokens: number): void {
  const config = JSON.parse(readFileSync(env.configFile, "utf8"));
  config.model.context_tokens = tokens;
  writeFileSync(env.configFile, JSON.stringify(config));
}

/** The numbers of the debug line a session logs when it opens. */
function openedLine(serve: StdioServe): { recordsRead: number; historyRecords: number; lastSeq: number } | null {
  const m = /session "s" opened: records_read=(\d+) \(history: (\d+) records after seq \d+, \d+ blocks; transcript last_seq=(\d+)\)/.exec(serve.client.stderrText());
  return m === null ? null : { recordsRead: Number(m[1]), historyRecords: Number(m[2]), lastSeq: Number(m[3]) };
}

const emit = (env: EventsEnv, eventId: string, bytes = 0) =>
  env.fixture!.control("emit", { name: "build.finished", event_id: eventId, ...(bytes > 0 ? { data: { blob: "x".repeat(bytes) } } : {}) });

// With the default window (32,000 tokens) each event is cut to fit a batch; with 250,000 each
// goes in whole. Either way every request stays within the window and so under the mock's limit.
for (const tokens of [undefined, CONTEXT_TOKENS]) {
test(`400 events of 64 KiB, a model refusing requests over 1 MiB (context_tokens ${tokens ?? "default"}): every event arrives, the history is compacted, a restart reads only the recent transcript`, async () => {
  const windowBytes = (tokens ?? 32_000) * 4;
  const env = await eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "ci", [{ name: "build.finished" }])],
    knobs: {
      VIGIL_EVENTS_COALESCE_MS: "0",
      VIGIL_EVENTS_MAX_PENDING_BYTES: String(64 * MiB),
      VIGIL_TRANSCRIPT_SEGMENT_BYTES: String(4 * MiB),
      VIGIL_LOG_LEVEL: "debug",
    },
  });
  if (tokens !== undefined) withContextTokens(env, tokens);
  env.model.setMaxRequestBytes(MiB);
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  const ids = Array.from({ length: EVENTS }, (_, i) => `ev-${i}`);
  for (const id of ids) await emit(env, id, EVENT_BYTES - 256);

  // Every event reaches the model (as the new batch of a request), none is dropped.
  const seen = new Set<string>();
  let scanned = 0;
  await waitFor(() => {
    const all = chats(env);
    for (; scanned < all.length; scanned++) for (const id of idsIn(all[scanned]!)) seen.add(id);
    // A dropped event ends the wait early: the assertions below then say what went wrong.
    return (seen.size === EVENTS && pendingOnDisk(env.stateDir, "s").length === 0) || first.count(isStatus("dropped")) > 0;
  }, { timeoutMs: 180_000, label: "every event at the model and the pending log drained", show: () => `${seen.size} events seen, ${chats(env).length} requests` });
  expect(first.count(isStatus("dropped"))).toBe(0);
  // No request over the budget, none refused by the model.
  const requests = chats(env);
  expect(Math.max(...requests.map((r) => r.bytes))).toBeLessThanOrEqual(windowBytes);
  // An event larger than a batch's share of the window is cut, with a marker, and still delivered.
  const cut = requests.some((r) => JSON.stringify(r.body).includes("…[truncated "));
  expect(cut).toBe(tokens === undefined);
  expect(requests.filter((r) => r.outcome !== 200)).toEqual([]);
  expect(first.count((f) => f.type === "compaction")).toBeGreaterThan(0);
  expect(first.count((f) => f.type === "run_end" && f.status !== "ok")).toBe(0);

  first.client.closeStdin();
  expect((await first.client.exited(30_000)).code).toBe(0);
  const before = chats(env).length;

  const second = StdioServe.start(cleanups, env);
  await waitFor(() => openedLine(second), { timeoutMs: E2E_WAIT_MS, label: "the session's open debug line", show: () => second.client.stderrText() });
  await second.until(isStatus("subscribed"));
  await emit(env, "after-restart");
  await waitRuns(env.model, inBatch("after-restart"));
  const after = chats(env).slice(before);
  expect(after[0]!.bytes).toBeLessThanOrEqual(windowBytes);
  expect(after[0]!.outcome).toBe(200);
  // Opening read what follows the last compaction, not the whole transcript.
  const opened = openedLine(second)!;
  expect(opened.historyRecords).toBeLessThan(opened.lastSeq / 4);
  expect(opened.recordsRead).toBeLessThan(opened.lastSeq);
  console.log(`context e2e: ${requests.length} requests, largest ${Math.max(...requests.map((r) => r.bytes))} bytes, ` +
    `${first.count((f) => f.type === "compaction")} compactions; reopen: ${JSON.stringify(opened)}`);
}, 300_000);
}

test("SIGTERM restart: no event appears twice in one model request, and none is injected again after a graceful exit", async () => {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "ci", [{ name: "build.finished" }])] });
  const first = StdioServe.start(cleanups, env);
  await first.until(isStatus("subscribed"));
  // Delivered before the restart, in a run that succeeded.
  await emit(env, "ev-1");
  await waitRuns(env.model, inBatch("ev-1"));
  await first.until((f) => f.type === "run_end" && f.status === "ok");
  // In flight at SIGTERM: the model holds the batch, the run is aborted, the batch goes back.
  env.model.script([{ stall: true }]);
  await emit(env, "ev-2");
  await emit(env, "ev-3");
  await waitRuns(env.model, inBatch("ev-2"));
  process.kill(first.client.pid, "SIGTERM");
  await first.client.exited(15_000);
  await waitFor(() => pendingOnDisk(env.stateDir, "s").length > 0, { timeoutMs: E2E_WAIT_MS, label: "the aborted batch pending on disk" });

  const second = StdioServe.start(cleanups, env);
  await second.until(isStatus("subscribed"));
  await waitRuns(env.model, inBatch("ev-2"), 2);
  await emit(env, "ev-4");
  await waitRuns(env.model, inBatch("ev-4"));
  await waitFor(() => pendingOnDisk(env.stateDir, "s").length === 0, { timeoutMs: E2E_WAIT_MS, label: "the pending log drained" });

  for (const r of chats(env)) {
    const ids = idsIn(r);
    expect({ seq: r.seq, duplicates: ids.filter((id, i) => ids.indexOf(id) !== i) }).toEqual({ seq: r.seq, duplicates: [] });
  }
  // ev-1 was delivered before the graceful exit: it is never a new batch again.
  expect(runsFor(env.model, inBatch("ev-1"))).toBe(1);
  expect(runsFor(env.model, inBatch("ev-4"))).toBe(1);
});
