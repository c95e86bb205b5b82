/**
 * Findings and verdicts (verify.md). Codes are stable lower_snake strings: public API for
 * `--json` consumers. A finding either makes the capture `unknown` (absent, malformed, over a
 * bound, inconsistent, changed) or records a known `loss` (which makes it `incomplete`).
 */
export type Verdict = "closed" | "incomplete" | "unknown";

export const VERDICT_EXIT: Record<Verdict, number> = { closed: 0, incomplete: 1, unknown: 2 };
/** Bad arguments, or CAPTURE_DIR missing / not a directory. */
export const VERIFY_USAGE_EXIT = 64;

export type FindingCode =
  // reading
  | "file_missing"
  | "file_not_regular"
  | "file_too_large"
  | "file_unreadable"
  | "too_many_lines"
  | "invalid_utf8"
  | "invalid_json"
  | "duplicate_key"
  | "non_finite_number"
  | "too_deep"
  | "record_invalid"
  // manifest
  | "manifest_format_unsupported"
  | "manifest_file_changed"
  | "manifest_file_missing"
  | "manifest_file_unlisted"
  | "manifest_mismatch"
  // envelopes and ids
  | "envelope_invalid"
  | "source_mismatch"
  | "stop_id_mismatch"
  | "context_id_mismatch"
  | "context_pair_mismatch"
  | "context_field_mismatch"
  | "context_missing"
  | "stop_missing"
  // decision accounting
  | "decision_log_missing"
  | "decision_log_unexpected"
  | "decision_accounting_unknown"
  | "decision_accounting_inconsistent"
  | "decision_count_mismatch"
  | "decision_digest_mismatch"
  | "decision_record_invalid"
  | "decision_seq_gap"
  | "decision_session_mismatch"
  | "decision_partial_tail"
  | "decision_events_lost"
  // receipts
  | "receipts_missing"
  | "receipts_accounting_missing"
  | "receipts_count_mismatch"
  | "receipts_digest_mismatch"
  | "receipt_record_invalid"
  | "receipt_seq_gap"
  | "receipt_session_mismatch"
  | "receipts_partial_tail"
  | "receipts_lost"
  // chains (v2 logs: vigilseq/vigilprev)
  | "chain_broken"
  | "chain_head_mismatch"
  // signatures (with --public-key / --trusted-keys)
  | "signature_missing"
  | "signature_invalid"
  | "key_untrusted"
  | "subject_mismatch"
  | "subject_missing"
  | "file_unsigned"
  | "predicate_mismatch"
  | "checkpoint_invalid"
  | "checkpoint_mismatch"
  | "checkpoint_partial_tail"
  /** loss: no stop record, but the last signed checkpoint is valid (the session died after it). */
  | "stop_missing_checkpointed"
  /** loss: records after the last checkpoint or stop, covered by no signature. */
  | "not_covered"
  // serve session directories (the event ledger)
  /** loss: received events still pending delivery. */
  | "events_pending"
  | "events_unaccounted"
  | "ledger_record_invalid"
  | "ledger_session_mismatch"
  /** unknown: bytes after the ledger's last newline, and no key to say they follow the signed records. */
  | "ledger_partial_tail";

export interface Finding {
  code: FindingCode;
  file: string;
  message: string;
  /** unknown: the capture cannot be trusted as a record; loss: a recorded, known loss. */
  effect: "unknown" | "loss";
}

export function unknownFinding(code: FindingCode, file: string, message: string): Finding {
  return { code, file, message, effect: "unknown" };
}

export function lossFinding(code: FindingCode, file: string, message: string): Finding {
  return { code, file, message, effect: "loss" };
}

export function verdictOf(findings: readonly Finding[]): Verdict {
  if (findings.some((f) => f.effect === "unknown")) return "unknown";
  if (findings.some((f) => f.effect === "loss")) return "incomplete";
  return "closed";
}
