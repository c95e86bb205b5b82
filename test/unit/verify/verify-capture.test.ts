/**
 * The pure verifier, in process: CaptureInput objects built from the committed golden captures and
 * edited to reach branches that are hard to reach end to end (accounting states wrap never writes,
 * receipts loss, per-record checks, the finding cap).
 */
import { describe, expect, test } from "bun:test";
import type { CaptureInput } from "../../../src/verify/capture-input.ts";
import { verifyCapture } from "../../../src/verify/verify-capture.ts";
import { CAPTURE, sha256Hex } from "../../helpers/capture.ts";
import { MISSING, bytesOf, editJson, editStop, goldenInput, jsonOf, ndjsonRecords, setBytes, setFile, setRecords } from "./golden-input.ts";

const verify = (input: CaptureInput, requireReceipts = false) => verifyCapture(input, { requireReceipts });
const codes = (input: CaptureInput, requireReceipts = false) => verify(input, requireReceipts).reasons.map((r) => r.code).sort();
const D = CAPTURE.decisions;
const R = CAPTURE.receipts;

/** Replaces the decision log with `records` (+ tail) and makes the stop record account for them. */
function setDecisions(input: CaptureInput, records: unknown[], tail = "", stop: { decision_log?: string; dropped?: number } = {}) {
  const bytes = setRecords(input, D, records, tail);
  const complete = bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
  editStop(input, (d) => {
    d.decision_events_written = records.length;
    d.decision_prefix_sha256 = sha256Hex(complete);
    if (stop.decision_log !== undefined) d.decision_log = stop.decision_log;
    if (stop.dropped !== undefined) d.decision_events_dropped = stop.dropped;
  });
}

function setReceipts(input: CaptureInput, records: unknown[], tail = "", dropped = 0) {
  const bytes = setRecords(input, R, records, tail);
  const complete = bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
  editStop(input, (d) => {
    d.receipts = { written: records.length, dropped, prefix_sha256: sha256Hex(complete) };
  });
}

describe("the goldens, in process", () => {
  test("clean → closed, nothing to report", () => {
    const r = verify(goldenInput("clean"));
    expect(r.verdict).toBe("closed");
    expect(r.reasons).toEqual([]);
    expect(r.decisions).toEqual({ written: 4, dropped: 0, verified: 4 });
  });

  test("poisoned → incomplete with one loss finding", () => {
    const r = verify(goldenInput("poisoned"));
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => [f.code, f.effect])).toEqual([["decision_events_lost", "loss"]]);
  });

  test("the same edits that re-serialize records leave a golden closed (the helpers are neutral)", () => {
    const input = goldenInput("clean");
    setDecisions(input, ndjsonRecords(input, D));
    editJson(input, CAPTURE.context, () => {});
    expect(codes(input)).toEqual([]);
  });
});

describe("decision accounting states", () => {
  for (const state of ["temporary", "unknown"] as const) {
    test(`decision_log ${state} → decision_accounting_unknown (unknown), whatever the log says`, () => {
      const input = goldenInput("clean");
      editStop(input, (d) => {
        d.decision_log = state;
      });
      const r = verify(input);
      expect(r.verdict).toBe("unknown");
      expect(r.reasons.map((f) => f.code)).toEqual(["decision_accounting_unknown"]);
      expect(r.reasons[0]!.file).toBe(CAPTURE.stop);
      expect(r.decisions.verified).toBe(0);
    });
  }

  test("decision_log unknown with null accounting and no log → decision_accounting_unknown", () => {
    const input = goldenInput("clean");
    setFile(input, D, MISSING);
    editStop(input, (d) => {
      d.decision_log = "unknown";
      d.decision_events_written = null;
      d.decision_events_dropped = null;
      d.decision_prefix_sha256 = null;
    });
    expect(codes(input)).toEqual(["decision_accounting_unknown"]);
  });

  test("complete with dropped > 0 → decision_accounting_inconsistent, unknown (not incomplete)", () => {
    const input = goldenInput("clean");
    editStop(input, (d) => {
      d.decision_events_dropped = 2;
    });
    const r = verify(input);
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => f.code)).toEqual(["decision_accounting_inconsistent"]);
  });

  test("complete with null accounting → decision_accounting_inconsistent", () => {
    const input = goldenInput("clean");
    editStop(input, (d) => {
      d.decision_events_written = null;
    });
    expect(codes(input)).toEqual(["decision_accounting_inconsistent"]);
  });

  test("absent with a decisions file → decision_log_unexpected", () => {
    const input = goldenInput("clean");
    editStop(input, (d) => {
      d.decision_log = "absent";
      d.decision_events_written = null;
      d.decision_events_dropped = null;
      d.decision_prefix_sha256 = null;
    });
    const r = verify(input);
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["decision_log_unexpected", D]]);
  });

  test("absent, no file, null accounting → closed", () => {
    const input = goldenInput("clean");
    setFile(input, D, MISSING);
    editStop(input, (d) => {
      d.decision_log = "absent";
      d.decision_events_written = null;
      d.decision_events_dropped = null;
      d.decision_prefix_sha256 = null;
    });
    const r = verify(input);
    expect(r.verdict).toBe("closed");
    expect(r.decisions).toEqual({ written: null, dropped: null, verified: 0 });
  });

  test("absent but with accounting numbers → decision_accounting_inconsistent", () => {
    const input = goldenInput("clean");
    setFile(input, D, MISSING);
    editStop(input, (d) => {
      d.decision_log = "absent";
    });
    expect(codes(input)).toEqual(["decision_accounting_inconsistent"]);
  });

  test("complete but the log is missing → decision_log_missing", () => {
    const input = goldenInput("clean");
    setFile(input, D, MISSING);
    expect(codes(input)).toEqual(["decision_log_missing"]);
  });

  test("incomplete but the log is missing → decision_log_missing (unknown: nothing retained to check)", () => {
    const input = goldenInput("poisoned");
    setFile(input, D, MISSING);
    const r = verify(input);
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => f.code)).toContain("decision_log_missing");
  });

  for (const problem of ["not_regular", "too_large", "unreadable"] as const) {
    test(`a decision log that could not be read (${problem}) → file_${problem}`, () => {
      const input = goldenInput("clean");
      input.files[D] = { kind: "problem", problem, message: problem };
      const r = verify(input);
      expect(r.verdict).toBe("unknown");
      const want = ({ not_regular: "file_not_regular", too_large: "file_too_large", unreadable: "file_unreadable" } as const)[problem];
      expect(r.reasons.map((f) => f.code)).toContain(want);
      expect(r.decisions.verified).toBe(0);
    });
  }

  test("incomplete with a matching prefix and a tail → incomplete; the tail is not checked", () => {
    const input = goldenInput("clean");
    setDecisions(input, ndjsonRecords(input, D).slice(0, 2), '{"specversion":"1.0","type":"vigil.mc', { decision_log: "incomplete", dropped: 3 });
    const r = verify(input);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => f.code)).toEqual(["decision_events_lost"]);
    expect(r.decisions).toEqual({ written: 2, dropped: 3, verified: 2 });
  });

  test("incomplete with a count mismatch is unknown, and the known loss is still listed", () => {
    const input = goldenInput("poisoned");
    editStop(input, (d) => {
      d.decision_events_written += 1;
    });
    const r = verify(input);
    expect(r.verdict).toBe("unknown");
    expect(r.reasons.map((f) => f.code).sort()).toEqual(["decision_count_mismatch", "decision_events_lost"]);
  });
});

describe("per-record checks of the decision log", () => {
  const withLine = (i: number, edit: (rec: any) => void) => {
    const input = goldenInput("clean");
    const records = ndjsonRecords(input, D);
    edit(records[i]);
    setDecisions(input, records);
    return input;
  };

  test("a line of another session → decision_session_mismatch", () => {
    expect(codes(withLine(2, (r) => (r.data.session_id = "other")))).toEqual(["decision_session_mismatch"]);
  });

  test("seq starting at 1 → decision_seq_gap on every line", () => {
    const input = goldenInput("clean");
    const records = ndjsonRecords(input, D).map((r, i) => ({ ...r, id: `evt_decision_${r.data.session_id}_${i + 1}`, data: { ...r.data, seq: i + 1 } }));
    setDecisions(input, records);
    const r = verify(input);
    expect(r.reasons.map((f) => f.code)).toEqual(Array(records.length).fill("decision_seq_gap"));
    expect(r.decisions.verified).toBe(0);
  });

  test("an id that does not match its session and seq → decision_record_invalid", () => {
    expect(codes(withLine(1, (r) => (r.id = "evt_decision_x_1")))).toEqual(["decision_record_invalid"]);
  });

  test("a different source on one line → decision_record_invalid", () => {
    expect(codes(withLine(0, (r) => (r.source = "vigil://elsewhere")))).toEqual(["decision_record_invalid"]);
  });

  test("a receipt in the decision log → decision_record_invalid", () => {
    const input = goldenInput("clean");
    const receipt = ndjsonRecords(input, R)[0];
    const records = ndjsonRecords(input, D);
    records[0] = receipt;
    setDecisions(input, records);
    expect(codes(input)).toContain("decision_record_invalid");
  });

  test("specversion 0.3 → decision_record_invalid", () => {
    expect(codes(withLine(3, (r) => (r.specversion = "0.3")))).toEqual(["decision_record_invalid"]);
  });

  test("a raw-arguments member (never written by the producer) → decision_record_invalid", () => {
    expect(codes(withLine(0, (r) => (r.data.arguments = { text: "secret" })))).toEqual(["decision_record_invalid"]);
  });

  test("per-record findings are capped at 10, plus one summary", () => {
    const input = goldenInput("clean");
    const template = ndjsonRecords(input, D)[0];
    setDecisions(input, Array.from({ length: 50 }, () => ({ ...template, source: "vigil://x" })));
    const r = verify(input);
    expect(r.reasons).toHaveLength(11);
    expect(r.reasons.at(-1)!.message).toMatch(/40 more/);
  });
});

describe("receipts", () => {
  test("dropped > 0 with a partial tail → receipts_lost (incomplete)", () => {
    const input = goldenInput("clean");
    setReceipts(input, ndjsonRecords(input, R).slice(0, 3), '{"spec', 2);
    const r = verify(input);
    expect(r.verdict).toBe("incomplete");
    expect(r.reasons.map((f) => [f.code, f.effect])).toEqual([["receipts_lost", "loss"]]);
  });

  test("a partial tail without recorded loss → receipts_partial_tail", () => {
    const input = goldenInput("clean");
    setReceipts(input, ndjsonRecords(input, R), '{"spec', 0);
    expect(codes(input)).toEqual(["receipts_partial_tail"]);
  });

  test("a receipt seq gap → receipt_seq_gap", () => {
    const input = goldenInput("clean");
    const records = ndjsonRecords(input, R);
    records.splice(1, 1);
    setReceipts(input, records);
    expect(codes(input)).toContain("receipt_seq_gap");
  });

  test("a receipt of another session → receipt_session_mismatch", () => {
    const input = goldenInput("clean");
    const records = ndjsonRecords(input, R);
    records[0].data.session_id = "other";
    setReceipts(input, records);
    expect(codes(input)).toEqual(["receipt_session_mismatch"]);
  });

  test("a receipt with an unknown outcome → receipt_record_invalid", () => {
    const input = goldenInput("clean");
    const records = ndjsonRecords(input, R);
    records[0].data.outcome = "maybe";
    setReceipts(input, records);
    expect(codes(input)).toEqual(["receipt_record_invalid"]);
  });

  test("a digest mismatch → receipts_digest_mismatch", () => {
    const input = goldenInput("clean");
    editStop(input, (d) => {
      d.receipts.prefix_sha256 = "a".repeat(64);
    });
    expect(codes(input)).toEqual(["receipts_digest_mismatch"]);
  });

  test("receipts that could not be read → file_not_regular", () => {
    const input = goldenInput("clean");
    input.files[R] = { kind: "problem", problem: "not_regular", message: "is a symbolic link" };
    expect(codes(input)).toContain("file_not_regular");
  });

  test("--require-receipts without receipts or accounting → receipts_missing; without the flag → closed", () => {
    const input = goldenInput("clean");
    setFile(input, R, MISSING);
    editStop(input, (d) => {
      d.receipts = null;
    });
    expect(codes(input)).toEqual([]);
    expect(codes(input, true)).toEqual(["receipts_missing"]);
  });
});

describe("envelopes, ids, and the context pair", () => {
  test("a stop record of another type → envelope_invalid", () => {
    const input = goldenInput("clean");
    editStop(input, (_d, r) => {
      r.type = "vigil.mcp.session.stop.v2";
    });
    expect(codes(input)).toEqual(["envelope_invalid"]);
  });

  test("a context record of another type → envelope_invalid on the context", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.context, (r) => {
      r.type = "vigil.mcp.session.context.v0";
    });
    const r = verify(input);
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["envelope_invalid", CAPTURE.context]]);
  });

  test("the context's source differs from the stop's → source_mismatch (and event_source agrees no more)", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.context, (r) => {
      r.source = "vigil://other";
    });
    expect(codes(input)).toEqual(["source_mismatch"]);
  });

  test("context event_source differs → context_field_mismatch", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.context, (r) => {
      r.data.event_source = "vigil://other";
    });
    expect(codes(input)).toEqual(["context_field_mismatch"]);
  });

  test("context server_id differs → context_field_mismatch", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.context, (r) => {
      r.data.server_id = "other";
    });
    expect(codes(input)).toEqual(["context_field_mismatch"]);
  });

  test("a context present while the stop says none was requested → context_pair_mismatch", () => {
    const input = goldenInput("clean");
    editStop(input, (d) => {
      d.session_context_id = null;
    });
    expect(codes(input)).toEqual(["context_pair_mismatch"]);
  });

  test("no context, and the stop says none was requested → closed", () => {
    const input = goldenInput("clean");
    setFile(input, CAPTURE.context, MISSING);
    editStop(input, (d) => {
      d.session_context_id = null;
    });
    expect(codes(input)).toEqual([]);
  });

  test("a stop record that cannot be read is reported as such, not also as missing", () => {
    const input = goldenInput("clean");
    input.files[CAPTURE.stop] = { kind: "problem", problem: "too_large", message: "too large" };
    const r = verify(input);
    expect(r.reasons.map((f) => f.code)).not.toContain("stop_missing");
    expect(r.reasons.map((f) => f.code)).toContain("file_too_large");
    expect(r.session_id).toBeNull();
    expect(r.server).toBeNull();
    expect(r.decisions).toEqual({ written: null, dropped: null, verified: 0 });
  });

  // Regression: `stop_missing` used to be skipped whenever any earlier finding named
  // session-stop.json — including the manifest's `manifest_file_missing` for the same file.
  test("a stop record listed in the manifest but missing → manifest_file_missing and stop_missing", () => {
    const input = goldenInput("clean");
    setFile(input, CAPTURE.stop, MISSING, { rehash: false });
    expect(codes(input)).toEqual(["manifest_file_missing", "stop_missing"]);
  });
});

describe("the manifest", () => {
  test("missing manifest: file_missing, and the other checks still run", () => {
    const input = goldenInput("clean");
    input.files[CAPTURE.manifest] = MISSING;
    editStop(input, (d) => {
      d.decision_events_written = 5;
    }, { rehash: false });
    expect(codes(input)).toEqual(["decision_count_mismatch", "file_missing"]);
  });

  test("same size, other bytes → manifest_file_changed", () => {
    const input = goldenInput("clean");
    const bytes = bytesOf(input, CAPTURE.context);
    bytes[bytes.length - 2] = 0x20; // "}" → " " keeps the size; the record is then not JSON
    setBytes(input, CAPTURE.context, bytes, { rehash: false });
    expect(codes(input)).toContain("manifest_file_changed");
  });

  test("a hashed-only file (server-stderr.log) with another hash → manifest_file_changed", () => {
    const input = goldenInput("clean");
    input.files[CAPTURE.serverStderr] = { kind: "hashed", bytes: 1, sha256: "0".repeat(64) };
    const r = verify(input);
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([["manifest_file_changed", CAPTURE.serverStderr]]);
  });

  test("stray entries → one manifest_file_unlisted each", () => {
    const input = goldenInput("clean");
    input.strayEntries = ["a", "b"];
    const r = verify(input);
    expect(r.reasons.map((f) => [f.code, f.file])).toEqual([
      ["manifest_file_unlisted", "a"],
      ["manifest_file_unlisted", "b"],
    ]);
  });

  test("server_id differs from the stop's → manifest_mismatch; event_source → source_mismatch", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.manifest, (m) => {
      m.server_id = "other";
      m.event_source = "vigil://other";
    }, { rehash: false });
    expect(codes(input)).toEqual(["manifest_mismatch", "source_mismatch"]);
  });

  test("session_id null in the manifest while a stop record exists → manifest_mismatch", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.manifest, (m) => {
      m.session_id = null;
    }, { rehash: false });
    expect(codes(input)).toEqual(["manifest_mismatch"]);
  });

  test("a manifest with a non-hex digest → record_invalid", () => {
    const input = goldenInput("clean");
    editJson(input, CAPTURE.manifest, (m) => {
      m.files[CAPTURE.stop].sha256 = "Z".repeat(64);
    }, { rehash: false });
    expect(codes(input)).toEqual(["record_invalid"]);
    expect(jsonOf(input, CAPTURE.manifest).format).toBe("vigil.capture.v1");
  });
});
