/**
 * Decision records of one client read go out in one write (evidence-log.ts appendBatch,
 * chained-log.ts appendBatch) with the accounting, chain and checkpoint cadence of appending them
 * one by one; a device that fills mid-batch leaves the lines before the torn one on record.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { Chain, chainAnchor } from "../../../src/evidence/chain.ts";
import { ChainedLog } from "../../../src/evidence/chained-log.ts";
import { EvidenceLog } from "../../../src/evidence/evidence-log.ts";
import { tmpDir } from "../../helpers/fixture.ts";

test("a batch is the same bytes, counts and prefix digest as appending its lines one by one", () => {
  using tmp = tmpDir("vigil-unit-batch");
  const one = EvidenceLog.createNew(tmp.file("one.ndjson"));
  const batch = EvidenceLog.createNew(tmp.file("batch.ndjson"));
  const lines = ["a", '{"x":"é 中"}', "c".repeat(300)];
  for (const l of lines) one.append(l);
  expect(batch.appendBatch(lines)).toBe(3);
  expect(batch.appendBatch(["single"])).toBe(1);
  one.append("single");
  one.close();
  batch.close();
  expect(readFileSync(tmp.file("batch.ndjson"), "utf8")).toBe(readFileSync(tmp.file("one.ndjson"), "utf8"));
  expect({ w: batch.written, d: batch.dropped, b: batch.bytesWritten, p: batch.prefixSha256() }).toEqual({ w: one.written, d: one.dropped, b: one.bytesWritten, p: one.prefixSha256() });
});

test("a device that fills mid-batch: the whole lines before the torn one are written and counted, the rest dropped", () => {
  using tmp = tmpDir("vigil-unit-batch");
  const path = tmp.file("d.ndjson");
  const log = EvidenceLog.createNew(path, { failAfterBytes: 25 });
  const ref = EvidenceLog.createNew(tmp.file("ref.ndjson"));
  ref.append("a".repeat(9));
  ref.append("b".repeat(9));
  ref.close();
  expect(log.appendBatch(["a".repeat(9), "b".repeat(9), "c".repeat(9), "d"])).toBe(2);
  expect(log.appendBatch(["e", "f"])).toBe(0);
  log.close();
  expect(log.failure).toBe(`ENOSPC: no space left on device (${path})`);
  expect({ written: log.written, dropped: log.dropped, bytes: log.bytesWritten }).toEqual({ written: 2, dropped: 4, bytes: 20 });
  expect(log.prefixSha256()).toBe(ref.prefixSha256());
  expect(readFileSync(path, "utf8")).toBe(`${"a".repeat(9)}\n${"b".repeat(9)}\nccccc`);
});

test("a chained batch links like single appends, advances over the written lines only, and tells each one", () => {
  using tmp = tmpDir("vigil-unit-batch");
  const anchor = chainAnchor("vigil://h/a", "s", "decisions.ndjson");
  let told = 0;
  const heads: number[] = [];
  const log = new ChainedLog(EvidenceLog.createNew(tmp.file("c.ndjson")), "decisions.ndjson", { count: 0, head: anchor }, () => {
    told++;
    heads.push(log.head().count);
  });
  const events = [0, 1, 2, 3].map((i) => ({ specversion: "1.0", data: { i } }));
  expect(log.appendBatch(events.slice(0, 3))).toBe(3);
  expect(log.append(events[3]!)).toBe(true);
  expect(told).toBe(4);
  // A checkpoint told after record k names the head after k records, not after the whole batch.
  expect(heads).toEqual([1, 2, 3, 4]);
  const chain = Chain.start(anchor);
  for (const e of events) chain.advance(chain.line(e));
  expect(log.head()).toEqual(chain.state);

  const full = new ChainedLog(EvidenceLog.createNew(tmp.file("f.ndjson"), { failAfterBytes: 1 }), "decisions.ndjson", { count: 0, head: anchor });
  expect(full.appendBatch(events)).toBe(0);
  expect(full.head()).toEqual({ count: 0, head: anchor });
});
