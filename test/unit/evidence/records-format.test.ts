/**
 * The record formats, pinned: member names and order of every record type (a change here is a
 * format change and needs a new type version, not an edit).
 */
import { expect, test } from "bun:test";
import { DecisionRecorder } from "../../../src/evidence/decision-recorder.ts";
import type { EvidenceLog } from "../../../src/evidence/evidence-log.ts";
import { type StopData, contextEvent, receiptEvent, stopEvent, stopEventV2 } from "../../../src/evidence/records.ts";

const ENVELOPE = ["specversion", "type", "source", "id", "time", "datacontenttype", "data"];

test("vigil.mcp.decision.v1", () => {
  const lines: string[] = [];
  const log = { append: (event: Record<string, unknown>) => (lines.push(JSON.stringify(event)), true) };
  const recorder = new DecisionRecorder(log, "vigil://h/a", "sha256:abc", false);
  recorder.record("s1", "fs", { request_id: 7, tool: "read_file", decision: "allow", reason_code: "P_ALLOW", reason: "r", matched_rule: null, arguments_sha256: "0".repeat(64) });
  recorder.record("s1", "fs", { request_id: 8, tool: "exec", decision: "deny", reason_code: "E_TOOL_DENIED", reason: "r", matched_rule: "tools.deny[0]", arguments_sha256: "1".repeat(64) });
  const [a, b] = lines.map((l) => JSON.parse(l));
  expect(Object.keys(a)).toEqual(["specversion", "type", "source", "id", "time", "datacontenttype", "subject", "data"]);
  expect(a.type).toBe("vigil.mcp.decision.v1");
  expect(a.id).toBe("evt_decision_s1_0");
  expect(b.id).toBe("evt_decision_s1_1");
  expect(a.subject).toBe("read_file");
  expect(Object.keys(a.data)).toEqual([
    "session_id", "seq", "server_id", "request_id", "tool", "decision", "reason_code", "reason",
    "matched_rule", "policy_digest", "arguments_sha256", "dry_run",
  ]);
  expect(b.data.seq).toBe(1);
});

test("vigil.mcp.receipt.v1", () => {
  const e = receiptEvent("vigil://h/a", {
    session_id: "s1", seq: 0, request_id: 1, method: "tools/call", tool: "x", outcome: "response",
    request_sha256: "a".repeat(64), response_sha256: "b".repeat(64), request_bytes: 10, response_bytes: 20,
    started_at: "2026-01-01T00:00:00.000Z", duration_us: 5,
  });
  expect(Object.keys(e)).toEqual(ENVELOPE);
  expect(e.id).toBe("evt_receipt_s1_0");
});

test("vigil.mcp.session.context.v1 and session.stop.v1", () => {
  const ctx = contextEvent("vigil://h/a", {
    session_id: "s1", server_id: "fs", server_pid: 42, event_source: "vigil://h/a", started_at: "t", vigil_version: "0",
    command_sha256: "c".repeat(64), policy_digest: null, dry_run: false, protocol_version: "2025-11-25",
    client_info: null, server_info: null, outputs: { decision_log: "new", receipts: true, session_stop: true },
  });
  expect(Object.keys(ctx)).toEqual(ENVELOPE);
  expect(ctx.id).toBe("evt_context_s1");
  const stop = stopEvent("vigil://h/a", {
    session_id: "s1", server_id: "fs", server_pid: 42, session_context_id: "evt_context_s1", session_end: "client_closed",
    status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null }, kill_requested: false,
    decision_log: "complete", decision_events_written: 2, decision_events_dropped: 0, decision_prefix_sha256: "d".repeat(64),
    receipts: null, counts: { client_messages: 1, server_messages: 1, rejected_frames: 0, server_garbage_lines: 0, oversized: 0 },
  });
  expect(stop.id).toBe("evt_stop_s1");
  expect(Object.keys(stop.data as object)).toEqual([
    "session_id", "server_id", "server_pid", "session_context_id", "session_end", "termination", "exit_code", "signal",
    "core_dumped", "kill_requested", "decision_log", "decision_events_written", "decision_events_dropped",
    "decision_prefix_sha256", "receipts", "counts", "assertion_basis", "non_claims",
  ]);
  expect((stop.data as { non_claims: string[] }).non_claims).toEqual(["execution_proof", "authentication", "global_coverage", "durable_storage_proof"]);
});

const STOP_DATA: StopData = {
  session_id: "s1", server_id: "fs", server_pid: 42, session_context_id: "evt_context_s1", session_end: "client_closed",
  status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null }, kill_requested: false,
  decision_log: "complete", decision_events_written: 2, decision_events_dropped: 0, decision_prefix_sha256: "d".repeat(64),
  receipts: { written: 3, dropped: 0, prefix_sha256: "e".repeat(64) },
  counts: { client_messages: 1, server_messages: 1, rejected_frames: 0, server_garbage_lines: 0, oversized: 0 },
};

test("vigil.mcp.session.stop.v2: v1's members, then chains and checkpoints before assertion_basis", () => {
  const chains = { "decisions.ndjson": { count: 2, head: "a".repeat(64) }, "receipts.ndjson": { count: 3, head: "b".repeat(64) } };
  const stop = stopEventV2("vigil://h/a", { ...STOP_DATA, chains, checkpoints: { written: 1 } });
  expect(Object.keys(stop)).toEqual(ENVELOPE);
  expect(stop.type).toBe("vigil.mcp.session.stop.v2");
  expect(stop.id).toBe("evt_stop_s1");
  const v1 = stopEvent("vigil://h/a", STOP_DATA);
  const v1Keys = Object.keys(v1.data as object);
  expect(Object.keys(stop.data as object)).toEqual([...v1Keys.slice(0, -2), "chains", "checkpoints", ...v1Keys.slice(-2)]);
  // The exact bytes of what v2 adds (the chains' own members in order: count, head).
  const text = JSON.stringify(stop.data);
  const v1Text = JSON.stringify(v1.data);
  const added = `,"chains":{"decisions.ndjson":{"count":2,"head":"${"a".repeat(64)}"},"receipts.ndjson":{"count":3,"head":"${"b".repeat(64)}"}},"checkpoints":{"written":1}`;
  const at = v1Text.indexOf(',"assertion_basis"');
  expect(text).toBe(v1Text.slice(0, at) + added + v1Text.slice(at));
  const unsigned = stopEventV2("vigil://h/a", { ...STOP_DATA, chains: {}, checkpoints: null });
  expect((unsigned.data as { chains: unknown; checkpoints: unknown }).chains).toEqual({});
  expect((unsigned.data as { checkpoints: unknown }).checkpoints).toBeNull();
});
