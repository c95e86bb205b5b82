/**
 * Tampered variants of golden captures (verify.md "Tests"): each maps to its verdict (exit status)
 * and reason code. Variants meant to reach a deeper check re-hash the manifest entry of the changed
 * file (`rehash: true`) so that the manifest agrees and the deeper check is what fails.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CAPTURE,
  type CaptureCopy,
  type CaptureKind,
  codesOf,
  copyCapture,
  goldenDir,
  ndjsonLines,
  rehashManifest,
  removeFile,
  runVerify,
  tamper,
  tamperJson,
  tamperManifest,
  verifyJson,
} from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";

const cleanups = e2eSuite();

/** A fresh copy of a committed golden capture. */
function copyOf(kind: CaptureKind = "clean"): CaptureCopy {
  const c = copyCapture(goldenDir(kind));
  cleanups.add(() => c.cleanup());
  return c;
}

const EXIT = { closed: 0, incomplete: 1, unknown: 2, usage: 64 } as const;

/** verify --json on dir: the verdict, its exit status, and the reason codes. */
function verdictOf(dir: string, extra: string[] = []) {
  const doc = verifyJson(dir, extra);
  expect(doc.code).toBe(EXIT[doc.verdict]);
  return doc;
}

function expectUnknownWith(dir: string, codes: string[], extra: string[] = []) {
  const doc = verdictOf(dir, extra);
  expect(doc.verdict).toBe("unknown");
  expect(doc.code).toBe(EXIT.unknown);
  for (const code of codes) expect(codesOf(doc)).toContain(code);
  return doc;
}

function expectExactly(dir: string, verdict: "closed" | "incomplete" | "unknown", codes: string[], extra: string[] = []) {
  const doc = verdictOf(dir, extra);
  expect({ verdict: doc.verdict, codes: codesOf(doc).sort() }).toEqual({ verdict, codes: [...codes].sort() });
  return doc;
}

const D = CAPTURE.decisions;
const replaceOnce = (from: string, to: string) => (bytes: Buffer) => {
  const text = bytes.toString("utf8");
  if (!text.includes(from)) throw new Error(`tamper: ${JSON.stringify(from)} not found`);
  return text.replace(from, to);
};
const decisionLines = (dir: string) => ndjsonLines(readFileSync(join(dir, D))).lines;

describe("a changed byte", () => {
  test("in decisions.ndjson, manifest untouched → manifest_file_changed (and the digest check agrees)", () => {
    const { dir } = copyOf();
    tamper(dir, D, replaceOnce('"reason_code":"P_ALLOW"', '"reason_code":"P_ALLOX"'));
    const doc = expectUnknownWith(dir, ["manifest_file_changed", "decision_digest_mismatch"]);
    expect(doc.reasons.find((r) => r.code === "manifest_file_changed")!.file).toBe(D);
  });

  test("in decisions.ndjson, manifest re-hashed → decision_digest_mismatch only", () => {
    const { dir } = copyOf();
    tamper(dir, D, replaceOnce('"reason_code":"P_ALLOW"', '"reason_code":"P_ALLOX"'), { rehash: true });
    expectExactly(dir, "unknown", ["decision_digest_mismatch"]);
  });

  test("in session-stop.json (still a valid record), manifest untouched → manifest_file_changed only", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, replaceOnce('"client_messages":', '"client_messages":1'));
    expectExactly(dir, "unknown", ["manifest_file_changed"]);
  });

  test("in server-stderr.log (hashed, never parsed) → manifest_file_changed", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.serverStderr, (b) => Buffer.concat([b, Buffer.from("appended later\n")]));
    const doc = expectExactly(dir, "unknown", ["manifest_file_changed"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.serverStderr);
  });

  test("in the recorded prefix digest of a re-hashed stop record → decision_digest_mismatch", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.data.decision_prefix_sha256 = "0".repeat(64);
    }, { rehash: true });
    expectExactly(dir, "unknown", ["decision_digest_mismatch"]);
  });
});

describe("lines of the decision log", () => {
  test("a truncated last line → decision_partial_tail, decision_count_mismatch (and digest)", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => b.subarray(0, b.length - 40), { rehash: true });
    expectExactly(dir, "unknown", ["decision_partial_tail", "decision_count_mismatch", "decision_digest_mismatch"]);
  });

  test("a truncated line in an incomplete log: the tail is allowed, the count is not", () => {
    const { dir } = copyOf("poisoned");
    // Cut into the only complete line: 0 complete lines, but the stop record says 1 was written.
    tamper(dir, D, (b) => b.subarray(0, 100), { rehash: true });
    const doc = expectUnknownWith(dir, ["decision_count_mismatch", "decision_digest_mismatch", "decision_events_lost"]);
    expect(codesOf(doc)).not.toContain("decision_partial_tail");
  });

  test("the poisoned tail removed (a clean cut at the last newline) still matches: incomplete", () => {
    const { dir } = copyOf("poisoned");
    tamper(dir, D, (b) => b.subarray(0, b.lastIndexOf(0x0a) + 1), { rehash: true });
    expectExactly(dir, "incomplete", ["decision_events_lost"]);
  });

  test("a removed last line → decision_count_mismatch (and digest)", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => Buffer.concat(ndjsonLines(b).lines.slice(0, -1)), { rehash: true });
    expectExactly(dir, "unknown", ["decision_count_mismatch", "decision_digest_mismatch"]);
  });

  test("a removed middle line → decision_count_mismatch and decision_seq_gap", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => {
      const lines = ndjsonLines(b).lines;
      return Buffer.concat([lines[0]!, ...lines.slice(2)]);
    }, { rehash: true });
    expectUnknownWith(dir, ["decision_count_mismatch", "decision_seq_gap", "decision_digest_mismatch"]);
  });

  test("reordered lines → decision_seq_gap and decision_digest_mismatch, count unchanged", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => {
      const [a, c, ...rest] = ndjsonLines(b).lines;
      return Buffer.concat([c!, a!, ...rest]);
    }, { rehash: true });
    const doc = expectUnknownWith(dir, ["decision_seq_gap", "decision_digest_mismatch"]);
    expect(codesOf(doc)).not.toContain("decision_count_mismatch");
  });

  test("extra bytes after the last newline of a complete log → decision_partial_tail only", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => Buffer.concat([b, Buffer.from('{"specversion":"1.0","ty')]), { rehash: true });
    expectExactly(dir, "unknown", ["decision_partial_tail"]);
  });

  test("a line from another session → decision_session_mismatch", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => {
      const lines = ndjsonLines(b).lines;
      const rec = JSON.parse(lines[1]!.toString());
      rec.data.session_id = "f".repeat(32);
      lines[1] = Buffer.from(`${JSON.stringify(rec)}\n`);
      return Buffer.concat(lines);
    }, { rehash: true });
    expectUnknownWith(dir, ["decision_session_mismatch"]);
  });

  test("a line of another type → decision_record_invalid", () => {
    const { dir } = copyOf();
    tamper(dir, D, replaceOnce('"type":"vigil.mcp.decision.v1"', '"type":"vigil.mcp.decision.v2"'), { rehash: true });
    expectUnknownWith(dir, ["decision_record_invalid"]);
  });

  test("a 10,001-line log → too_many_lines, refused before parsing", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => Buffer.concat(Array(10_001).fill(ndjsonLines(b).lines[0]!)), { rehash: true });
    const doc = expectUnknownWith(dir, ["too_many_lines"]);
    expect(doc.decisions.verified).toBe(0);
    expect(codesOf(doc)).not.toContain("decision_seq_gap"); // nothing was parsed
  });

  test("a 10,000-line log is within the bound (other findings, not too_many_lines)", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => Buffer.concat(Array(10_000).fill(ndjsonLines(b).lines[0]!)), { rehash: true });
    const doc = expectUnknownWith(dir, ["decision_count_mismatch", "decision_seq_gap"]);
    expect(codesOf(doc)).not.toContain("too_many_lines");
    // A hostile log cannot flood the report: per-record findings are capped.
    expect(doc.reasons.length).toBeLessThan(20);
  });
});

describe("strict JSON in the records", () => {
  test("a duplicate key in the stop record → duplicate_key", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, replaceOnce('"exit_code":0,', '"exit_code":0,"exit_code":0,'), { rehash: true });
    const doc = expectExactly(dir, "unknown", ["duplicate_key"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.stop);
    expect(doc.session_id).toBeNull();
  });

  test("a duplicate key spelled with an escape (\"exit\\u005fcode\") → duplicate_key", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, replaceOnce('"exit_code":0,', '"exit_code":0,"exit\\u005fcode":0,'), { rehash: true });
    expectExactly(dir, "unknown", ["duplicate_key"]);
  });

  test("1e400 in a companion → non_finite_number", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.context, (b) => b.toString().replace(/"server_pid":\d+/, '"server_pid":1e400'), { rehash: true });
    const doc = expectExactly(dir, "unknown", ["non_finite_number"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.context);
  });

  test("-1e400 in the stop record → non_finite_number", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, replaceOnce('"exit_code":0,', '"exit_code":-1e400,'), { rehash: true });
    expectExactly(dir, "unknown", ["non_finite_number"]);
  });

  // The context is {… "data":{… "dry_run":false …}}: the envelope is depth 1, data depth 2, and
  // wrapping dry_run's value in k arrays makes the document 2 + k levels deep.
  const nestDryRun = (k: number) => replaceOnce('"dry_run":false', `"dry_run":${"[".repeat(k)}false${"]".repeat(k)}`);

  test("depth 33 in a companion → too_deep", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.context, nestDryRun(31), { rehash: true });
    const doc = expectExactly(dir, "unknown", ["too_deep"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.context);
  });

  test("depth exactly 32 is not refused for depth: it fails the schema instead (record_invalid)", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.context, nestDryRun(30), { rehash: true });
    expectExactly(dir, "unknown", ["record_invalid"]);
  });

  test("depth 33 on one decision line → too_deep for that line", () => {
    const { dir } = copyOf();
    // Line 1's data.dry_run, nested 31 more: 2 + 31 = 33.
    tamper(dir, D, (b) => {
      const lines = ndjsonLines(b).lines;
      lines[1] = Buffer.from(nestDryRun(31)(lines[1]!));
      return Buffer.concat(lines);
    }, { rehash: true });
    const doc = expectUnknownWith(dir, ["too_deep", "decision_digest_mismatch"]);
    expect(doc.decisions.verified).toBe(doc.decisions.written! - 1);
  });

  test("invalid UTF-8 in the stop record → invalid_utf8", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, (b) => {
      const at = b.indexOf('"server_id":"') + '"server_id":"'.length;
      const out = Buffer.from(b);
      out[at] = 0xff;
      return out;
    }, { rehash: true });
    expectExactly(dir, "unknown", ["invalid_utf8"]);
  });

  test("a stop record that is not JSON → invalid_json", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.stop, (b) => b.subarray(0, b.length - 10), { rehash: true });
    expectExactly(dir, "unknown", ["invalid_json"]);
  });
});

describe("files that are not what they should be", () => {
  test("a symlinked companion → file_not_regular", () => {
    const { dir, root } = copyOf();
    const target = join(root, "context-elsewhere.json");
    writeFileSync(target, readFileSync(join(dir, CAPTURE.context)));
    rmSync(join(dir, CAPTURE.context));
    symlinkSync(target, join(dir, CAPTURE.context));
    const doc = expectUnknownWith(dir, ["file_not_regular"]);
    expect(doc.reasons.every((r) => r.file === CAPTURE.context)).toBe(true);
  });

  test("a symlinked decision log → file_not_regular", () => {
    const { dir, root } = copyOf();
    const target = join(root, "decisions-elsewhere.ndjson");
    writeFileSync(target, readFileSync(join(dir, D)));
    rmSync(join(dir, D));
    symlinkSync(target, join(dir, D));
    expectUnknownWith(dir, ["file_not_regular"]);
  });

  test("a FIFO in place of the decision log → file_not_regular, without blocking", () => {
    const { dir } = copyOf();
    rmSync(join(dir, D));
    const r = Bun.spawnSync(["mkfifo", join(dir, D)]);
    expect(r.exitCode).toBe(0);
    expectUnknownWith(dir, ["file_not_regular"]);
  });

  test("a directory in place of the stop record → file_not_regular", () => {
    const { dir } = copyOf();
    rmSync(join(dir, CAPTURE.stop));
    mkdirSync(join(dir, CAPTURE.stop));
    expectUnknownWith(dir, ["file_not_regular"]);
  });

  test("a 65 KiB companion → file_too_large", () => {
    const { dir } = copyOf();
    // Still a valid record: JSON whitespace after the value.
    tamper(dir, CAPTURE.context, (b) => Buffer.concat([b, Buffer.alloc(65 * 1024 - b.length, 0x20)]), { rehash: true });
    const doc = expectUnknownWith(dir, ["file_too_large"]);
    expect(doc.reasons.every((r) => r.code === "file_too_large" && r.file === CAPTURE.context)).toBe(true);
  });

  test("a companion of exactly 64 KiB is within the bound: closed", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.context, (b) => Buffer.concat([b, Buffer.alloc(64 * 1024 - b.length, 0x20)]), { rehash: true });
    expectExactly(dir, "closed", []);
  });

  test("a decision log over 8 MiB → file_too_large", () => {
    const { dir } = copyOf();
    tamper(dir, D, (b) => Buffer.concat([b, Buffer.alloc(8 * 1024 * 1024 + 1 - b.length, 0x20)]), { rehash: true });
    expectUnknownWith(dir, ["file_too_large"]);
  });
});

describe("identities and the context pair", () => {
  test("a mismatched session id in the context → context_field_mismatch (and its id no longer pairs)", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.context, (r) => {
      r.data.session_id = "0".repeat(32);
    }, { rehash: true });
    const doc = expectUnknownWith(dir, ["context_field_mismatch", "context_id_mismatch"]);
    expect(doc.reasons.find((r) => r.code === "context_field_mismatch")!.message).toMatch(/session_id/);
  });

  test("a context re-identified as another session's → context_pair_mismatch", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.context, (r) => {
      const other = "0".repeat(32);
      r.id = `evt_context_${other}`;
      r.data.session_id = other;
    }, { rehash: true });
    expectUnknownWith(dir, ["context_pair_mismatch", "context_field_mismatch"]);
  });

  test("the stop naming another context → context_pair_mismatch only", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.data.session_context_id = "evt_context_other";
    }, { rehash: true });
    expectExactly(dir, "unknown", ["context_pair_mismatch"]);
  });

  test("a different server_pid in the context → context_field_mismatch", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.context, (r) => {
      r.data.server_pid += 1;
    }, { rehash: true });
    const doc = expectExactly(dir, "unknown", ["context_field_mismatch"]);
    expect(doc.reasons[0]!.message).toMatch(/server_pid/);
  });

  test("a stop id that is not evt_stop_<session_id> → stop_id_mismatch", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.id = "evt_stop_somebody_else";
    }, { rehash: true });
    expectExactly(dir, "unknown", ["stop_id_mismatch"]);
  });

  test("a different source in the stop record → source_mismatch", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.source = "vigil://elsewhere";
    }, { rehash: true });
    expectUnknownWith(dir, ["source_mismatch"]);
  });

  test("a stop record without its context (manifest re-hashed) → context_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.context, { rehash: true });
    expectExactly(dir, "unknown", ["context_missing"]);
  });

  test("a stop record without its context (manifest untouched) → manifest_file_missing and context_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.context);
    expectExactly(dir, "unknown", ["manifest_file_missing", "context_missing"]);
  });
});

describe("the manifest and the closure", () => {
  test("a missing manifest → file_missing (the capture was never closed)", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.manifest);
    const doc = expectExactly(dir, "unknown", ["file_missing"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.manifest);
  });

  test("a missing stop record (manifest re-hashed) → stop_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.stop, { rehash: true });
    const doc = expectExactly(dir, "unknown", ["stop_missing"]);
    expect(doc.session_id).toBeNull();
    expect(doc.server).toBeNull();
  });

  test("no manifest and no stop record (vigil killed before closing) → file_missing and stop_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.manifest);
    removeFile(dir, CAPTURE.stop);
    expectExactly(dir, "unknown", ["file_missing", "stop_missing"]);
  });

  // Regression: stop_missing used to be suppressed whenever any finding named session-stop.json,
  // including the manifest's manifest_file_missing, so a deleted stop record was reported only as
  // a manifest discrepancy, never as the missing closure it is.
  test("a missing stop record (manifest untouched) → manifest_file_missing and stop_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.stop);
    expectExactly(dir, "unknown", ["manifest_file_missing", "stop_missing"]);
  });

  test("an unknown manifest format → manifest_format_unsupported", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      m.format = "vigil.capture.v3";
    });
    expectExactly(dir, "unknown", ["manifest_format_unsupported"]);
  });

  test("a v1 capture whose manifest claims v2 → record_invalid (its stop record is not v2)", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      m.format = "vigil.capture.v2";
    });
    expectExactly(dir, "unknown", ["record_invalid"]);
  });

  test("a stray file in the capture dir → manifest_file_unlisted", () => {
    const { dir } = copyOf();
    writeFileSync(join(dir, "notes.txt"), "added later\n");
    const doc = expectExactly(dir, "unknown", ["manifest_file_unlisted"]);
    expect(doc.reasons[0]!.file).toBe("notes.txt");
  });

  test("a capture file present but not in the manifest → manifest_file_unlisted", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      delete m.files[CAPTURE.serverStderr];
    });
    const doc = expectExactly(dir, "unknown", ["manifest_file_unlisted"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.serverStderr);
  });

  test("a manifest listing a file that is not part of the format → manifest_mismatch", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      m.files["extra.bin"] = { bytes: 0, sha256: "0".repeat(64) };
    });
    expectExactly(dir, "unknown", ["manifest_mismatch"]);
  });

  test("a manifest naming another session → manifest_mismatch", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      m.session_id = "0".repeat(32);
    });
    expectExactly(dir, "unknown", ["manifest_mismatch"]);
  });

  test("a manifest with an unknown member → record_invalid", () => {
    const { dir } = copyOf();
    tamperManifest(dir, (m) => {
      m.signature = "trust me";
    });
    expectExactly(dir, "unknown", ["record_invalid"]);
  });
});

describe("receipts", () => {
  test("receipts removed while the stop record accounts for them → receipts_missing", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.receipts, { rehash: true });
    expectExactly(dir, "unknown", ["receipts_missing"]);
  });

  test("--require-receipts with receipts removed (and unaccounted) → receipts_missing; closed without the flag", () => {
    const { dir } = copyOf();
    removeFile(dir, CAPTURE.receipts);
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.data.receipts = null;
    });
    rehashManifest(dir, [CAPTURE.receipts, CAPTURE.stop]);
    expectExactly(dir, "closed", []);
    const doc = expectExactly(dir, "unknown", ["receipts_missing"], ["--require-receipts"]);
    expect(doc.reasons[0]!.file).toBe(CAPTURE.receipts);
  });

  test("a removed receipt line → receipts_count_mismatch", () => {
    const { dir } = copyOf();
    tamper(dir, CAPTURE.receipts, (b) => Buffer.concat(ndjsonLines(b).lines.slice(0, -1)), { rehash: true });
    expectExactly(dir, "unknown", ["receipts_count_mismatch", "receipts_digest_mismatch"]);
  });

  test("receipts present but the stop record has no receipts accounting → receipts_accounting_missing", () => {
    const { dir } = copyOf();
    tamperJson(dir, CAPTURE.stop, (r) => {
      r.data.receipts = null;
    }, { rehash: true });
    expectExactly(dir, "unknown", ["receipts_accounting_missing"]);
  });
});

describe("usage errors → 64", () => {
  test("CAPTURE_DIR missing", () => {
    const { root } = copyOf();
    const r = runVerify([join(root, "no-such-dir"), "--json"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/does not exist/);
  });

  test("CAPTURE_DIR is a file", () => {
    const { dir } = copyOf();
    const r = runVerify([join(dir, CAPTURE.manifest)]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/not a directory/);
  });

  test("an unknown flag", () => {
    const { dir } = copyOf();
    const r = runVerify([dir, "--bogus"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/unknown flag --bogus/);
    expect(r.stdout).toBe("");
  });

  test("no CAPTURE_DIR, or two", () => {
    expect(runVerify([]).code).toBe(EXIT.usage);
    const { dir } = copyOf();
    expect(runVerify([dir, dir]).code).toBe(EXIT.usage);
  });
});
