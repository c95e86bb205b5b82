// The event ledger of `vigil serve` (serve.md "Evidence"; issue 14), against the compiled binary,
// the events fixture and the mock model, with `evidence` configured: poll, push and webhook
// deliveries each leave a received and a delivered record (the run's id, the payload's digest), a
// poison event a dropped one, a truncated page a gap, a notify event a received record with seq
// null — every line chained from the session's anchor, every queued seq accounted for.
import { expect, test } from "bun:test";
import { canonicalSha256, sha256Hex } from "../../src/shared/digest.ts";
import { subscriptionKey } from "../../src/events/rules/key.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { EVIDENCE_CONFIG, LEDGER_SOURCE, type LedgerRecord, accounting, expectChained, ledgerLines, ofType, waitLedger } from "../helpers/events-ledger.ts";
import { EVENTS_SESSION, type EventsEnv, StdioServe, eventsEnvironment, httpServer, inBatch, isEventFrame, isStatus, waitRuns } from "../helpers/events-serve.ts";
import type { Frame } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { emitOnce, subscribedStack } from "../helpers/webhook-subscribed.ts";

const cleanups = e2eSuite();

const ledgerEnv = (entry: Record<string, unknown>, knobs: Record<string, string> = {}) =>
  eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [entry])], knobs, config: EVIDENCE_CONFIG });

const emit = (env: EventsEnv, name: string, eventId: string, extra: Record<string, unknown> = {}) =>
  env.fixture!.control<{ event_id: string; seq: number }>("emit", { name, event_id: eventId, ...extra });

/** Every queued seq delivered (or dropped), nothing unknown. */
const settled = (rs: LedgerRecord[], n: number) => {
  const a = accounting(rs);
  return a.queued.length >= n && a.pending.length === 0;
};

/** The checks every delivery mode shares: records, ids, digests, the runs' ids, the chain, the accounting. */
function expectDelivered(records: LedgerRecord[], o: { session: string; server: string; name: string; delivery: string; ids: string[]; frames: Frame[] }) {
  const received = ofType(records, "received");
  expect(received.map((r) => r.data.event_id)).toEqual(o.ids);
  const key = sha256Hex(subscriptionKey(o.server, o.name, {}));
  for (const r of received) {
    const frame = o.frames.find(isEventFrame(r.data.event_id))!;
    expect(r.data).toEqual({
      session_id: o.session,
      seq: r.data.seq,
      server: o.server,
      event_name: o.name,
      subscription_key_sha256: key,
      delivery_mode: o.delivery,
      action: "follow_up",
      event_id: r.data.event_id,
      payload_sha256: canonicalSha256(frame.event),
    });
    expect(typeof r.data.seq).toBe("number");
  }
  const runs = new Set(o.frames.filter((f) => f.type === "run_start" && f.trigger === "mcp_events").map((f) => f.run_id));
  for (const d of ofType(records, "delivered")) {
    expect(Object.keys(d.data)).toEqual(["session_id", "batch_tag", "run_id", "seqs", "event_ids"]);
    expect(d.data.batch_tag).toMatch(/^mcp_events:\d+$/);
    expect(runs.has(d.data.run_id)).toBe(true);
    expect(d.data.event_ids).toEqual(d.data.seqs.map((s: number) => received.find((r) => r.data.seq === s)?.data.event_id ?? null));
  }
  const a = accounting(records);
  expect(a.unknown).toEqual([]);
  expect(a.pending).toEqual([]);
  expect(records.map((r) => r.id)).toEqual(records.map((_, i) => `evt_ledger_${o.session}_${i}`));
  expect(records.every((r) => r.source === LEDGER_SOURCE)).toBe(true);
}

test("poll: each event is received then delivered in the run that took it, every line chained", async () => {
  const env = await ledgerEnv({ name: "build.finished" });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  await emit(env, "build.finished", "p-1");
  await emit(env, "build.finished", "p-2");
  await waitRuns(env.model, inBatch("p-2"));
  const records = await waitLedger(env.stateDir, "s", (rs) => settled(rs, 2), "p-1 and p-2 delivered");
  expectDelivered(records, { session: "s", server: "tickets", name: "build.finished", delivery: "poll", ids: ["p-1", "p-2"], frames: serve.frames });
  expectChained(ledgerLines(env.stateDir, "s"), "s");
});

test("push: received and delivered records name the push delivery", async () => {
  const env = await ledgerEnv({ name: "ticket.updated", delivery: "push" });
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  await emit(env, "ticket.updated", "u-1");
  await serve.until(isEventFrame("u-1"));
  const records = await waitLedger(env.stateDir, "s", (rs) => settled(rs, 1), "u-1 delivered");
  expectDelivered(records, { session: "s", server: "tickets", name: "ticket.updated", delivery: "push", ids: ["u-1"], frames: serve.frames });
  expectChained(ledgerLines(env.stateDir, "s"), "s");
});

test("webhook: an acknowledged delivery is received (before its 200) and then delivered", async () => {
  const { stack, sse } = await subscribedStack(cleanups, { config: EVIDENCE_CONFIG });
  const { eventId, status } = await emitOnce(stack);
  expect(status).toBe(200);
  // Answered 200 only once its pending-log write (and so its ledger line) was committed.
  const at200 = ledgerLines(stack.env.stateDir, EVENTS_SESSION).map((l) => JSON.parse(l) as LedgerRecord);
  expect(ofType(at200, "received").map((r) => r.data.event_id)).toEqual([eventId]);
  await sse.until(isEventFrame(eventId), E2E_WAIT_MS);
  const records = await waitLedger(stack.env.stateDir, EVENTS_SESSION, (rs) => settled(rs, 1), "the webhook event delivered");
  await sse.until((f) => f.type === "run_end", E2E_WAIT_MS);
  expectDelivered(records, { session: EVENTS_SESSION, server: "fx", name: "ticket.updated", delivery: "webhook", ids: [eventId], frames: sse.frames });
  expectChained(ledgerLines(stack.env.stateDir, EVENTS_SESSION), EVENTS_SESSION);
});

test("a poison event the model refuses three times is dropped: a dropped record with its attempts and the run's code", async () => {
  const env = await ledgerEnv({ name: "build.finished" }, { VIGIL_MODEL_BACKOFF_CAP_MS: "200" });
  const MARK = "POISON-LEDGER-2c9e";
  env.model.rejectMarker(MARK);
  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  await emit(env, "build.finished", "poison-1", { data: { note: MARK } });
  await serve.until(isStatus("dropped"), 60_000);
  const records = await waitLedger(env.stateDir, "s", (rs) => ofType(rs, "dropped").length === 1, "the dropped record");
  const [received] = ofType(records, "received");
  expect(received!.data).toMatchObject({ event_id: "poison-1", action: "follow_up", delivery_mode: "poll" });
  const [dropped] = ofType(records, "dropped");
  // A model 400 gives the run no code of its own: the code says the run failed.
  expect(dropped!.data).toEqual({ session_id: "s", seq: received!.data.seq, event_id: "poison-1", attempts: 3, error_code: "run_failed" });
  expect(ofType(records, "delivered")).toEqual([]);
  expect(accounting(records).pending).toEqual([]);
  expectChained(ledgerLines(env.stateDir, "s"), "s");
}, 90_000);

test("a truncated page is a gap record (queued, so delivered too); a notify event is received with seq null", async () => {
  // The notify subscription streams (push), so the one poll the fixture truncates is build.finished's.
  const env = await eventsEnvironment(cleanups, {
    servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }, { name: "ticket.updated", delivery: "push", action: "notify" }])],
    config: EVIDENCE_CONFIG,
  });
  const serve = StdioServe.start(cleanups, env);
  await waitFor(() => serve.count(isStatus("subscribed")) >= 2, { timeoutMs: E2E_WAIT_MS, label: "both subscriptions up" });
  await env.fixture!.control("truncate_next");
  await serve.until(isStatus("gap"));
  await emit(env, "ticket.updated", "n-1");
  await serve.until(isEventFrame("n-1"));
  const records = await waitLedger(env.stateDir, "s", (rs) => ofType(rs, "gap").length > 0 && ofType(rs, "received").length > 0 && settled(rs, 1), "the gap delivered and n-1 received");
  const [gap] = ofType(records, "gap");
  expect(gap!.data).toEqual({
    session_id: "s",
    seq: gap!.data.seq,
    server: "tickets",
    event_name: "build.finished",
    subscription_key_sha256: sha256Hex(subscriptionKey("tickets", "build.finished", {})),
    reason: "truncated",
    cursor: gap!.data.cursor,
  });
  expect(typeof gap!.data.seq).toBe("number");
  expect(accounting(records).delivered.has(gap!.data.seq)).toBe(true);
  const notify = ofType(records, "received").find((r) => r.data.event_id === "n-1")!;
  expect(notify.data).toMatchObject({ seq: null, action: "notify", event_name: "ticket.updated", delivery_mode: "push" });
  expect(notify.data.payload_sha256).toBe(canonicalSha256(serve.frames.find(isEventFrame("n-1"))!.event));
  expect(accounting(records).pending).toEqual([]);
  expectChained(ledgerLines(env.stateDir, "s"), "s");
});
