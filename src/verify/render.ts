/** The two faces of a verify report: a readable text (verdict first) and one JSON document. */
import type { VerifyReport } from "./verify-capture.ts";

export const NON_AUTHENTICATION_NOTE =
  "closed means a recorded ending whose retained accounting matches it, not that the server ran successfully; " +
  "file and digest agreement does not authenticate the producer: anyone who can write these files can forge a consistent capture.";

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
    const decisions = d.written === null ? "no decision log" : `decisions ${d.written} written, ${d.dropped} dropped, ${d.verified} verified`;
    lines.push(`  session ${printable(r.session_id)}: ${server}; ${decisions}`);
  }
  for (const f of r.reasons) lines.push(`${f.effect === "loss" ? "!" : "✗"} ${printable(f.file)}: ${printable(f.message)}`);
  lines.push(`note: ${NON_AUTHENTICATION_NOTE}`);
  return lines.join("\n");
}

export function renderJson(r: VerifyReport): string {
  return JSON.stringify({
    verdict: r.verdict,
    reasons: r.reasons.map(({ code, file, message }) => ({ code, file, message })),
    session_id: r.session_id,
    server: r.server,
    decisions: r.decisions,
  });
}
