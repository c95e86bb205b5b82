/** The two faces of a verify report: a readable text (verdict first) and one JSON document. */
import type { Finding, FindingCode } from "./findings.ts";
import type { Authentication, VerifyReport } from "./report.ts";

export const NON_AUTHENTICATION_NOTE =
  "closed means a recorded ending whose retained accounting matches it, not that the server ran successfully; " +
  "file and digest agreement does not authenticate the producer: anyone who can write these files can forge a consistent capture.";

/** The note of an authenticated report: what a good signature does and does not add. */
export const AUTHENTICATED_NOTE =
  "closed means a recorded ending whose retained accounting matches it, not that the server ran successfully; " +
  "the signature shows that the holder of the signing key produced these files as they are, not that what they record is true.";

/**
 * Names, ids and keys in findings come from the capture itself: a file named "x\nclosed" must not
 * add a line to the report, nor an escape sequence reach the terminal. Control characters (C0, DEL,
 * C1) and line/paragraph separators are shown escaped.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function renderText(r: VerifyReport): string {
  const lines: string[] = [r.verdict];
  if (r.session_id !== null) {
    const server = r.server ? `server exit_code ${r.server.exit_code ?? "null"}, signal ${r.server.signal ?? "null"}` : "server status not recorded";
    const d = r.decisions;
    // No stop record (a session that died): nothing says what was written, only what verified.
    const decisions =
      d.written !== null
        ? `decisions ${d.written} written, ${d.dropped} dropped, ${d.verified} verified`
        : r.server === null && d.verified > 0
          ? `no stop record; decisions ${d.verified} verified`
          : "no decision log";
    lines.push(`  session ${printable(r.session_id)}: ${server}; ${decisions}`);
  }
  lines.push(`  ${authenticationLine(r)}`);
  lines.push(...findingLines(r.reasons));
  lines.push(`note: ${r.authentication.authenticated ? AUTHENTICATED_NOTE : NON_AUTHENTICATION_NOTE}`);
  return lines.join("\n");
}

/** Findings that can be why a signature does not vouch for a capture or a session, named in its authentication line. */
const AUTHENTICATION_CODES: ReadonlySet<string> = new Set<FindingCode>([
  "signature_missing",
  "signature_invalid",
  "key_untrusted",
  "envelope_invalid",
  "subject_missing",
  "subject_mismatch",
  "file_unsigned",
  "predicate_mismatch",
  "checkpoint_invalid",
  "checkpoint_mismatch",
  "checkpoint_partial_tail",
  "stop_missing",
]);
const NO_CODES: ReadonlySet<string> = new Set();

/**
 * `not authenticated`, with why: no keys were given, or the first reason that is about
 * authentication. `also`: codes that are about it only in the caller's report (a serve session's
 * chain_head_mismatch is a signed stop's claim; a capture's is its unsigned stop record's).
 */
export function notAuthenticatedLine(keysGiven: boolean, reasons: readonly Finding[], also: ReadonlySet<string> = NO_CODES): string {
  if (!keysGiven) return "not authenticated (no --public-key)";
  const why = reasons.find((f) => AUTHENTICATION_CODES.has(f.code) || also.has(f.code))?.code;
  return `not authenticated${why === undefined ? "" : ` (${why})`}`;
}

/** One text line per finding: `✗` when it makes the verdict unknown, `!` for a known loss. */
export const findingLines = (reasons: readonly Finding[]): string[] => reasons.map((f) => `${f.effect === "loss" ? "!" : "✗"} ${printable(f.file)}: ${printable(f.message)}`);

/** The findings as --json shows them: without their internal effect. */
export const reasonsJson = (reasons: readonly Finding[]) => reasons.map(({ code, file, message }) => ({ code, file, message }));

/** `signed by <keyid> — covers …`, or why the capture is not authenticated. */
export function authenticationLine(r: VerifyReport): string {
  const a = r.authentication;
  if (!a.authenticated || a.covered === null || a.keyid === null) return notAuthenticatedLine(a.keysGiven, r.reasons);
  return `signed by ${printable(a.keyid)} — ${coverage(a.covered)}`;
}

function coverage(c: NonNullable<Authentication["covered"]>): string {
  const logs = Object.entries(c.logs).map(([name, head], i) => `${printable(name.replace(/\.ndjson$/, ""))} ${head.count}${i === 0 ? ` record${head.count === 1 ? "" : "s"}` : ""}`);
  const checkpoints = `${c.checkpoints} checkpoint${c.checkpoints === 1 ? "" : "s"}`;
  // Without files, only checkpoints sign: a session that ended without its stop record.
  const files = c.files.length === 0 ? "checkpoints only: covers" : `covers ${c.files.length} file${c.files.length === 1 ? "" : "s"},`;
  return [`${files} ${logs.length === 0 ? "no log records" : logs.join(", ")}`, checkpoints].join(", ");
}

export function renderJson(r: VerifyReport): string {
  const a = r.authentication;
  return JSON.stringify({
    verdict: r.verdict,
    reasons: reasonsJson(r.reasons),
    session_id: r.session_id,
    server: r.server,
    decisions: r.decisions,
    authentication: { authenticated: a.authenticated, keyid: a.keyid, covered: a.covered },
  });
}
