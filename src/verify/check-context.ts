/**
 * The session-context record (verify.md check 3): its envelope and id, and the context pair — the
 * stop record names the context, and the stable context fields agree between the two.
 */
import { CAPTURE_FILES, CONTEXT_TYPE, contextEventId } from "../evidence/format.ts";
import type { CaptureInput } from "./capture-input.ts";
import { type Finding, unknownFinding } from "./findings.ts";
import { readRecord } from "./read-record.ts";
import { type ContextRecordT, ContextRecord, type StopRecordT } from "./schemas.ts";

const FILE = CAPTURE_FILES.context;

/** The context record, checked on its own (type, id); null when it is absent or unreadable (the latter with a finding). */
export function readContext(input: CaptureInput, findings: Finding[]): ContextRecordT | null {
  const ctx = readRecord(input.files[FILE], FILE, ContextRecord, findings) as ContextRecordT | null;
  if (ctx === null) return null;
  if (ctx.specversion !== "1.0" || ctx.type !== CONTEXT_TYPE) findings.push(unknownFinding("envelope_invalid", FILE, `not a ${CONTEXT_TYPE} event`));
  if (ctx.id !== contextEventId(ctx.data.session_id)) findings.push(unknownFinding("context_id_mismatch", FILE, `id ${ctx.id} is not evt_context_<session_id>`));
  return ctx;
}

export function checkContextPair(input: CaptureInput, stop: StopRecordT, findings: Finding[]): void {
  const state = input.files[FILE];
  const claimed = stop.data.session_context_id;
  if (state.kind === "problem" && state.problem === "missing") {
    if (claimed !== null) findings.push(unknownFinding("context_missing", FILE, `session-stop names context ${claimed}, but there is no context record`));
    return;
  }
  const ctx = readContext(input, findings);
  if (ctx === null) return;
  const c = ctx.data;
  const s = stop.data;
  if (claimed !== ctx.id) findings.push(unknownFinding("context_pair_mismatch", CAPTURE_FILES.stop, `session_context_id ${JSON.stringify(claimed)} does not name the context record ${ctx.id}`));
  if (ctx.source !== stop.source) findings.push(unknownFinding("source_mismatch", FILE, "source differs from the stop record's"));
  const stable: [string, unknown, unknown][] = [
    ["session_id", c.session_id, s.session_id],
    ["server_id", c.server_id, s.server_id],
    ["server_pid", c.server_pid, s.server_pid],
    ["event_source", c.event_source, stop.source],
  ];
  for (const [field, a, b] of stable) {
    if (a !== b) findings.push(unknownFinding("context_field_mismatch", FILE, `${field} differs between context and stop`));
  }
}
