/**
 * The decision records of one client read are written together before anything of the read is
 * forwarded (client-relay.ts settle): the outcome per call is what deciding and writing them one
 * by one gives — the calls whose records were written are forwarded in order, the others are
 * denied (fail closed), and an id reused within the read is judged after the earlier call's fate.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { FileSink } from "bun";
import { LineSplitter } from "../../../src/shared/ndjson/line-splitter.ts";
import { LineWriter } from "../../../src/shared/ndjson/line-writer.ts";
import { relayClientFrames } from "../../../src/wrap/client-relay.ts";
import type { WrapOptions } from "../../../src/wrap/options.ts";
import { openPolicyGate } from "../../../src/wrap/policy-gate.ts";
import { ProxyState } from "../../../src/wrap/proxy-state.ts";
import { SessionEvidence } from "../../../src/wrap/session-evidence.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const dec = new TextDecoder();

function sink(into: string[]): FileSink {
  return { write: (b: Uint8Array | string) => (into.push(typeof b === "string" ? b : dec.decode(b)), b.length), flush: () => 0, end: () => 0 } as unknown as FileSink;
}

async function session(path: string, faultBytes?: number) {
  const gate = await openPolicyGate({ policyPath: null, dryRun: false } as WrapOptions);
  const evidence = new SessionEvidence(
    { captureDir: null, decisionLog: { path, mode: "new" }, receipts: null, context: null, stop: null, serverStderr: null, manifest: null },
    { eventSource: "vigil://t/x", serverId: "t", serverPid: 1, commandSha256: "0".repeat(64), policyDigest: null, dryRun: false, decisionLogFsync: false, decisionLogFaultBytes: faultBytes },
  );
  evidence.openLogs();
  const server: string[] = [];
  const client: string[] = [];
  const state = new ProxyState(evidence, gate, new LineWriter(sink(client)), sink(server), 1 << 20, "deny");
  return { state, evidence, server: () => server.join(""), client: () => client.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l)) };
}

const call = (id: number | string, name = "echo") => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":{"n":1}}}\n`;
const chunk = (...lines: string[]) => new LineSplitter(1 << 20).push(new TextEncoder().encode(lines.join("")));

test("one read: every call's record is written, then the calls are forwarded in order, with the other lines", async () => {
  using tmp = tmpDir("vigil-unit-client-batch");
  const s = await session(tmp.file("d.ndjson"));
  const note = '{"jsonrpc":"2.0","method":"notifications/progress"}\n';
  const list = '{"jsonrpc":"2.0","id":"l","method":"tools/list"}\n';
  await relayClientFrames(s.state, chunk(call(1), note, call(2), list, call(3)));
  expect(s.server()).toBe(call(1) + note + call(2) + list + call(3));
  const records = readFileSync(tmp.file("d.ndjson"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  expect(records.map((r) => [r.vigilseq, r.data.seq, r.data.request_id])).toEqual([[0, 0, 1], [1, 1, 2], [2, 2, 3]]);
  expect([...s.state.pending.keys()].sort()).toEqual(['"l"', "1", "2", "3"]);
});

test("a decision log that fills mid-read: the calls before the torn record go, the rest are denied, nothing after is forwarded", async () => {
  using tmp = tmpDir("vigil-unit-client-batch");
  // Room for the first record and part of the second (a record is ~600 bytes).
  const s = await session(tmp.file("d.ndjson"), 900);
  await relayClientFrames(s.state, chunk(call(1), call(2), call(3)));
  expect(s.server()).toBe(call(1));
  const replies = s.client();
  expect(replies.map((r) => r.id)).toEqual([2, 3]);
  for (const r of replies) expect(JSON.stringify(r.result)).toContain("E_EVIDENCE_UNAVAILABLE");
  expect([...s.state.pending.keys()]).toEqual(["1"]);
  expect(s.evidence.unavailable).toBe(true);
  // Later reads are refused before any write (fail closed).
  await relayClientFrames(s.state, chunk(call(4)));
  expect(s.server()).toBe(call(1));
});

test("an id reused in the same read: in use when the first call was forwarded, free when it was denied", async () => {
  using tmp = tmpDir("vigil-unit-client-batch");
  const s = await session(tmp.file("d.ndjson"));
  await relayClientFrames(s.state, chunk(call(7), call(7)));
  expect(s.server()).toBe(call(7));
  const [reply] = s.client();
  expect(reply.id).toBe(7);
  expect(reply.error.code).toBe(-32600);
  expect(reply.error.message).toContain("already in use");

  // The first call is denied (its record does not fit): the second is then judged as a new call (denied too, fail closed).
  using tmp2 = tmpDir("vigil-unit-client-batch");
  const t = await session(tmp2.file("d.ndjson"), 10);
  await relayClientFrames(t.state, chunk(call(7), call(7)));
  expect(t.server()).toBe("");
  const denied = t.client();
  expect(denied.map((r) => r.id)).toEqual([7, 7]);
  for (const r of denied) expect(JSON.stringify(r.result)).toContain("E_EVIDENCE_UNAVAILABLE");
  expect(t.state.pending.size).toBe(0);
});
