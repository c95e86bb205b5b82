/**
 * The signed stop statement of a serve session: the pure predicate/statement builder
 * (src/evidence/serve-stop.ts, member order pinned) and the session's evidence around it
 * (src/serve/session-evidence.ts): decisions continued across reopenings, checkpoints numbered on,
 * stops/<n>.dsse.json verifying and hashing the files as they stood.
 */
import { expect, test } from "bun:test";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { chainAnchor, checkChain } from "../../../src/evidence/chain.ts";
import { DecisionRecorder } from "../../../src/evidence/decision-recorder.ts";
import { IN_TOTO_PAYLOAD_TYPE, ed25519Signer, verifyEnvelope } from "../../../src/evidence/dsse.ts";
import { keyIdOf } from "../../../src/evidence/keys.ts";
import { MAX_STOP_PENDING_LISTED, nextStopNumber, pendingClaim, serveStopPredicate, serveStopStatement, stopNumberOf } from "../../../src/evidence/serve-stop.ts";
import { SERVE_STOP_PREDICATE, STATEMENT_TYPE } from "../../../src/evidence/statement.ts";
import { checkpointNumberOf } from "../../../src/evidence/log-tail.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";
import { SessionEvidence } from "../../../src/serve/session-evidence.ts";
import { FakeScheduler } from "../../helpers/fake-scheduler.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const H = (c: string) => c.repeat(64);
const INPUT = {
  sessionId: "s1",
  eventSource: "vigil://test",
  policyDigest: null,
  version: "1.2.3",
  stop: 2,
  reason: "reaped" as const,
  logs: { "events.ndjson": { count: 3, head: H("b") }, "decisions.ndjson": { count: 5, head: H("a") } },
  checkpointsWritten: 4,
  pending: [9, 2],
  subjects: [{ name: "events.ndjson", digest: { sha256: H("d") } }, { name: "checkpoints.ndjson", digest: { sha256: H("c") } }],
};

test("the predicate: members in the decided order, logs by name, pending ascending", () => {
  const p = serveStopPredicate(INPUT);
  expect(JSON.stringify(p)).toBe(
    JSON.stringify({
      session_id: "s1",
      event_source: "vigil://test",
      policy_digest: null,
      producer: { name: "vigil", version: "1.2.3" },
      stop: 2,
      reason: "reaped",
      logs: { "decisions.ndjson": { count: 5, head: H("a") }, "events.ndjson": { count: 3, head: H("b") } },
      checkpoints: { written: 4 },
      events: { pending: [2, 9], pending_count: 2, pending_sha256: sha256Hex("[2,9]") },
    }),
  );
  const s = serveStopStatement(INPUT);
  expect(s._type).toBe(STATEMENT_TYPE);
  expect(s.predicateType).toBe(SERVE_STOP_PREDICATE);
  expect(s.subject.map((x) => x.name)).toEqual(["checkpoints.ndjson", "events.ndjson"]);
});

test("the pending seqs: the lowest MAX_STOP_PENDING_LISTED listed; the count and the digest cover them all", () => {
  const seqs = Array.from({ length: 30_000 }, (_, i) => 30_000 - i);
  const c = pendingClaim(seqs);
  expect(c.pending).toEqual(Array.from({ length: MAX_STOP_PENDING_LISTED }, (_, i) => i + 1));
  expect(c.pending_count).toBe(30_000);
  expect(c.pending_sha256).toBe(sha256Hex(JSON.stringify([...seqs].reverse())));
  // 30,000 pending entries still make a small statement (the verifier reads one of at most 256 KiB).
  const statement = serveStopStatement({ ...INPUT, pending: seqs });
  expect(Buffer.byteLength(JSON.stringify(statement)) * 4 / 3).toBeLessThan(32 * 1024);
});

test("stop numbers: 1 first, then one past the highest stop file; other names ignored", () => {
  expect(nextStopNumber([])).toBe(1);
  expect(nextStopNumber(["1.dsse.json", "3.dsse.json", "x.json", "07.dsse.json", "2.dsse.json.tmp"])).toBe(4);
  expect(stopNumberOf("12.dsse.json")).toBe(12);
  expect(stopNumberOf("0.dsse.json")).toBeNull();
});

test("session evidence: decisions continue across reopenings, checkpoints number on, each stop is signed over the files as they stood", () => {
  using tmp = tmpDir("vigil-unit-serve-stop");
  const { privateKey } = generateKeyPairSync("ed25519");
  const pub = createPublicKey(privateKey);
  const signer = ed25519Signer(keyIdOf(pub), privateKey);
  const config = { event_source: "vigil://test", decision_log: true, checkpoint_every: 2 };
  const said: string[] = [];
  const setup = { signer, policyDigest: "p".repeat(64), version: "9.9.9", scheduler: new FakeScheduler(), log: (m: string) => said.push(m) };
  const seen: { decisions: string; checkpoints: string }[] = [];

  for (const [run, reason] of [[0, "shutdown"], [1, "reaped"]] as const) {
    const ev = SessionEvidence.open(config, setup, "s1", tmp.path);
    const log = ev.decisions!;
    const recorder = new DecisionRecorder(log, "vigil://test", null, false, log.head().count);
    for (let i = 0; i < 3; i++) {
      recorder.record("s1", "srv", { request_id: i, tool: "t", decision: "allow", reason_code: "allowed", reason: "", matched_rule: null, arguments_sha256: H("0") });
    }
    ev.stop(reason);
    seen.push({ decisions: readFileSync(join(tmp.path, "decisions.ndjson"), "utf8"), checkpoints: readFileSync(join(tmp.path, "checkpoints.ndjson"), "utf8") });
    expect(readdirSync(join(tmp.path, "stops"))).toHaveLength(run + 1);
  }

  const decisions = seen[1]!.decisions.trimEnd().split("\n").map((l) => ({ raw: Buffer.from(l), value: JSON.parse(l) as { id: string; data: { seq: number } } }));
  expect(checkChain(decisions, chainAnchor("vigil://test", "s1", "decisions.ndjson")).break).toBeNull();
  expect(decisions.map((d) => d.value.data.seq)).toEqual([0, 1, 2, 3, 4, 5]);
  expect(new Set(decisions.map((d) => d.value.id)).size).toBe(6);
  // Every 2 records: one checkpoint per run (the third record is left to the stop), numbered on across the reopening.
  const numbers = seen[1]!.checkpoints.trimEnd().split("\n").map((l) => checkpointNumberOf(Buffer.from(l)));
  expect(numbers).toEqual([0, 1]);

  const dir = join(tmp.path, "stops");
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  for (const n of [1, 2]) {
    const path = join(dir, `${n}.dsse.json`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const check = verifyEnvelope(JSON.parse(readFileSync(path, "utf8")), [{ keyid: signer.keyid, key: pub, file: "k.pub" }], IN_TOTO_PAYLOAD_TYPE);
    if (!check.ok) throw new Error(check.message);
    const s = JSON.parse(check.payload.toString("utf8"));
    const then = seen[n - 1]!;
    expect(s.subject).toEqual([
      { name: "checkpoints.ndjson", digest: { sha256: sha256Hex(then.checkpoints) } },
      { name: "decisions.ndjson", digest: { sha256: sha256Hex(then.decisions) } },
    ]);
    expect(s.predicate.stop).toBe(n);
    expect(s.predicate.reason).toBe(n === 1 ? "shutdown" : "reaped");
    expect(s.predicate.policy_digest).toBe("p".repeat(64));
    expect(s.predicate.logs["decisions.ndjson"].count).toBe(3 * n);
    expect(s.predicate.checkpoints).toEqual({ written: then.checkpoints.trimEnd().split("\n").length });
    expect(s.predicate.events).toEqual({ pending: [], pending_count: 0, pending_sha256: sha256Hex("[]") });
  }
  expect(said.filter((m) => m.includes("not written"))).toEqual([]);
});

test("without a key: no checkpoints, no stops; close() writes no stop", () => {
  using tmp = tmpDir("vigil-unit-serve-stop");
  const ev = SessionEvidence.open({ event_source: "vigil://test", decision_log: true }, { signer: null, policyDigest: null, version: "1" }, "s1", tmp.path);
  expect(ev.signed).toBe(false);
  ev.decisions!.append({ data: {} });
  ev.stop("shutdown");
  expect(readdirSync(tmp.path)).toEqual(["decisions.ndjson"]);
});
