// Kill -9 trials of the event ledger (serve.md "Evidence"; issue 14): the ledger is written in the
// same commit as the pending-log change it describes, so a crash at any point leaves the two in
// agreement once the next open has recovered. Against the compiled daemon, the HTTP events fixture
// (its own process: it outlives every vigil killed here) and the mock model.
//
// Each round (two cycles of six) emits a burst and SIGKILLs the daemon at a different point — as soon as the burst is
// out, once its events are in the pending log, once the model has a batch, once a batch is recorded
// delivered, once everything is delivered — then checks, on the files alone, that the ledger as the
// next open recovers it (its lines, then the lines the pending log embeds for it) is one chain from
// the session's anchor, that every received seq is delivered, dropped or still pending, and that
// its pending set equals the pending log's live entries (adds minus dones, replayed here). The
// restart must then have written exactly those recovered lines first. No timing is asserted; every
// wait is bounded and waits for a state.
import { expect, test } from "bun:test";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { EVIDENCE_CONFIG, type LedgerRecord, accounting, expectChained, ledgerAfterRecovery, ledgerLines, ledgerOnDisk, ofType } from "../helpers/events-ledger.ts";
import { EVENTS_SESSION, type EventsEnv, eventsEnvironment, httpServer, pendingOnDisk, startEventsDaemon } from "../helpers/events-serve.ts";
import type { Daemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();
const S = EVENTS_SESSION;
/** Two cycles through the kill points, with small bursts, then with bursts that make bigger batches. */
const BURSTS = [6, 25];

type KillPoint = { name: string; when: (env: EventsEnv, ids: string[]) => boolean | Promise<boolean> };

const parse = (lines: readonly string[]) => lines.map((l) => JSON.parse(l) as LedgerRecord);
const seqsOfIds = (env: EventsEnv, ids: string[]) =>
  ofType(ledgerOnDisk(env.stateDir, S), "received").filter((r) => ids.includes(r.data.event_id)).map((r) => r.data.seq as number);

const KILL_POINTS: KillPoint[] = [
  { name: "as soon as the burst is out", when: () => true },
  { name: "once one of its events is in the pending log", when: (env, ids) => pendingOnDisk(env.stateDir, S).some((p) => ids.includes(String(p.event.eventId))) },
  { name: "once the model has a batch with one of its events", when: (env, ids) => env.model.requests.some((r) => ids.some((id) => JSON.stringify(r.body ?? "").includes(`event_id=\\"${id}\\"`))) },
  {
    name: "once a batch with one of its events is recorded delivered",
    when: (env, ids) => {
      const seqs = new Set(seqsOfIds(env, ids));
      return ofType(ledgerOnDisk(env.stateDir, S), "delivered").some((d) => (d.data.seqs as number[]).some((s) => seqs.has(s)));
    },
  },
  {
    name: "once all of it is recorded delivered",
    when: (env, ids) => {
      const a = accounting(ledgerOnDisk(env.stateDir, S));
      const seqs = seqsOfIds(env, ids);
      return seqs.length >= ids.length && seqs.every((s) => a.delivered.has(s));
    },
  },
  { name: "as soon as the next burst is out", when: () => true },
];

/** The crash invariant, on the files alone: returns the ledger's lines as the next open recovers them. */
function expectAgreement(env: EventsEnv, point: string): string[] {
  const recovered = ledgerAfterRecovery(env.stateDir, S);
  expectChained(recovered, S);
  const a = accounting(parse(recovered));
  const live = pendingOnDisk(env.stateDir, S).map((p) => p.seq);
  expect({ point, unknown: a.unknown, pending: a.pending }).toEqual({ point, unknown: [], pending: live });
  return recovered;
}

test("kill -9 at varying points: the ledger and the pending log agree after every crash, and the chain links across restarts", async () => {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])], config: EVIDENCE_CONFIG });
  const fixture = env.fixture!;
  const emitted: string[] = [];
  let recovered: string[] = [];
  let daemon: Daemon;

  for (const [point, size] of BURSTS.flatMap((n) => KILL_POINTS.map((p) => [p, n] as const))) {
    daemon = await startEventsDaemon(cleanups, env);
    // The open appended the recovered lines before anything else.
    const first = recovered;
    await waitFor(() => ledgerLines(env.stateDir, S).length >= first.length, { timeoutMs: E2E_WAIT_MS, label: `the restart recovered ${first.length} ledger lines` });
    expect(ledgerLines(env.stateDir, S).slice(0, first.length)).toEqual(first);
    // The subscription has taken its position (a first poll, and one after it).
    const polls = (await fixture.state()).polls;
    await waitFor(async () => (await fixture.state()).polls >= polls + 2, { timeoutMs: E2E_WAIT_MS, label: "two polls after the start" });

    const burst = await fixture.control<{ first_seq: number; last_seq: number }>("emit_burst", { name: "build.finished", count: size });
    const ids = Array.from({ length: size }, (_, i) => `evt-${burst.first_seq + i}`);
    emitted.push(...ids);
    await waitFor(() => point.when(env, ids), { timeoutMs: E2E_WAIT_MS, label: `kill point: ${point.name}` });
    daemon.client.killGroup("SIGKILL");
    await daemon.client.exited(10_000);
    recovered = expectAgreement(env, point.name);
  }

  // A last start: everything emitted is received and delivered, then a graceful stop.
  daemon = await startEventsDaemon(cleanups, env);
  await waitFor(() => {
    const records = ledgerOnDisk(env.stateDir, S);
    const received = new Set(ofType(records, "received").map((r) => r.data.event_id));
    return emitted.every((id) => received.has(id)) && accounting(records).pending.length === 0 && pendingOnDisk(env.stateDir, S).length === 0;
  }, { timeoutMs: 30_000, label: "every emitted event received and delivered" });
  process.kill(daemon.client.pid, "SIGTERM");
  expect((await daemon.client.exited(15_000)).code).toBe(0);

  const lines = ledgerLines(env.stateDir, S);
  expect(lines.slice(0, recovered.length)).toEqual(recovered);
  expectChained(lines, S);
  const a = accounting(parse(lines));
  expect(a.unknown).toEqual([]);
  expect(a.pending).toEqual([]);
  expect(a.dropped.size).toBe(0);
  // Delivered at least once each: a crash after a batch ran but before its done was committed delivers it again.
  expect(a.queued.every((s) => a.delivered.has(s))).toBe(true);
}, 120_000);
