/**
 * `vigil verify sessions/<name>`, the pure half: serve session evidence built in process with the
 * producers' own builders (session-builder.ts), then tampered with — each tamper maps to its
 * documented verdict and reason.
 */
import { describe, expect, test } from "bun:test";
import { chainAnchor } from "../../../src/evidence/chain.ts";
import type { SessionInput } from "../../../src/verify/session/session-input.ts";
import { renderSessionJson, renderSessionText } from "../../../src/verify/session/render-session.ts";
import { verifySession } from "../../../src/verify/session/verify-session.ts";
import { readState } from "./golden-input.ts";
import { C, D, E, SessionBuilder, type TestKey, joinLines, linesOf, testKey, withBytes } from "./session-builder.ts";

const KEY = testKey();
const OTHER = testKey("other.pub");

const verify = (input: SessionInput, keys: TestKey[] = []) => verifySession(input, { trusted: keys.map((k) => k.trusted) });
const codes = (input: SessionInput, keys: TestKey[] = []) => [...new Set(verify(input, keys).reasons.map((r) => r.code))].sort();

/** Two decisions; events: two queued and a notify received, one delivered, one dropped, a gap delivered. */
function accounted(name = "s1"): SessionBuilder {
  return new SessionBuilder(name)
    .decision()
    .received(0)
    .received(null)
    .received(1)
    .delivered([0])
    .decision()
    .gap(2)
    .dropped(1)
    .delivered([2]);
}

describe("without keys", () => {
  test("every received event accounted for, chains intact → closed, not authenticated", () => {
    const r = verify(accounted().input());
    expect(r.verdict).toBe("closed");
    expect(r.reasons).toEqual([]);
    expect(r.kind).toBe("serve_session");
    expect(r.session_id).toBe("s1");
    expect(r.events).toEqual({ received: 3, delivered: 2, dropped: 1, gaps: 1, pending: [] });
    expect(r.decisions).toEqual({ written: 2, verified: 2 });
    expect(r.authentication).toMatchObject({ authenticated: false, keysGiven: false, keyid: null, covered: null });
    const text = renderSessionText(r).split("\n");
    expect(text[0]).toBe("closed");
    expect(text[2]).toBe("  not authenticated (no --public-key)");
    expect(text.at(-1)).toContain("anyone who can write these files can forge a consistent session");
  });

  test("an event received and not yet delivered → incomplete, listing its seq and event id", () => {
    const r = verify(accounted().received(3, "evt-x").input());
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => [f.code, f.effect])).toEqual([["events_pending", "loss"]]);
    expect(r.reasons[0]!.message).toContain('seq 3 ("evt-x")');
    expect(r.events.pending).toEqual([{ seq: 3, event_id: "evt-x" }]);
    const json = JSON.parse(renderSessionJson(r));
    expect(json).toMatchObject({ verdict: "incomplete", kind: "serve_session", session_id: "s1", events: { pending: [{ seq: 3, event_id: "evt-x" }] } });
    expect(json.reasons[0]).toEqual({ code: "events_pending", file: E, message: r.reasons[0]!.message });
  });

  test("more than 50 pending: 50 listed, then how many more; the JSON lists them all", () => {
    const b = new SessionBuilder();
    for (let i = 0; i < 53; i++) b.received(i);
    const r = verify(b.input());
    expect(r.reasons[0]!.message).toContain("seq 49");
    expect(r.reasons[0]!.message).not.toContain("seq 50 ");
    expect(r.reasons[0]!.message).toEndWith("…and 3 more");
    expect(r.events.pending).toHaveLength(53);
  });

  test("an empty ledger is closed; no log at all reads as an empty session", () => {
    const b = new SessionBuilder();
    b.exists[E] = true;
    expect(verify(b.input()).verdict).toBe("closed");
  });

  test("a torn last line → unknown (nothing vouches for what came before it)", () => {
    const input = accounted().input();
    const bytes = Buffer.concat([Buffer.from((input.events as { bytes: Uint8Array }).bytes), Buffer.from('{"specversion":"1.0","ty')]);
    expect(codes(withBytes(input, E, bytes))).toEqual(["ledger_partial_tail"]);
  });
});

describe("tamper set (without keys)", () => {
  test("one byte changed in an earlier record → chain_broken", () => {
    const input = accounted().input();
    const lines = linesOf(input, E);
    lines[1] = lines[1]!.replace('"server":"fx"', '"server":"fy"');
    expect(codes(withBytes(input, E, joinLines(lines)))).toEqual(["chain_broken"]);
  });

  test("a dropped ledger line → chain_broken", () => {
    const input = accounted().input();
    const lines = linesOf(input, E);
    lines.splice(3, 1); // the delivery of seq 0: the chain breaks there, and seq 0 shows as pending
    const r = verify(withBytes(input, E, joinLines(lines)));
    expect(r.reasons.map((f) => f.code)).toEqual(["chain_broken", "events_pending"]);
    expect(r.reasons[0]!.message).toBe("line 4: vigilseq 4, expected 3");
    expect(r.events.pending).toEqual([{ seq: 0, event_id: "evt-0" }]);
  });

  test("reordered ledger lines → chain_broken", () => {
    const input = accounted().input();
    const lines = linesOf(input, E);
    [lines[1], lines[2]] = [lines[2]!, lines[1]!];
    expect(codes(withBytes(input, E, joinLines(lines)))).toContain("chain_broken");
    expect(verify(withBytes(input, E, joinLines(lines))).verdict).toBe("unknown");
  });

  test("a duplicated ledger line → chain_broken, and the seq queued twice is unaccounted", () => {
    const input = accounted().input();
    const lines = linesOf(input, E);
    lines.splice(1, 0, lines[0]!);
    const c = codes(withBytes(input, E, joinLines(lines)));
    expect(c).toContain("chain_broken");
    expect(verify(withBytes(input, E, joinLines(lines))).verdict).toBe("unknown");
  });

  test("a well-chained delivery of a seq never received → events_unaccounted", () => {
    const r = verify(accounted().delivered([9], ["evt-9"]).input());
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => f.code)).toEqual(["events_unaccounted"]);
    expect(r.reasons[0]!.message).toContain("seq 9 is delivered but was never received");
  });

  test("delivered twice, dropped after delivery, received twice, a different event id → events_unaccounted", () => {
    expect(codes(accounted().delivered([0], ["evt-0"]).input())).toEqual(["events_unaccounted"]);
    expect(codes(accounted().dropped(0, "evt-0").input())).toEqual(["events_unaccounted"]);
    expect(codes(accounted().received(0).delivered([0]).input())).toEqual(["events_unaccounted"]);
    // the delivery does not settle seq 0, which stays pending
    expect(codes(new SessionBuilder().received(0, "a").delivered([0], ["b"]).input())).toEqual(["events_pending", "events_unaccounted"]);
  });

  test("events.ndjson of another session swapped in → session mismatch and a chain from another anchor", () => {
    const ours = accounted("s1").input();
    const theirs = accounted("s2").input();
    const r = verify({ ...ours, events: theirs.events });
    expect(r.verdict).toBe("unknown");
    expect([...new Set(r.reasons.map((f) => f.code))]).toEqual(["chain_broken", "ledger_session_mismatch"]);
    expect(r.reasons[0]!.message).toBe("line 1: vigilprev does not link to the chain's anchor");
  });

  test("a record of another event source → source_mismatch (and its chain starts from another anchor)", () => {
    const b = accounted();
    const other = new SessionBuilder("s1", "vigil://elsewhere").received(0).delivered([0]);
    const c = codes({ ...b.input(), events: other.input().events });
    expect(c).toEqual(["chain_broken", "source_mismatch"]);
  });

  test("ledger records: unknown type, a queued action without a seq, seqs and event ids of different lengths", () => {
    const b = new SessionBuilder();
    b.received(null, "x", "follow_up");
    expect(codes(b.input())).toEqual(["ledger_record_invalid"]);
    expect(codes(new SessionBuilder().received(0).delivered([0], []).input())).toEqual(["events_pending", "ledger_record_invalid"]);
    const input = accounted().input();
    const lines = linesOf(input, E);
    for (const type of ["vigil.mcp.event.other.v1", "constructor", "__proto__"]) {
      lines[0] = linesOf(input, E)[0]!.replace("vigil.mcp.event.received.v1", type);
      expect(codes(withBytes(input, E, joinLines(lines)))).toContain("ledger_record_invalid");
    }
  });

  test("decision records: v1 data of this session, seq equal to vigilseq, in a chain of their own", () => {
    const input = accounted().input();
    const lines = linesOf(input, D);
    lines[1] = lines[1]!.replace('"seq":1', '"seq":5');
    const r = verify(withBytes(input, D, joinLines(lines)));
    expect(r.reasons.map((f) => f.code)).toEqual(["decision_seq_gap"]);
    expect(r.decisions).toEqual({ written: 2, verified: 1 });
    const swapped = { ...input, decisions: accounted("s2").input().decisions };
    expect(codes(swapped)).toEqual(["chain_broken", "decision_session_mismatch"]);
  });

  test("strict JSON per line: a duplicate key is refused (and what the line said is not counted)", () => {
    const input = accounted().input();
    const lines = linesOf(input, E);
    lines[0] = lines[0]!.replace('"specversion":"1.0"', '"specversion":"1.0","specversion":"1.0"');
    expect(codes(withBytes(input, E, joinLines(lines)))).toEqual(["chain_broken", "duplicate_key", "events_unaccounted"]);
  });

  test("a file over its bound or not regular → unknown with the reader's code", () => {
    const input = accounted().input();
    expect(codes({ ...input, events: { kind: "problem", problem: "too_large", message: "over" } })).toContain("file_too_large");
    expect(codes({ ...input, decisions: { kind: "problem", problem: "not_regular", message: "is a symbolic link" } })).toContain("file_not_regular");
  });
});

describe("with keys", () => {
  const signed = () => accounted().checkpoint(KEY).stop(KEY);

  test("a stop covering both logs → closed, authenticated, with what is covered", () => {
    const r = verify(signed().input(), [KEY]);
    expect(r.reasons).toEqual([]);
    expect(r.verdict).toBe("closed");
    expect(r.authentication).toMatchObject({ authenticated: true, keysGiven: true, keyid: KEY.trusted.keyid, stops: 1, checkpoints: 1 });
    expect(r.authentication.covered?.logs[E]?.count).toBe(7);
    expect(r.authentication.covered?.logs[D]?.count).toBe(2);
    expect(r.authentication.covered?.files).toEqual([D, E, C]);
    const text = renderSessionText(r).split("\n");
    expect(text[0]).toBe("closed");
    expect(text[1]).toBe("  serve session s1: events 3 received, 2 delivered, 1 dropped, 1 gaps, 0 pending; decisions 2 written, 2 verified");
    expect(text[2]).toBe(`  signed by ${KEY.trusted.keyid} — covers decisions.ndjson 2 records, events.ndjson 7 records; 1 stop envelope, 1 checkpoint`);
    expect(text[3]).toStartWith("note: closed describes the files as they stand: a daemon still running can append after verify read them");
    const json = JSON.parse(renderSessionJson(r));
    expect(Object.keys(json)).toEqual(["verdict", "reasons", "kind", "session_id", "events", "decisions", "authentication"]);
    expect(json.authentication).toEqual({
      authenticated: true,
      keyid: KEY.trusted.keyid,
      keyids: [KEY.trusted.keyid],
      stops: 1,
      checkpoints: 1,
      covered: { files: [D, E, C], logs: { [D]: r.authentication.covered!.logs[D], [E]: r.authentication.covered!.logs[E] }, checkpoints: 1 },
    });
  });

  test("older stops are checked against the prefix of each file they signed", () => {
    const b = signed().received(3).decision().checkpoint(KEY).delivered([3]).stop(KEY, () => {}, "reaped").decision().stop(KEY);
    const r = verify(b.input(), [KEY]);
    expect(r.reasons).toEqual([]);
    expect(r.authentication.stops).toBe(3);
  });

  test("a stop naming the ledger's empty chain while events.ndjson does not exist yet → closed", () => {
    const b = new SessionBuilder().decision().stop(KEY, (s) => {
      (s.predicate.logs as Record<string, unknown>)[E] = { count: 0, head: chainAnchor("vigil://test", "s1", E) };
    });
    expect(verify(b.input(), [KEY]).reasons).toEqual([]);
    const wrong = new SessionBuilder().decision().stop(KEY, (s) => {
      (s.predicate.logs as Record<string, unknown>)[E] = { count: 0, head: "0".repeat(64) };
    });
    expect(codes(wrong.input(), [KEY])).toEqual(["chain_head_mismatch"]);
  });

  test("records after the last stop or checkpoint → incomplete, stating how many are covered", () => {
    const r = verify(signed().received(3).delivered([3]).input(), [KEY]);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => [f.code, f.file, f.effect])).toEqual([["not_covered", E, "loss"]]);
    expect(r.reasons[0]!.message).toContain("7 of 9 records are covered");
  });

  test("a checkpoint covering more than the last stop counts", () => {
    const r = verify(signed().received(3).delivered([3]).checkpoint(KEY).input(), [KEY]);
    expect(r.reasons).toEqual([]);
    expect(r.authentication.covered?.logs[E]?.count).toBe(9);
  });

  test("no envelope at all → signature_missing", () => {
    expect(codes(accounted().input(), [KEY])).toEqual(["signature_missing"]);
  });

  test("untrusted signer, on a stop and on a checkpoint → key_untrusted", () => {
    expect(codes(accounted().stop(OTHER).input(), [KEY])).toContain("key_untrusted");
    expect(renderSessionText(verify(accounted().stop(OTHER).input(), [KEY])).split("\n")[2]).toBe("  not authenticated (key_untrusted)");
    expect(codes(accounted().checkpoint(OTHER).input(), [KEY])).toEqual(["key_untrusted"]);
  });

  test("a signature that does not verify → signature_invalid", () => {
    const input = signed().input();
    const stop = input.stops.kind === "read" ? input.stops.entries[0]! : null;
    const env = JSON.parse(Buffer.from((stop!.state as { bytes: Uint8Array }).bytes).toString());
    env.payload = Buffer.from(Buffer.from(env.payload, "base64").toString().replace('"closed"', '"reaped"')).toString("base64");
    stop!.state = readState(Buffer.from(JSON.stringify(env)));
    expect(codes(input, [KEY])).toEqual(["signature_invalid"]);
  });

  test("one byte changed in the last (signed) record → chain_head_mismatch (stop) and checkpoint_mismatch", () => {
    const input = signed().input();
    const lines = linesOf(input, E);
    lines[6] = lines[6]!.replace('"run_id":"run-1"', '"run_id":"run-2"');
    expect(codes(withBytes(input, E, joinLines(lines)), [KEY])).toEqual(["chain_head_mismatch", "checkpoint_mismatch"]);
  });

  test("the decision log changed after the stop: its subject no longer matches", () => {
    const input = signed().input();
    const lines = linesOf(input, D);
    lines[1] = lines[1]!.replace('"tool":"echo"', '"tool":"rm"');
    const c = codes(withBytes(input, D, joinLines(lines)), [KEY]);
    expect(c).toContain("chain_head_mismatch");
  });

  test("truncated after a checkpoint: mid-line → incomplete (not_covered); below it → unknown (checkpoint_mismatch)", () => {
    const b = accounted().checkpoint(KEY).received(3).delivered([3]);
    const full = b.bytes(E);
    const midLine = full.subarray(0, full.length - 20);
    const r = verify(withBytes(b.input(), E, midLine), [KEY]);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.every((f) => f.code === "not_covered" || f.code === "events_pending")).toBe(true);
    expect(r.reasons.some((f) => f.message.includes("unfinished record"))).toBe(true);
    const below = joinLines(b.lines[E]!.slice(0, 5));
    expect(codes(withBytes(b.input(), E, below), [KEY])).toContain("checkpoint_mismatch");
  });

  test("a stop whose pending list disagrees with the ledger → predicate_mismatch", () => {
    const b = accounted().stop(KEY, (s) => {
      (s.predicate.events as { pending: number[] }).pending = [7];
    });
    expect(codes(b.input(), [KEY])).toEqual(["predicate_mismatch"]);
  });

  test("a stop of another session, or numbered unlike its file → predicate_mismatch", () => {
    expect(codes(accounted().stop(KEY, (s) => (s.predicate.session_id = "s2")).input(), [KEY])).toEqual(["predicate_mismatch"]);
    expect(codes(accounted().stop(KEY, (s) => (s.predicate.stop = 4)).input(), [KEY])).toEqual(["predicate_mismatch"]);
  });

  test("a subject digest that is not the file's → subject_mismatch; counts going down → predicate_mismatch", () => {
    const bad = signed().stop(KEY, (s) => (s.subject.find((x) => x.name === E)!.digest.sha256 = "0".repeat(64)));
    expect(codes(bad.input(), [KEY])).toEqual(["subject_mismatch"]);
    // Stop 2 re-signs what stop 1 said of the ledger (a consistent older head and prefix).
    let older: { head: { count: number; head: string }; digest: string } | null = null;
    const b = signed().stop(KEY, (s) => {
      older = { head: (s.predicate.logs as Record<string, { count: number; head: string }>)[E]!, digest: s.subject.find((x) => x.name === E)!.digest.sha256 };
    });
    b.stops.pop();
    b.received(3).delivered([3]).stop(KEY).stop(KEY, (s) => {
      (s.predicate.logs as Record<string, unknown>)[E] = older!.head;
      s.subject.find((x) => x.name === E)!.digest.sha256 = older!.digest;
    });
    const r = verify(b.input(), [KEY]);
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["not_covered", E], ["predicate_mismatch", "stops/3.dsse.json"]]);
    expect(r.reasons[1]!.message).toBe("events.ndjson count goes down (7 after 9 at stop 2)");
  });

  test("a removed stop envelope between two others → signature_missing", () => {
    const input = signed().stop(KEY).stop(KEY).input();
    if (input.stops.kind === "read") input.stops.entries.splice(1, 1);
    expect(codes(input, [KEY])).toEqual(["signature_missing"]);
  });

  test("a signed file removed → subject_missing", () => {
    const input = signed().input();
    expect(codes({ ...input, checkpoints: { kind: "problem", problem: "missing", message: "missing" } }, [KEY])).toEqual(["subject_missing"]);
  });

  test("a torn last line after the signed records → incomplete (not_covered)", () => {
    const input = signed().input();
    const bytes = Buffer.concat([Buffer.from((input.events as { bytes: Uint8Array }).bytes), Buffer.from('{"specv')]);
    const r = verify(withBytes(input, E, bytes), [KEY]);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => f.code)).toEqual(["not_covered"]);
  });
});
