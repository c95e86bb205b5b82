/** The two faces of a report (verify.md "Verdicts and exit status"): text with the verdict first, and one JSON document. */
import { describe, expect, test } from "bun:test";
import { VERDICT_EXIT, VERIFY_USAGE_EXIT, lossFinding, unknownFinding, verdictOf } from "../../../src/verify/findings.ts";
import { AUTHENTICATED_NOTE, NON_AUTHENTICATION_NOTE, renderJson, renderText } from "../../../src/verify/render.ts";
import { notAuthenticated } from "../../../src/verify/report.ts";
import type { Authentication, VerifyReport } from "../../../src/verify/verify-capture.ts";

const report = (over: Partial<VerifyReport> = {}): VerifyReport => ({
  verdict: "closed",
  reasons: [],
  session_id: "abc",
  server: { exit_code: 7, signal: null },
  decisions: { written: 3, dropped: 0, verified: 3 },
  authentication: notAuthenticated(false),
  ...over,
});

const KEYID = "ab".repeat(32);
const HEAD = "cd".repeat(32);
const signed: Authentication = {
  authenticated: true,
  keyid: KEYID,
  covered: {
    files: ["capture.json", "checkpoints.ndjson", "decisions.ndjson", "receipts.ndjson", "server-stderr.log", "session-context.json", "session-stop.json"],
    logs: { "decisions.ndjson": { count: 4, head: HEAD }, "receipts.ndjson": { count: 9, head: HEAD } },
    checkpoints: 1,
  },
  keysGiven: true,
};

describe("verdicts", () => {
  test("any unknown finding wins over a loss; a loss alone is incomplete; nothing is closed", () => {
    const u = unknownFinding("decision_digest_mismatch", "decisions.ndjson", "m");
    const l = lossFinding("decision_events_lost", "decisions.ndjson", "m");
    expect(verdictOf([])).toBe("closed");
    expect(verdictOf([l])).toBe("incomplete");
    expect(verdictOf([l, u])).toBe("unknown");
    expect(verdictOf([u, l])).toBe("unknown");
  });

  test("exit statuses are public API: 0 / 1 / 2, usage 64", () => {
    expect(VERDICT_EXIT).toEqual({ closed: 0, incomplete: 1, unknown: 2 });
    expect(VERIFY_USAGE_EXIT).toBe(64);
  });
});

describe("text", () => {
  test("the verdict alone on the first line, then one line per finding, then the note", () => {
    const reasons = [
      unknownFinding("decision_count_mismatch", "decisions.ndjson", "11 complete lines but session-stop says 12 written"),
      lossFinding("decision_events_lost", "decisions.ndjson", "lost"),
    ];
    const lines = renderText(report({ verdict: "unknown", reasons })).split("\n");
    expect(lines[0]).toBe("unknown");
    expect(lines).toContain("✗ decisions.ndjson: 11 complete lines but session-stop says 12 written");
    expect(lines).toContain("! decisions.ndjson: lost");
    expect(lines.at(-1)).toBe(`note: ${NON_AUTHENTICATION_NOTE}`);
  });

  test("the note says closed does not authenticate the producer nor mean success", () => {
    expect(NON_AUTHENTICATION_NOTE).toMatch(/does not authenticate the producer/);
    expect(NON_AUTHENTICATION_NOTE).toMatch(/not that the server ran successfully/);
    expect(renderText(report())).toContain(NON_AUTHENTICATION_NOTE);
  });

  test("without a stop record there is no session line", () => {
    const text = renderText(report({ verdict: "unknown", session_id: null, server: null, decisions: { written: null, dropped: null, verified: 0 } }));
    expect(text.split("\n")).toEqual(["unknown", "  not authenticated (no --public-key)", `note: ${NON_AUTHENTICATION_NOTE}`]);
  });
});

describe("authentication, in the text", () => {
  test("without keys: the second line says so, and the note says a consistent capture can be forged", () => {
    const lines = renderText(report()).split("\n");
    expect(lines[1]).toBe("  session abc: server exit_code 7, signal null; decisions 3 written, 0 dropped, 3 verified");
    expect(lines[2]).toBe("  not authenticated (no --public-key)");
    expect(lines.at(-1)).toBe(`note: ${NON_AUTHENTICATION_NOTE}`);
  });

  test("signed: the key id and what the signature covers, and the note of a signed capture", () => {
    const lines = renderText(report({ authentication: signed })).split("\n");
    expect(lines[2]).toBe(`  signed by ${KEYID} — covers 7 files, decisions 4 records, receipts 9, 1 checkpoint`);
    expect(lines.at(-1)).toBe(`note: ${AUTHENTICATED_NOTE}`);
    expect(AUTHENTICATED_NOTE).toMatch(/not that what they record is true/);
  });

  test("only checkpoints sign (no stop record): no files, the logs as far as the last checkpoint", () => {
    const a: Authentication = { ...signed, covered: { files: [], logs: { "decisions.ndjson": { count: 2, head: HEAD } }, checkpoints: 3 } };
    expect(renderText(report({ verdict: "incomplete", authentication: a })).split("\n")[2]).toBe(`  signed by ${KEYID} — checkpoints only: covers decisions 2 records, 3 checkpoints`);
  });

  test("keys given but not authenticated: the first reason that is about authentication", () => {
    const reasons = [
      unknownFinding("decision_count_mismatch", "decisions.ndjson", "m"),
      unknownFinding("key_untrusted", "capture.dsse.json", "signed by key 0123, which is not trusted"),
    ];
    const lines = renderText(report({ verdict: "unknown", reasons, authentication: notAuthenticated(true) })).split("\n");
    expect(lines[2]).toBe("  not authenticated (key_untrusted)");
    expect(lines.at(-1)).toBe(`note: ${NON_AUTHENTICATION_NOTE}`);
  });
});

describe("--json", () => {
  test("exactly the documented members; findings without their internal effect", () => {
    const doc = JSON.parse(renderJson(report({ verdict: "incomplete", reasons: [lossFinding("decision_events_lost", "decisions.ndjson", "m")] })));
    expect(doc).toEqual({
      verdict: "incomplete",
      reasons: [{ code: "decision_events_lost", file: "decisions.ndjson", message: "m" }],
      session_id: "abc",
      server: { exit_code: 7, signal: null },
      decisions: { written: 3, dropped: 0, verified: 3 },
      authentication: { authenticated: false, keyid: null, covered: null },
    });
  });

  test("authentication: the key id and what was covered (no internal members)", () => {
    const doc = JSON.parse(renderJson(report({ authentication: signed })));
    expect(doc.authentication).toEqual({ authenticated: true, keyid: KEYID, covered: signed.covered });
    expect(Object.keys(doc)).toEqual(["verdict", "reasons", "session_id", "server", "decisions", "authentication"]);
  });

  test("one line", () => {
    expect(renderJson(report({ reasons: [unknownFinding("manifest_file_unlisted", "a\nb", "m")] }))).not.toContain("\n");
  });
});
