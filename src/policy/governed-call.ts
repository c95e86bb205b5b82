/**
 * The rules of one governed tool call, written once for `vigil wrap` (a client's `tools/call`,
 * wrap.md §4–§5) and `vigil serve` (a model's tool call, serve.md §5). Pure: the policy's decision,
 * the evidence state and dry-run go in; what is recorded and what happens to the call come out.
 * The caller evaluates the policy before, writes the record and performs the call after.
 *
 * The rules, in order:
 * - Evidence down and fail closed (`--on-evidence-failure deny`, serve's `onEvidenceFailure`
 *   default): the call is denied with E_EVIDENCE_UNAVAILABLE whatever the policy said, and that
 *   denial is what is recorded (wrap.md §1). It overrides dry-run: a dry run never blocks on
 *   policy, but a failed evidence writer still closes the gate.
 * - Dry-run turns a deny into `would_deny`: recorded as such, and the call is forwarded.
 * - A call is forwarded only once its decision is on record: if the record cannot be written and
 *   the mode is fail closed, this very call is denied with E_EVIDENCE_UNAVAILABLE too; in
 *   `continue` mode it proceeds as decided (the loss is counted by the writer).
 * - Limits are consumed exactly by forwarded calls, would_deny included (session.ts): a denied
 *   call costs nothing.
 *
 * Because the record's write is I/O between deciding and acting, the answer carries both fates:
 * `ifRecorded` (also used when no decision log is kept) and `ifNotRecorded`.
 *
 * What differs between wrap and serve is an input, not a second code path: serve has no dry run
 * (`dryRun: false`), and each says what "evidence down" means for it (wrap: any requested writer
 * has failed; serve: the session's decision log has failed).
 */
import { type Decision, type ReasonCode, evidenceUnavailableDecision } from "./decision.ts";

/** What a failed evidence writer does to later calls: fail closed ("deny") or proceed ("continue"). */
export type EvidenceFailureMode = "deny" | "continue";

export interface EvidenceState {
  /** A requested evidence writer has already failed (the log is poisoned). */
  readonly down: boolean;
  readonly onFailure: EvidenceFailureMode;
}

export interface GovernedCallInput {
  /** The policy's decision for the call (or the no-policy allow, or an E_INVALID_CALL deny). */
  readonly decision: Decision;
  readonly evidence: EvidenceState;
  /** Evaluate and record, never block on policy (wrap --dry-run). */
  readonly dryRun: boolean;
}

/** The decision record's fields that the governed-call rules decide (wrap.md §5). */
export interface DecisionRecordFields {
  readonly decision: "allow" | "deny" | "would_deny";
  readonly reason_code: ReasonCode;
  readonly reason: string;
  readonly matched_rule: string | null;
}

/** What happens to the call. `decision` is what a deny reply renders, or what let the call through. */
export type CallFate =
  | { readonly action: "forward"; readonly consumesLimits: true; readonly decision: Decision }
  | { readonly action: "deny"; readonly consumesLimits: false; readonly decision: Decision };

export interface GovernedCall {
  /** Written to the decision log, when one is kept, before the call is forwarded or answered. */
  readonly record: DecisionRecordFields;
  /** The fate once the record is on record, or when no decision log is kept. */
  readonly ifRecorded: CallFate;
  /** The fate when the record could not be written. */
  readonly ifNotRecorded: CallFate;
}

export function governCall(input: GovernedCallInput): GovernedCall {
  const failClosed = input.evidence.onFailure === "deny";
  if (input.evidence.down && failClosed) {
    const refused = deny(evidenceUnavailableDecision());
    return { record: recordOf(refused.decision, false), ifRecorded: refused, ifNotRecorded: refused };
  }
  const { decision } = input;
  const wouldDeny = input.dryRun && decision.decision === "deny";
  const fate = decision.decision === "allow" || wouldDeny ? forward(decision) : deny(decision);
  return {
    record: recordOf(decision, wouldDeny),
    ifRecorded: fate,
    ifNotRecorded: failClosed ? deny(evidenceUnavailableDecision()) : fate,
  };
}

function recordOf(decision: Decision, wouldDeny: boolean): DecisionRecordFields {
  return {
    decision: wouldDeny ? "would_deny" : decision.decision,
    reason_code: decision.reason_code,
    reason: decision.reason,
    matched_rule: decision.matched_rule,
  };
}

function forward(decision: Decision): CallFate {
  return { action: "forward", consumesLimits: true, decision };
}

function deny(decision: Decision): CallFate {
  return { action: "deny", consumesLimits: false, decision };
}
