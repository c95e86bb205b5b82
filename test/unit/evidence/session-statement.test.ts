/**
 * The statement of a signed wrap capture (capture.dsse.json), pinned: subjects sorted by name,
 * the predicate's members and their order, and how it follows the stop record's data.
 */
import { expect, test } from "bun:test";
import type { StopDataV2 } from "../../../src/evidence/records.ts";
import { wrapSessionPredicate, wrapSessionStatement } from "../../../src/evidence/session-statement.ts";

const STOP: StopDataV2 = {
  session_id: "s1", server_id: "fs", server_pid: 42, session_context_id: "evt_context_s1", session_end: "server_exited",
  status: { termination: "signaled", exit_code: null, signal: 9, core_dumped: false }, kill_requested: true,
  decision_log: "incomplete", decision_events_written: 2, decision_events_dropped: 1, decision_prefix_sha256: "d".repeat(64),
  receipts: { written: 3, dropped: 0, prefix_sha256: "e".repeat(64) },
  counts: { client_messages: 1, server_messages: 1, rejected_frames: 0, server_garbage_lines: 0, oversized: 0 },
  chains: { "decisions.ndjson": { count: 2, head: "a".repeat(64) }, "receipts.ndjson": { count: 3, head: "b".repeat(64) } },
  checkpoints: { written: 4 },
};
const FACTS = { eventSource: "vigil://h/a", policyDigest: "sha256:" + "c".repeat(64), version: "1.2.3", binarySha256: "f".repeat(64), stop: STOP };

test("the predicate: members in order, the stop's accounting, the chains and the checkpoints", () => {
  const p = wrapSessionPredicate(FACTS);
  expect(JSON.stringify(p)).toBe(
    JSON.stringify({
      session_id: "s1",
      event_source: "vigil://h/a",
      server_id: "fs",
      policy_digest: FACTS.policyDigest,
      producer: { name: "vigil", version: "1.2.3", binary_sha256: "f".repeat(64) },
      stop: {
        session_end: "server_exited", termination: "signaled", exit_code: null, signal: 9, decision_log: "incomplete",
        decision_events_written: 2, decision_events_dropped: 1, receipts: { written: 3, dropped: 0 },
      },
      logs: { "decisions.ndjson": { count: 2, head: "a".repeat(64) }, "receipts.ndjson": { count: 3, head: "b".repeat(64) } },
      checkpoints: { written: 4 },
    }),
  );
});

test("no policy, no receipts: nulls, not absent members", () => {
  const p = wrapSessionPredicate({ ...FACTS, policyDigest: null, stop: { ...STOP, receipts: null, chains: { "decisions.ndjson": STOP.chains["decisions.ndjson"]! } } });
  expect(p.policy_digest).toBeNull();
  expect((p.stop as { receipts: unknown }).receipts).toBeNull();
  expect(Object.keys(p.logs as object)).toEqual(["decisions.ndjson"]);
});

test("the statement: in-toto v1, subjects sorted by name whatever the input order", () => {
  const s = wrapSessionStatement({ "session-stop.json": "1".repeat(64), "capture.json": "2".repeat(64), "decisions.ndjson": "3".repeat(64) }, FACTS);
  expect(Object.keys(s)).toEqual(["_type", "subject", "predicateType", "predicate"]);
  expect(s._type).toBe("https://in-toto.io/Statement/v1");
  expect(s.predicateType).toBe("https://vigil.dev/attestation/mcp-session/v1");
  expect(s.subject).toEqual([
    { name: "capture.json", digest: { sha256: "2".repeat(64) } },
    { name: "decisions.ndjson", digest: { sha256: "3".repeat(64) } },
    { name: "session-stop.json", digest: { sha256: "1".repeat(64) } },
  ]);
  expect(s.predicate).toEqual(wrapSessionPredicate(FACTS));
});
