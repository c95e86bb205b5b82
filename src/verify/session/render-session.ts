/** The two faces of a serve session report, in render.ts's style: a text (verdict first) and one JSON document. */
import { printable } from "../render.ts";
import type { SessionReport } from "./verify-session.ts";

const LIVE_NOTE =
  "closed describes the files as they stand: a daemon still running can append after verify read them, " +
  "and records cut back to exactly the last signed point cannot be told from records that ended there";

export const SESSION_NOT_AUTHENTICATED_NOTE =
  `${LIVE_NOTE}; chain and accounting agreement does not authenticate the producer: anyone who can write these files can forge a consistent session.`;

export const SESSION_AUTHENTICATED_NOTE =
  `${LIVE_NOTE}; the signatures show that the holder of the signing key wrote the covered records as they are, not that what they record is true.`;

/** Findings that can be why a session is not authenticated, named in its line. */
const AUTHENTICATION_CODES = new Set<string>([
  "signature_missing",
  "signature_invalid",
  "key_untrusted",
  "envelope_invalid",
  "subject_missing",
  "subject_mismatch",
  "predicate_mismatch",
  "chain_head_mismatch",
  "checkpoint_invalid",
  "checkpoint_mismatch",
]);

export function renderSessionText(r: SessionReport): string {
  const e = r.events;
  const d = r.decisions;
  const lines: string[] = [r.verdict];
  lines.push(
    `  serve session ${printable(r.session_id)}: events ${e.received} received, ${e.delivered} delivered, ${e.dropped} dropped, ${e.gaps} gaps, ${e.pending.length} pending; ` +
      `decisions ${d.written} written, ${d.verified} verified`,
  );
  lines.push(`  ${authenticationLine(r)}`);
  for (const f of r.reasons) lines.push(`${f.effect === "loss" ? "!" : "✗"} ${printable(f.file)}: ${printable(f.message)}`);
  lines.push(`note: ${r.authentication.authenticated ? SESSION_AUTHENTICATED_NOTE : SESSION_NOT_AUTHENTICATED_NOTE}`);
  return lines.join("\n");
}

/** `signed by <keyid> — covers …`, or why the session is not authenticated. */
function authenticationLine(r: SessionReport): string {
  const a = r.authentication;
  if (!a.keysGiven) return "not authenticated (no --public-key)";
  if (!a.authenticated || a.covered === null) {
    const why = r.reasons.find((f) => AUTHENTICATION_CODES.has(f.code))?.code;
    return `not authenticated${why === undefined ? "" : ` (${why})`}`;
  }
  const logs = Object.entries(a.covered.logs).map(([name, head]) => `${printable(name)} ${head.count} records`);
  const stops = `${a.stops} stop envelope${a.stops === 1 ? "" : "s"}`;
  const checkpoints = `${a.checkpoints} checkpoint${a.checkpoints === 1 ? "" : "s"}`;
  return `signed by ${a.keyids.map(printable).join(", ")} — covers ${logs.join(", ")}; ${stops}, ${checkpoints}`;
}

export function renderSessionJson(r: SessionReport): string {
  const a = r.authentication;
  return JSON.stringify({
    verdict: r.verdict,
    reasons: r.reasons.map(({ code, file, message }) => ({ code, file, message })),
    kind: r.kind,
    session_id: r.session_id,
    events: r.events,
    decisions: r.decisions,
    authentication: { authenticated: a.authenticated, keyid: a.keyid, keyids: a.keyids, stops: a.stops, checkpoints: a.checkpoints, covered: a.covered },
  });
}
