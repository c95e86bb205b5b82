/**
 * Continuing a chained log already on disk (src/evidence/log-tail.ts): a torn tail is cut and
 * said once, the chain resumes from the last record, an unchained (older) log is set aside and a
 * fresh chain starts, an over-long last line is refused; the checkpoints' numbering resumes.
 */
import { expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { Chain, chainAnchor, checkChain, lineSha256 } from "../../../src/evidence/chain.ts";
import { ChainedLog } from "../../../src/evidence/chained-log.ts";
import { CHECKPOINT_PAYLOAD_TYPE, ed25519Signer, signEnvelope } from "../../../src/evidence/dsse.ts";
import { EvidenceLog } from "../../../src/evidence/evidence-log.ts";
import { LogTailError, MAX_TAIL_LINE_BYTES, chainSeqOf, checkpointNumberOf, repairTail, resumeChain, resumeCheckpoints, setAside } from "../../../src/evidence/log-tail.ts";
import { CHECKPOINT_TYPE } from "../../../src/evidence/statement.ts";
import { tmpDir } from "../../helpers/fixture.ts";

const ANCHOR = chainAnchor("vigil://test", "s1", "decisions.ndjson");
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

/** Writes n chained records through the real writer and returns the file's text. */
function writeChained(path: string, n: number, start = { count: 0, head: ANCHOR }): void {
  const log = new ChainedLog(EvidenceLog.openAppend(path), "decisions.ndjson", start);
  for (let i = 0; i < n; i++) log.append({ type: "t", id: `r${start.count + i}`, data: { i } });
  log.log.close();
}

function lines(path: string) {
  return readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) => ({ raw: Buffer.from(l), value: JSON.parse(l) }));
}

test("a missing or empty log starts from the anchor, nothing is created", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("decisions.ndjson");
  expect(resumeChain(path, ANCHOR)).toEqual({ start: { count: 0, head: ANCHOR }, cut: 0, setAsideTo: null });
  expect(existsSync(path)).toBe(false);
  writeFileSync(path, "");
  expect(resumeChain(path, ANCHOR).start).toEqual({ count: 0, head: ANCHOR });
});

test("the chain resumes from the last record: appending after a reopen links and stays contiguous", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("decisions.ndjson");
  writeChained(path, 3);
  const r = resumeChain(path, ANCHOR);
  const last = readFileSync(path, "utf8").trimEnd().split("\n").at(-1)!;
  expect(r.start).toEqual({ count: 3, head: lineSha256(Buffer.from(last)) });
  writeChained(path, 2, r.start);
  const check = checkChain(lines(path), ANCHOR);
  expect(check.break).toBeNull();
  expect(check.head.count).toBe(5);
});

test("a torn tail is cut (one line naming the file and the byte count), the complete lines stay", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("decisions.ndjson");
  writeChained(path, 2);
  const whole = readFileSync(path, "utf8");
  const torn = `{"specversion":"1.0","vigil`;
  writeFileSync(path, `${whole}${torn}`);
  const said: string[] = [];
  const r = resumeChain(path, ANCHOR, { log: (m) => said.push(m) });
  expect(r.cut).toBe(torn.length);
  expect(r.start.count).toBe(2);
  expect(readFileSync(path, "utf8")).toBe(whole);
  expect(said).toEqual([`evidence: ${path}: cut a torn tail of ${torn.length} bytes (an unfinished last line)`]);
  // A file that is nothing but a torn line: emptied, a fresh chain.
  writeFileSync(path, "{\"partial");
  expect(resumeChain(path, ANCHOR, { log: () => {} }).start).toEqual({ count: 0, head: ANCHOR });
  expect(readFileSync(path, "utf8")).toBe("");
});

test("a log an older vigil wrote (no chain) is set aside as decisions.v1-<UTC>.ndjson and a fresh chain starts", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("decisions.ndjson");
  const old = `${JSON.stringify({ specversion: "1.0", type: "vigil.mcp.decision.v1", data: { seq: 0 } })}\n`;
  writeFileSync(path, old);
  const said: string[] = [];
  const r = resumeChain(path, ANCHOR, { log: (m) => said.push(m), nowMs: NOW });
  expect(r.start).toEqual({ count: 0, head: ANCHOR });
  expect(r.setAsideTo).toBe(tmp.file("decisions.v1-20260102T030405Z.ndjson"));
  expect(readFileSync(r.setAsideTo!, "utf8")).toBe(old);
  expect(existsSync(path)).toBe(false);
  expect(said).toHaveLength(1);
  expect(said[0]).toContain("decisions.v1-20260102T030405Z.ndjson");
  // The same second again: a suffix, never over the first.
  writeFileSync(path, old);
  expect(resumeChain(path, ANCHOR, { log: () => {}, nowMs: NOW }).setAsideTo).toBe(tmp.file("decisions.v1-20260102T030405Z-2.ndjson"));
  expect(readdirSync(tmp.path).sort()).toEqual(["decisions.v1-20260102T030405Z-2.ndjson", "decisions.v1-20260102T030405Z.ndjson"]);
});

test("a last line over 1 MiB is refused (state_invalid), the file untouched", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("decisions.ndjson");
  const big = `{"vigilseq":0,"x":"${"a".repeat(MAX_TAIL_LINE_BYTES)}"}\n`;
  writeFileSync(path, big);
  expect(() => resumeChain(path, ANCHOR)).toThrow(LogTailError);
  expect(() => repairTail(path)).toThrow("its last line is over 1048576 bytes");
  expect(readFileSync(path, "utf8")).toBe(big);
  // A torn tail that long: refused too, nothing cut.
  writeFileSync(path, `{"a":1}\n${"b".repeat(MAX_TAIL_LINE_BYTES + 2)}`);
  expect(() => repairTail(path)).toThrow("its torn tail is over");
  // Just under the bound: read.
  const line = `{"vigilseq":7,"vigilprev":"${"0".repeat(64)}","x":"${"a".repeat(MAX_TAIL_LINE_BYTES - 200)}"}`;
  writeFileSync(path, `${"{}\n".repeat(10)}${line}\n`);
  expect(resumeChain(path, ANCHOR).start).toEqual({ count: 8, head: lineSha256(Buffer.from(line)) });
});

test("chainSeqOf: only a record with an integer vigilseq and a hex vigilprev", () => {
  const ok = (o: unknown) => chainSeqOf(Buffer.from(JSON.stringify(o)));
  expect(ok({ vigilseq: 4, vigilprev: "a".repeat(64) })).toBe(4);
  expect(ok({ vigilseq: 4 })).toBeNull();
  expect(ok({ vigilseq: -1, vigilprev: "a".repeat(64) })).toBeNull();
  expect(ok({ vigilseq: 1.5, vigilprev: "a".repeat(64) })).toBeNull();
  expect(ok({ vigilseq: 1, vigilprev: "A".repeat(64) })).toBeNull();
  expect(ok([1])).toBeNull();
  expect(chainSeqOf(Buffer.from("not json"))).toBeNull();
  // The line a Chain writes is one.
  expect(chainSeqOf(Buffer.from(Chain.start(ANCHOR).line({ data: {} })))).toBe(0);
});

test("checkpoints: numbering resumes from the last line's checkpoint; an unreadable last line sets the file aside", () => {
  using tmp = tmpDir("vigil-unit-tail");
  const path = tmp.file("checkpoints.ndjson");
  const { privateKey } = generateKeyPairSync("ed25519");
  const signer = ed25519Signer("k", privateKey);
  const line = (n: number) => JSON.stringify(signEnvelope(CHECKPOINT_PAYLOAD_TYPE, Buffer.from(JSON.stringify({ _type: CHECKPOINT_TYPE, checkpoint: n })), signer));
  expect(resumeCheckpoints(path).firstNumber).toBe(0);
  writeFileSync(path, `${line(0)}\n${line(1)}\n${line(2)}\n${line(3).slice(0, 40)}`);
  const said: string[] = [];
  expect(resumeCheckpoints(path, { log: (m) => said.push(m) })).toEqual({ firstNumber: 3, cut: 40, setAsideTo: null });
  expect(said).toHaveLength(1);
  expect(checkpointNumberOf(Buffer.from(line(9)))).toBe(9);
  expect(checkpointNumberOf(Buffer.from(JSON.stringify({ payload: "e30=", payloadType: "other", signatures: [{ keyid: "k", sig: "" }] })))).toBeNull();
  writeFileSync(path, `${line(0)}\n{"not":"an envelope"}\n`);
  const r = resumeCheckpoints(path, { log: () => {}, nowMs: NOW });
  expect(r.firstNumber).toBe(0);
  expect(r.setAsideTo).toBe(tmp.file("checkpoints.unreadable-20260102T030405Z.ndjson"));
  expect(existsSync(path)).toBe(false);
});

test("setAside never replaces a file and keeps a name without .ndjson whole", () => {
  using tmp = tmpDir("vigil-unit-tail");
  writeFileSync(tmp.file("log"), "x\n");
  expect(setAside(tmp.file("log"), "v1", NOW)).toBe(tmp.file("log.v1-20260102T030405Z.ndjson"));
});
