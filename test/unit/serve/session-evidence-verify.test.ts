/**
 * A serve session's evidence (src/serve/session-evidence.ts, with a real events store keeping the
 * ledger) held against `vigil verify`'s session verifier (src/verify/session/), across restarts and
 * crashes the writer must survive without leaving the session unverifiable:
 * - ledger records the store's opening appends (a crash between the pending log's commit point and
 *   the ledger's append) come before the ledger is attached: no checkpoint may leave it out;
 * - `decision_log: false` after runs that wrote a decision log: the stops still name it;
 * - a line a failed write left after a log's last record: the stop hashes the lines it counts;
 * - a stop envelope appears whole (a temp file, then a link), stale temps are swept.
 */
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DecisionRecorder } from "../../../src/evidence/decision-recorder.ts";
import { type Signer, type TrustedKey, ed25519Signer } from "../../../src/evidence/dsse.ts";
import { keyIdOf } from "../../../src/evidence/keys.ts";
import { publishRecordFile } from "../../../src/evidence/publish-file.ts";
import { RecordWriteError } from "../../../src/evidence/record-file.ts";
import { LEDGER_CURSOR_MAX_CHARS } from "../../../src/evidence/ledger-records.ts";
import { OCCURRENCE_LIMITS } from "../../../src/events/rules/occurrence.ts";
import { EventsStore, type FaultOp } from "../../../src/events/store/events-store.ts";
import { setQuiet } from "../../../src/shared/log.ts";
import { SessionEvidence } from "../../../src/serve/session-evidence.ts";
import { loadSession } from "../../../src/verify/session/load-session.ts";
import { verifySession } from "../../../src/verify/session/verify-session.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const SOURCE = "vigil://test/session-evidence";
const NAME = "ops";

function key(): { signer: Signer; trusted: TrustedKey } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const keyid = keyIdOf(publicKey);
  return { signer: ed25519Signer(keyid, privateKey), trusted: { keyid, key: publicKey, file: "k.pub" } };
}
const KEY = key();

/** A session dir named like the session (the verifier takes the name from it). */
function sessionDir() {
  const tmp = tmpDir("vigil-unit-session-evidence");
  return { tmp, dir: join(tmp.path, NAME) };
}

function evidence(dir: string, config: { decision_log?: boolean; checkpoint_every?: number } = {}): SessionEvidence {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return SessionEvidence.open(
    { event_source: SOURCE, decision_log: config.decision_log ?? true, checkpoint_every: config.checkpoint_every ?? 1 },
    { signer: KEY.signer, policyDigest: null, version: "0.0.0-test", scheduler: new FakeScheduler(), log: () => {} },
    NAME,
    dir,
  );
}

function store(dir: string, ev: SessionEvidence, fault?: (op: FaultOp) => void): Promise<EventsStore> {
  return EventsStore.open(dir, {
    maxPending: 100,
    maxPendingBytes: 1 << 20,
    scheduler: new FakeScheduler(),
    ledger: { eventSource: SOURCE, sessionId: NAME, onWritten: (n) => ev.noteWritten(n) },
    ...(fault === undefined ? {} : { fault }),
  });
}

const attach = (ev: SessionEvidence, s: EventsStore) => ev.attachLedger({ source: s.ledger!, pending: () => s.ledger!.pendingSeqs() });
const FACTS = { subscriptionKey: "tickets\u0000build.finished\u0000{}", delivery: "poll" as const };
const entry = (id: string) => ({ action: "follow_up" as const, server: "tickets", name: "build.finished", arguments: {}, event: { eventId: id } });
/** One allow decision recorded in the session's decision log (its seq goes on from the log's count). */
function decision(ev: SessionEvidence): void {
  const log = ev.decisions!;
  new DecisionRecorder(log, SOURCE, null, false, log.head().count).record(NAME, "fx", {
    request_id: 1, tool: "echo", decision: "allow", reason_code: "P_ALLOW", reason: "allowed", matched_rule: null, arguments_sha256: "0".repeat(64),
  });
}

const verdict = (dir: string) => {
  const r = verifySession(loadSession(dir), { trusted: [KEY.trusted] });
  return { verdict: r.verdict, codes: r.reasons.map((f) => f.code), authenticated: r.authentication.authenticated };
};
const checkpointLogs = (dir: string) =>
  readFileSync(join(dir, "checkpoints.ndjson"), "utf8").trimEnd().split("\n").map((l) => Object.keys(JSON.parse(Buffer.from(JSON.parse(l).payload, "base64").toString()).logs).sort());

describe("serve session evidence against the session verifier", () => {
  test("ledger records appended by the store's opening wait for the ledger to be attached: every checkpoint names it", async () => {
    setQuiet(true);
    const { tmp, dir } = sessionDir();
    try {
      // Run 1: an event received and checkpointed, a clean stop.
      const ev1 = evidence(dir);
      const s1 = await store(dir, ev1);
      attach(ev1, s1);
      const e = s1.tryAdd(entry("e1"), FACTS)!;
      await s1.close();
      ev1.stop("shutdown");
      // Run 2 "crashes" after its pass's commit point: the delivered record is in the pending log only.
      const ev2 = evidence(dir);
      const s2 = await store(dir, ev2, (op) => {
        if (op === "ledger_append") throw Object.assign(new Error("EIO: injected"), { code: "EIO" });
      });
      attach(ev2, s2);
      s2.markDone([e.seq], { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
      await s2.commit().catch(() => {});
      await s2.close();
      ev2.close();
      // Run 3: its store's opening appends that record; then a decision, a stop.
      const ev3 = evidence(dir);
      const s3 = await store(dir, ev3);
      attach(ev3, s3);
      decision(ev3);
      await s3.close();
      ev3.stop("shutdown");

      for (const logs of checkpointLogs(dir)) expect(logs).toEqual(["decisions.ndjson", "events.ndjson"]);
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
      setQuiet(false);
    }
  });

  test("a gap quoting the id of the event it skipped: its delivery and its drop name no event id, as its gap record names none", async () => {
    const { tmp, dir } = sessionDir();
    try {
      const ev = evidence(dir);
      const s = await store(dir, ev);
      attach(ev, s);
      const gap = (id: string) => ({ ...entry(id), event: { gap: true as const, cursor: null, reason: "oversized", eventId: id } });
      const a = s.tryAdd(gap("big-1"), { subscriptionKey: FACTS.subscriptionKey })!;
      const b = s.tryAdd(gap("big-2"), { subscriptionKey: FACTS.subscriptionKey })!;
      await s.commit();
      s.markDone([a.seq], { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
      s.markDone([b.seq], { dropped: { attempts: 3, errorCode: "run_failed" } });
      await s.close();
      ev.stop("shutdown");
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("a gap carrying the longest cursor the store keeps is a valid ledger record", async () => {
    expect(LEDGER_CURSOR_MAX_CHARS).toBe(OCCURRENCE_LIMITS.cursorChars);
    const { tmp, dir } = sessionDir();
    try {
      const ev = evidence(dir);
      const s = await store(dir, ev);
      attach(ev, s);
      const cursor = "c".repeat(OCCURRENCE_LIMITS.cursorChars);
      const g = s.tryAdd({ ...entry("x"), event: { gap: true, cursor, reason: "truncated", eventId: null } }, { subscriptionKey: FACTS.subscriptionKey })!;
      s.markDone([g.seq], { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
      await s.close();
      ev.stop("shutdown");
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("a checkpoint torn by a kill: verify takes the lines before it; the restart cuts it and numbers on from the last whole one", () => {
    const { tmp, dir } = sessionDir();
    try {
      const said: string[] = [];
      const ev1 = evidence(dir);
      decision(ev1);
      decision(ev1);
      ev1.close(); // the process died: no stop
      const path = join(dir, "checkpoints.ndjson");
      const whole = readFileSync(path, "utf8");
      const lines = whole.trimEnd().split("\n");
      appendFileSync(path, lines.at(-1)!.slice(0, 100));
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
      const ev2 = SessionEvidence.open(
        { event_source: SOURCE, decision_log: true, checkpoint_every: 1 },
        { signer: KEY.signer, policyDigest: null, version: "0.0.0-test", scheduler: new FakeScheduler(), log: (m) => said.push(m) },
        NAME,
        dir,
      );
      expect(said.join("\n")).toContain("cut a torn tail of 100 bytes");
      expect(readFileSync(path, "utf8")).toBe(whole);
      decision(ev2);
      ev2.stop("shutdown");
      const numbers = readFileSync(path, "utf8").trimEnd().split("\n").map((l) => JSON.parse(Buffer.from(JSON.parse(l).payload, "base64").toString()).checkpoint);
      expect(numbers).toEqual([0, 1, 2]);
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("decision_log: false after a run that wrote one: checkpoints and stops still name it", async () => {
    const { tmp, dir } = sessionDir();
    try {
      const ev1 = evidence(dir);
      decision(ev1);
      ev1.stop("shutdown");
      const ev2 = evidence(dir, { decision_log: false });
      expect(ev2.decisions).toBeNull();
      const s2 = await store(dir, ev2);
      attach(ev2, s2);
      s2.tryAdd(entry("e1"), FACTS);
      await s2.commit();
      s2.markDone([1], { delivered: { batchTag: "mcp_events:1", runId: "run_1" } });
      await s2.close();
      ev2.stop("shutdown");
      expect(readdirSync(join(dir, "stops")).sort()).toEqual(["1.dsse.json", "2.dsse.json"]);
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("a torn line a failed write left after the last decision: the stop hashes the lines it counts (the tail is not covered, nothing mismatches)", () => {
    const { tmp, dir } = sessionDir();
    try {
      const ev = evidence(dir, { checkpoint_every: 1000 });
      decision(ev);
      decision(ev);
      appendFileSync(join(dir, "decisions.ndjson"), '{"specversion":"1.0","type":"vigil.mc');
      ev.stop("shutdown");
      expect(verdict(dir)).toEqual({ verdict: "incomplete", codes: ["not_covered"], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("logs over the 1 MiB read piece (lines across pieces): the stop's subject digests are the verifier's", () => {
    const { tmp, dir } = sessionDir();
    try {
      const ev = evidence(dir, { checkpoint_every: 1000 });
      for (let i = 0; i < 4000; i++) decision(ev);
      ev.stop("shutdown");
      expect(readFileSync(join(dir, "decisions.ndjson")).length).toBeGreaterThan(2 << 20);
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });
    } finally {
      tmp.cleanup();
    }
  });

  test("a stop envelope is published whole: temp then link, never over a file; stale temps of dead writers are swept", () => {
    const { tmp, dir } = sessionDir();
    try {
      const ev1 = evidence(dir);
      decision(ev1);
      ev1.stop("shutdown");
      const stops = join(dir, "stops");
      // What a writer killed mid-publish leaves (pid 2^22+1 is past pid_max's default: not alive).
      const stale = ".2.dsse.json.tmp-4194305-1-abc";
      writeFileSync(join(stops, stale), '{"payloadType":');
      const ev2 = evidence(dir);
      decision(ev2);
      ev2.stop("shutdown");
      expect(readdirSync(stops).sort()).toEqual(["1.dsse.json", "2.dsse.json"]);
      expect(verdict(dir)).toEqual({ verdict: "closed", codes: [], authenticated: true });

      const path = join(stops, "2.dsse.json");
      let err: unknown;
      try {
        publishRecordFile(path, { x: 1 });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RecordWriteError);
      expect((err as { cause?: { code?: string } }).cause?.code).toBe("EEXIST");
      expect(readdirSync(stops).sort()).toEqual(["1.dsse.json", "2.dsse.json"]);
      expect(existsSync(path)).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });
});
