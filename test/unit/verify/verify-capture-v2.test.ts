/**
 * v2 captures (vigil.capture.v2) in process: chains with and without keys, the signed statement and
 * the checkpoints with keys, and the tamper set of issue 14 — each with its verdict and reason.
 */
import { describe, expect, test } from "bun:test";
import { signEnvelope } from "../../../src/evidence/dsse.ts";
import { CAPTURE_FORMAT_V2, STOP_TYPE_V2 } from "../../../src/evidence/format.ts";
import type { CaptureInput } from "../../../src/verify/capture-input.ts";
import { renderJson, renderText } from "../../../src/verify/render.ts";
import { verifyCapture } from "../../../src/verify/verify-capture.ts";
import { CP, D, ENV, F, MISSING, R, V2Capture, readState, sign, testKey, writeManifest } from "./capture-v2-builder.ts";
import { goldenInput, ndjsonRecords, setRecords } from "./golden-input.ts";

const KEY = testKey("k1.pub");
const OTHER = testKey("k2.pub");
const verify = (input: CaptureInput, trusted = [KEY.trusted]) => verifyCapture(input, { requireReceipts: false, trusted });
const codes = (input: CaptureInput, trusted = [KEY.trusted]): string[] => [...new Set(verify(input, trusted).reasons.map((r) => r.code))].sort();
const bytes = (input: CaptureInput, name: keyof CaptureInput["files"]) => {
  const s = input.files[name];
  if (s.kind !== "read") throw new Error(`${name} not read`);
  return Buffer.from(s.bytes);
};
const json = (input: CaptureInput, name: keyof CaptureInput["files"]) => JSON.parse(bytes(input, name).toString("utf8"));

describe("unsigned v2 captures (no keys)", () => {
  test("closed; chains checked; the report says not authenticated", () => {
    const input = new V2Capture().close();
    expect(json(input, F.manifest).format).toBe(CAPTURE_FORMAT_V2);
    expect(json(input, F.stop).type).toBe(STOP_TYPE_V2);
    const r = verify(input, []);
    expect(r.reasons).toEqual([]);
    expect(r.verdict).toBe("closed");
    expect(r.decisions).toEqual({ written: 4, dropped: 0, verified: 4 });
    expect(JSON.parse(renderJson(r)).authentication).toEqual({ authenticated: false, keyid: null, covered: null });
    expect(renderText(r).split("\n")[2]).toBe("  not authenticated (no --public-key)");
  });

  test("a dropped, a reordered and a duplicated record → chain_broken naming the line (accounting re-made to match)", () => {
    const edits: [string, (l: string[]) => void, RegExp][] = [
      ["dropped", (l) => l.splice(1, 1), /line 2: vigilseq 2, expected 1/],
      ["reordered", (l) => l.splice(1, 2, l[2]!, l[1]!), /line 2: vigilseq 2, expected 1/],
      ["duplicated", (l) => l.splice(2, 0, l[1]!), /line 3: vigilseq 1, expected 2/],
    ];
    for (const [, edit, where] of edits) {
      for (const log of [D, R]) {
        const c = new V2Capture();
        edit(c.lines[log]!);
        const r = verify(c.close(), []);
        expect(r.verdict).toBe("unknown");
        const broken = r.reasons.filter((f) => f.code === "chain_broken");
        expect(broken).toHaveLength(1);
        expect(broken[0]!.file).toBe(log);
        expect(broken[0]!.message).toMatch(where);
      }
    }
  });

  test("a line whose vigilprev does not link (seq kept) → chain_broken at that line", () => {
    const c = new V2Capture();
    const rec = JSON.parse(c.lines[D]![2]!);
    rec.vigilprev = "0".repeat(64);
    c.lines[D]![2] = JSON.stringify(rec);
    const r = verify(c.close(), []);
    expect(r.reasons.map((f) => [f.code, f.file, f.message])).toEqual([["chain_broken", D, "hash chain broken at line 3: vigilprev does not link to the line before it"]]);
  });

  test("v2 lines must carry vigilseq/vigilprev; v1 lines must not", () => {
    const c = new V2Capture();
    c.lines[D] = c.lines[D]!.map((l) => {
      const { vigilseq: _s, vigilprev: _p, ...rest } = JSON.parse(l);
      return JSON.stringify(rest);
    });
    expect(codes(c.close(), [])).toEqual(["chain_broken", "decision_record_invalid"]);

    const v1 = goldenInput("clean");
    setRecords(v1, D, ndjsonRecords(v1, D).map((r, i) => ({ ...r, vigilseq: i, vigilprev: "0".repeat(64) })));
    const r = verifyCapture(v1, { requireReceipts: false });
    expect(r.reasons.map((f) => f.code)).toContain("decision_record_invalid");
    expect(r.reasons.find((f) => f.code === "decision_record_invalid")!.message).toMatch(/vigilseq: unexpected member/);
  });

  test("the stop record's chains must equal the recomputed heads → chain_head_mismatch", () => {
    const wrongHead = new V2Capture().close({ stopEdit: (d) => void (d.chains[D] = { count: 4, head: "0".repeat(64) }) });
    expect(codes(wrongHead, [])).toEqual(["chain_head_mismatch"]);
    const wrongCount = new V2Capture().close({ stopEdit: (d) => void (d.chains[R] = { ...d.chains[R]!, count: 9 }) });
    expect(codes(wrongCount, [])).toEqual(["chain_head_mismatch"]);
    const unnamed = new V2Capture().close({ stopEdit: (d) => void delete d.chains[R] });
    expect(verify(unnamed, []).reasons.map((f) => f.message)).toEqual([`chains does not name ${R}, a log of this capture`]);
    const extra = new V2Capture().close({ stopEdit: (d) => void (d.chains["events.ndjson"] = d.chains[D]!) });
    expect(codes(extra, [])).toEqual(["chain_head_mismatch"]);
  });

  test("decisions.ndjson of another session swapped in (accounting re-made) → decision_session_mismatch and chain_broken", () => {
    const other = new V2Capture({ sessionId: "b2".repeat(16) });
    const c = new V2Capture();
    c.lines[D] = [...other.lines[D]!];
    const r = verify(c.close(), []);
    expect([...new Set(r.reasons.map((f) => f.code))].sort()).toEqual(["chain_broken", "decision_session_mismatch"]);
    expect(r.reasons.find((f) => f.code === "chain_broken")!.message).toMatch(/line 1: vigilprev does not link to the chain's anchor/);
  });

  test("the stop says no checkpoints (unsigned) but there is a checkpoints file → checkpoint_mismatch", () => {
    const c = new V2Capture({ signer: KEY.signer });
    const input = c.close({ signer: null, stopEdit: (d) => void (d.checkpoints = null) });
    expect(codes(input, [])).toEqual(["checkpoint_mismatch"]);
  });

  test("a signed capture without keys: closed, not authenticated (the envelope is not checked)", () => {
    const input = new V2Capture({ signer: KEY.signer }).close();
    const r = verify(input, []);
    expect(r.verdict).toBe("closed");
    expect(r.authentication.authenticated).toBe(false);
    input.files[ENV] = readState("not json");
    expect(verify(input, []).verdict).toBe("closed");
  });
});

describe("signed v2 captures, with keys", () => {
  test("closed and authenticated: the signer's key id and what the signature covers", () => {
    const c = new V2Capture({ signer: KEY.signer, checkpointEvery: 4 });
    const r = verify(c.close(), [OTHER.trusted, KEY.trusted]);
    expect(r.reasons).toEqual([]);
    expect(r.verdict).toBe("closed");
    const doc = JSON.parse(renderJson(r));
    expect(doc.authentication).toEqual({
      authenticated: true,
      keyid: KEY.trusted.keyid,
      covered: {
        files: ["capture.json", "checkpoints.ndjson", "decisions.ndjson", "receipts.ndjson", "server-stderr.log", "session-context.json", "session-stop.json"],
        logs: { [D]: c.checkpointHeads.at(-1)![D], [R]: c.checkpointHeads.at(-1)![R] },
        checkpoints: 3,
      },
    });
    expect(renderText(r).split("\n")[2]).toBe(`  signed by ${KEY.trusted.keyid} — covers 7 files, decisions 4 records, receipts 5, 3 checkpoints`);
  });

  test("no capture.dsse.json → signature_missing", () => {
    const input = new V2Capture({ signer: KEY.signer }).close();
    input.files[ENV] = MISSING;
    expect(codes(input)).toEqual(["signature_missing"]);
    const unsigned = new V2Capture().close();
    expect(codes(unsigned)).toEqual(["signature_missing"]);
    expect(verify(unsigned).authentication).toEqual({ authenticated: false, keyid: null, covered: null, keysGiven: true });
  });

  test("a changed byte in any file → unknown, and the file is named by subject_mismatch", () => {
    for (const name of [F.context, F.stop, D, R, CP, F.manifest] as const) {
      const input = new V2Capture({ signer: KEY.signer }).close();
      const b = bytes(input, name);
      const at = b.indexOf(0x22, 10); // a quote inside the record: the file stays the same size
      b[at + 1] = b[at + 1] === 0x61 ? 0x62 : 0x61;
      input.files[name] = readState(b);
      const r = verify(input);
      expect(r.verdict).toBe("unknown");
      expect(r.reasons.filter((f) => f.code === "subject_mismatch").map((f) => f.file)).toEqual([name]);
      expect(r.authentication.authenticated).toBe(false);
    }
    const stderr = new V2Capture({ signer: KEY.signer }).close();
    stderr.files[F.serverStderr] = { kind: "hashed", bytes: 18, sha256: "0".repeat(64) };
    expect(codes(stderr)).toEqual(["manifest_file_changed", "subject_mismatch"]);
  });

  test("a changed byte in the envelope's payload → signature_invalid", () => {
    const input = new V2Capture({ signer: KEY.signer }).close();
    const env = json(input, ENV);
    const payload = Buffer.from(env.payload, "base64");
    const at = payload.indexOf(0x22, 20) + 1;
    payload[at] = payload[at]! ^ 1;
    env.payload = payload.toString("base64");
    input.files[ENV] = readState(JSON.stringify(env));
    expect(codes(input)).toEqual(["signature_invalid"]);
  });

  test("the envelope's keyid replaced by another trusted key's → signature_invalid", () => {
    const input = new V2Capture({ signer: KEY.signer }).close();
    const env = json(input, ENV);
    env.signatures[0].keyid = OTHER.trusted.keyid;
    input.files[ENV] = readState(JSON.stringify(env));
    expect(codes(input, [KEY.trusted, OTHER.trusted])).toEqual(["signature_invalid"]);
  });

  test("re-signed by an untrusted key → key_untrusted (envelope and checkpoints)", () => {
    const c = new V2Capture({ signer: OTHER.signer });
    const r = verify(c.close());
    expect([...new Set(r.reasons.map((f) => f.code))]).toEqual(["key_untrusted"]);
    expect(r.reasons.map((f) => f.file).sort()).toEqual([ENV, CP]);
    // Only the envelope re-signed, the checkpoints still the trusted key's: the envelope is what fails.
    const input = new V2Capture({ signer: KEY.signer }).close();
    const stop = json(input, F.stop).data;
    sign(input, OTHER.signer, "vigil://test/capture", { ...stop, status: { termination: stop.termination, exit_code: stop.exit_code, signal: stop.signal, core_dumped: null } });
    expect(verify(input).reasons.map((f): string[] => [f.code, f.file])).toEqual([["key_untrusted", ENV]]);
  });

  test("a dropped, reordered or duplicated record, everything but the signatures re-made → chain_broken, subject_mismatch, predicate_mismatch", () => {
    for (const edit of [(l: string[]) => l.splice(1, 1), (l: string[]) => l.reverse(), (l: string[]) => l.push(l[0]!)]) {
      const c = new V2Capture({ signer: KEY.signer, checkpointEvery: 100 });
      const honest = c.close();
      edit(c.lines[D]!);
      const forged = c.close({ signer: null });
      forged.files[ENV] = honest.files[ENV];
      const got = codes(forged);
      for (const code of ["chain_broken", "subject_mismatch", "predicate_mismatch"]) expect(got).toContain(code);
      expect(verify(forged).verdict).toBe("unknown");
    }
  });

  test("a record dropped and the capture re-signed with the trusted key (as wrap would) still fails the chain", () => {
    const c = new V2Capture({ signer: KEY.signer, checkpointEvery: 3 });
    c.lines[R]!.splice(2, 1);
    const got = codes(c.close());
    expect(got).toContain("chain_broken");
    expect(got).toContain("checkpoint_mismatch");
  });

  test("a capture swapped between sessions: decisions.ndjson of another signed session → chain_broken, decision_session_mismatch, subject_mismatch", () => {
    const other = new V2Capture({ signer: KEY.signer, sessionId: "b2".repeat(16) }).close();
    const input = new V2Capture({ signer: KEY.signer }).close();
    input.files[D] = other.files[D];
    const got = codes(input);
    for (const code of ["chain_broken", "decision_session_mismatch", "subject_mismatch"]) expect(got).toContain(code);
  });

  test("a file present that is not a subject → file_unsigned; a subject whose file is gone → subject_missing", () => {
    const c = new V2Capture({ signer: KEY.signer });
    const input = c.close();
    const stderr = input.files[F.serverStderr];
    const stop = json(input, F.stop).data;
    const data = { ...stop, status: { termination: stop.termination, exit_code: stop.exit_code, signal: stop.signal, core_dumped: null } };
    input.files[F.serverStderr] = MISSING;
    writeManifest(input, c.source, c.sessionId);
    sign(input, KEY.signer, c.source, data);
    input.files[F.serverStderr] = stderr;
    writeManifest(input, c.source, c.sessionId);
    const unsigned = verify(input);
    expect(unsigned.reasons.filter((f) => f.code === "file_unsigned").map((f) => f.file)).toEqual([F.serverStderr]);

    const gone = c.close();
    gone.files[F.serverStderr] = MISSING;
    writeManifest(gone, c.source, c.sessionId);
    const r = verify(gone);
    expect(r.reasons.filter((f) => f.code === "subject_missing").map((f) => f.file)).toEqual([F.serverStderr]);
  });

  test("a predicate that disagrees with the stop record → predicate_mismatch naming the fields", () => {
    const c = new V2Capture({ signer: KEY.signer });
    const input = c.close();
    const stop = json(input, F.stop).data;
    sign(input, KEY.signer, c.source, { ...stop, server_id: "elsewhere", status: { termination: "exited", exit_code: 1, signal: null, core_dumped: null } });
    const r = verify(input);
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["predicate_mismatch", ENV]]);
    expect(r.reasons[0]!.message).toMatch(/server_id, stop\.exit_code/);
  });

  test("the checkpoint count must equal the stop record's checkpoints.written → checkpoint_mismatch", () => {
    const input = new V2Capture({ signer: KEY.signer, checkpointEvery: 4 }).close({ stopEdit: (d) => void (d.checkpoints = { written: 2 }) });
    const got = codes(input);
    expect(got).toContain("checkpoint_mismatch");
    expect(got).toContain("predicate_mismatch");
  });

  test("a checkpoint that names a head the log never had → checkpoint_mismatch", () => {
    const c = new V2Capture({ signer: KEY.signer, checkpointEvery: 4 });
    const env = JSON.parse(c.lines[CP]![0]!);
    const payload = JSON.parse(Buffer.from(env.payload, "base64").toString());
    payload.logs[D].head = "0".repeat(64);
    c.lines[CP]![0] = JSON.stringify(signEnvelope(env.payloadType, Buffer.from(JSON.stringify(payload)), KEY.signer));
    expect(codes(c.close())).toEqual(["checkpoint_mismatch"]);
  });

  test("a v1 capture with keys → signature_missing, saying it is a v1 capture (never signed)", () => {
    const r = verify(goldenInput("clean"));
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["signature_missing", ENV]]);
    expect(r.reasons[0]!.message).toMatch(/vigil\.capture\.v1 capture: that format is never signed/);
  });
});

describe("a session that died after a signed checkpoint (no stop record, manifest or envelope)", () => {
  const died = (o: { after?: number } = {}) => {
    const c = new V2Capture({ signer: KEY.signer, decisions: 4, receipts: 4, checkpointEvery: 3, finalCheckpoint: false });
    for (let i = 0; i < (o.after ?? 0); i++) c.append(D, c.decision(4 + i));
    const input = c.close();
    for (const name of [F.stop, F.manifest, ENV] as const) input.files[name] = MISSING;
    return { c, input };
  };

  test("checkpoints valid → incomplete: stop_missing_checkpointed stating how many records are covered, not_covered for the rest", () => {
    const { input } = died({ after: 1 });
    const r = verify(input);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => [f.code, f.file, f.effect])).toEqual([
      ["not_covered", D, "loss"],
      ["not_covered", R, "loss"],
      ["stop_missing_checkpointed", F.stop, "loss"],
    ]);
    // 8 records in 3s: checkpoints after 3 and 6 (decisions 3, receipts 3); 5 decisions and 4 receipts written.
    expect(r.reasons.at(-1)!.message).toMatch(/covers decisions\.ndjson 3 of 5 records, receipts\.ndjson 3 of 4 records/);
    expect(r.reasons[0]!.message).toMatch(/^2 records after the last signed checkpoint/);
    expect(r.session_id).toBe("a1".repeat(16));
    expect(r.authentication.authenticated).toBe(true);
    expect(r.authentication.covered!.files).toEqual([]);
    expect(r.authentication.covered!.checkpoints).toBe(2);
    expect(renderText(r).split("\n")[2]).toBe(`  signed by ${KEY.trusted.keyid} — checkpoints only: covers decisions 3 records, receipts 3, 2 checkpoints`);
  });

  test("a torn last line (the session died mid-write) is still incomplete", () => {
    const { c, input } = died();
    input.files[D] = readState(c.bytesOf(D, '{"specversion":"1.0","ty'));
    expect(verify(input).verdict).toBe("incomplete");
  });

  test("a covered line removed → unknown (the chain no longer reaches the checkpoint's head)", () => {
    const { c, input } = died();
    c.lines[D]!.splice(1, 1);
    input.files[D] = readState(c.bytesOf(D));
    const got = codes(input);
    expect(verify(input).verdict).toBe("unknown");
    expect(got).toContain("chain_broken");
    expect(got).toContain("checkpoint_mismatch");
  });

  test("a line after the last checkpoint that does not link → unknown (chain_broken)", () => {
    const { c, input } = died({ after: 1 });
    const rec = JSON.parse(c.lines[D]!.at(-1)!);
    rec.vigilprev = "0".repeat(64);
    c.lines[D]![c.lines[D]!.length - 1] = JSON.stringify(rec);
    input.files[D] = readState(c.bytesOf(D));
    expect(codes(input)).toContain("chain_broken");
  });

  test("without keys → unknown (stop_missing): nothing vouches for the checkpoints", () => {
    const { input } = died();
    expect(codes(input, [])).toEqual(["file_missing", "stop_missing"]);
  });

  test("checkpoints by an untrusted key → unknown (key_untrusted, stop_missing)", () => {
    const { input } = died();
    expect(codes(input, [OTHER.trusted])).toEqual(["key_untrusted", "stop_missing"]);
  });

  test("no context record: the session is the one the signed checkpoints name", () => {
    const { input } = died();
    input.files[F.context] = MISSING;
    const r = verify(input);
    expect(r.verdict).toBe("incomplete");
    expect(r.session_id).toBe("a1".repeat(16));
  });
});
