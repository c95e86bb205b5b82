/**
 * The event ledger's record formats (serve.md "Evidence"), pinned byte for byte: member names and
 * order of the four record types, the ledger's ids, and their chain from the events.ndjson anchor.
 * A change here is a format change and needs a new type version, not an edit.
 */
import { expect, test } from "bun:test";
import { Chain, chainAnchor, checkChain } from "../../../src/evidence/chain.ts";
import { deliveredRecord, droppedRecord, gapRecord, receivedRecord } from "../../../src/evidence/ledger-records.ts";

const T = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const SRC = "vigil://host/agent";
const A = "a".repeat(64);

const GOLDEN = [
  `{"specversion":"1.0","type":"vigil.mcp.event.received.v1","source":"vigil://host/agent","id":"evt_ledger_s1_0","time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","vigilseq":0,"vigilprev":"01ba4eae0cb3e88f7e67e887d1f9d3166f6a433c583a7fd415cfc22a200095e2","data":{"session_id":"s1","seq":1,"server":"tickets","event_name":"build.finished","subscription_key_sha256":"${A}","delivery_mode":"poll","action":"follow_up","event_id":"e-1","payload_sha256":"${"b".repeat(64)}"}}`,
  `{"specversion":"1.0","type":"vigil.mcp.event.gap.v1","source":"vigil://host/agent","id":"evt_ledger_s1_1","time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","vigilseq":1,"vigilprev":"d02cc3c48292a171547336bc384b4849b8368d02e864b5850c027b022ebf76ee","data":{"session_id":"s1","seq":2,"server":"tickets","event_name":"build.finished","subscription_key_sha256":"${A}","reason":"truncated","cursor":"17"}}`,
  `{"specversion":"1.0","type":"vigil.mcp.event.delivered.v1","source":"vigil://host/agent","id":"evt_ledger_s1_2","time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","vigilseq":2,"vigilprev":"0b8ec5be0b782a5730cdb5e153004a288cda21c7ceea59f6fe89f13c57f2d981","data":{"session_id":"s1","batch_tag":"mcp_events:3","run_id":"run_9","seqs":[1,2],"event_ids":["e-1",null]}}`,
  `{"specversion":"1.0","type":"vigil.mcp.event.received.v1","source":"vigil://host/agent","id":"evt_ledger_s1_3","time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","vigilseq":3,"vigilprev":"c5cd68095cdf57641f4340e55f81d6d024ba57b3c7e9beceef65a22ca034e6c6","data":{"session_id":"s1","seq":null,"server":"tickets","event_name":"note","subscription_key_sha256":"${"c".repeat(64)}","delivery_mode":"webhook","action":"notify","event_id":null,"payload_sha256":"${"d".repeat(64)}"}}`,
  `{"specversion":"1.0","type":"vigil.mcp.event.dropped.v1","source":"vigil://host/agent","id":"evt_ledger_s1_4","time":"2026-01-02T03:04:05.678Z","datacontenttype":"application/json","vigilseq":4,"vigilprev":"b16a3a4632400e873ffff47f72edeb13fa2ab775d34ea19cb0af554cdaec0b5b","data":{"session_id":"s1","seq":5,"event_id":"e-5","attempts":3,"error_code":"run_failed"}}`,
];

function records(): Record<string, unknown>[] {
  return [
    receivedRecord(SRC, 0, { session_id: "s1", seq: 1, server: "tickets", event_name: "build.finished", subscription_key_sha256: A, delivery_mode: "poll", action: "follow_up", event_id: "e-1", payload_sha256: "b".repeat(64) }, T),
    gapRecord(SRC, 1, { session_id: "s1", seq: 2, server: "tickets", event_name: "build.finished", subscription_key_sha256: A, reason: "truncated", cursor: "17" }, T),
    deliveredRecord(SRC, 2, { session_id: "s1", batch_tag: "mcp_events:3", run_id: "run_9", seqs: [1, 2], event_ids: ["e-1", null] }, T),
    receivedRecord(SRC, 3, { session_id: "s1", seq: null, server: "tickets", event_name: "note", subscription_key_sha256: "c".repeat(64), delivery_mode: "webhook", action: "notify", event_id: null, payload_sha256: "d".repeat(64) }, T),
    droppedRecord(SRC, 4, { session_id: "s1", seq: 5, event_id: "e-5", attempts: 3, error_code: "run_failed" }, T),
  ];
}

test("received, gap, delivered, notify-received and dropped records, chained from the events.ndjson anchor, byte for byte", () => {
  const anchor = chainAnchor(SRC, "s1", "events.ndjson");
  const chain = Chain.start(anchor);
  const lines = records().map((r) => {
    const line = chain.line(r);
    chain.advance(line);
    return line;
  });
  expect(lines).toEqual(GOLDEN);
  const checked = checkChain(lines.map((l) => ({ raw: Buffer.from(l), value: JSON.parse(l) })), anchor);
  expect(checked.break).toBeNull();
  expect(checked.head).toEqual({ count: 5, head: "bd79bbc4dcd3b6a09ce28455a0aca33e8c78b8569d9f682dec9742297bb2f1a8" });
});

test("the builders copy what they are given (a caller's later change does not reach a built record)", () => {
  const seqs = [1, 2];
  const ids: (string | null)[] = ["e-1", null];
  const r = deliveredRecord(SRC, 0, { session_id: "s1", batch_tag: "t", run_id: "r", seqs, event_ids: ids }, T);
  seqs.push(3);
  ids.push("x");
  expect((r.data as { seqs: number[] }).seqs).toEqual([1, 2]);
  expect((r.data as { event_ids: unknown[] }).event_ids).toEqual(["e-1", null]);
});
