/**
 * in-toto Statement v1 (https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md)
 * and the vigil predicates it carries. Builders only; the shapes are pinned by golden tests.
 */
export const STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
/** The predicate of a finished wrap capture (capture.dsse.json). */
export const WRAP_SESSION_PREDICATE = "https://vigil.dev/attestation/mcp-session/v1";
/** The predicate of one stop of a serve session (stops/<n>.dsse.json). */
export const SERVE_STOP_PREDICATE = "https://vigil.dev/attestation/mcp-serve-session-stop/v1";
/** The `_type` of a checkpoint payload (checkpoints.ndjson). */
export const CHECKPOINT_TYPE = "vigil.checkpoint.v1";

export interface Subject {
  name: string;
  digest: { sha256: string };
}

export interface Statement {
  _type: typeof STATEMENT_TYPE;
  subject: Subject[];
  predicateType: string;
  predicate: Record<string, unknown>;
}

/** Subjects sorted by name, so a statement does not depend on directory order. */
export function statement(subjects: readonly Subject[], predicateType: string, predicate: Record<string, unknown>): Statement {
  const subject = [...subjects].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { _type: STATEMENT_TYPE, subject, predicateType, predicate };
}
