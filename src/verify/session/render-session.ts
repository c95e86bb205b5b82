/** The two faces of a serve session report, in render.ts's style: a text (verdict first) and one JSON document. */
import type { FindingCode } from "../findings.ts";
import { findingLines, notAuthenticatedLine, printable, reasonsJson } from "../render.ts";
import type { SessionReport } from "./verify-session.ts";

const LIVE_NOTE =
  "closed describes the files as they stand: a daemon still running can append after verify read them, " +
  "and records cut back to exactly the last signed point cannot be told from records that ended there";

export const SESSION_NOT_AUTHENTICATED_NOTE =
  `${LIVE_NOTE}; chain and accounting agreement does not authenticate the producer: anyone who can write these files can forge a consistent session.`;

export const SESSION_AUTHENTICATED_NOTE =
  `${LIVE_NOTE}; the signatures show that the holder of the signing key wrote the covered records as they are, not that what they record is true.`;

/** Here chain_head_mismatch is a signed stop naming a head its log does not have: a reason the signature does not vouch. */
const SESSION_AUTHENTICATION_CODES: ReadonlySet<string> = new Set<FindingCode>(["chain_head_mismatch"]);

export function renderSessionText(r: SessionReport): string {
  const e = r.events;
  const d = r.decisions;
  const lines: string[] = [r.verdict];
  lines.push(
    `  serve session ${printable(r.session_id)}: events ${e.received} received, ${e.delivered} delivered, ${e.dropped} dropped, ${e.gaps} gaps, ${e.pending.length} pending; ` +
      `decisions ${d.written} written, ${d.verified} verified`,
  );
  lines.push(`  ${authenticationLine(r)}`);
  lines.push(...findingLines(r.reasons));
  lines.push(`note: ${r.authentication.authenticated ? SESSION_AUTHENTICATED_NOTE : SESSION_NOT_AUTHENTICATED_NOTE}`);
  return lines.join("\n");
}

/** `signed by <keyid> — covers …`, or why the session is not authenticated. */
function authenticationLine(r: SessionReport): string {
  const a = r.authentication;
  if (!a.authenticated || a.covered === null) return notAuthenticatedLine(a.keysGiven, r.reasons, SESSION_AUTHENTICATION_CODES);
  const logs = Object.entries(a.covered.logs).map(([name, head]) => `${printable(name)} ${head.count} record${head.count === 1 ? "" : "s"}`);
  const stops = `${a.stops} stop envelope${a.stops === 1 ? "" : "s"}`;
  const checkpoints = `${a.checkpoints} checkpoint${a.checkpoints === 1 ? "" : "s"}`;
  return `signed by ${a.keyids.map(printable).join(", ")} — covers ${logs.join(", ")}; ${stops}, ${checkpoints}`;
}

export function renderSessionJson(r: SessionReport): string {
  const a = r.authentication;
  return JSON.stringify({
    verdict: r.verdict,
    reasons: reasonsJson(r.reasons),
    kind: r.kind,
    session_id: r.session_id,
    events: r.events,
    decisions: r.decisions,
    authentication: { authenticated: a.authenticated, keyid: a.keyid, keyids: a.keyids, stops: a.stops, checkpoints: a.checkpoints, covered: a.covered },
  });
}
