/**
 * Writes `vigil.mcp.decision.v1` records (wrap.md §5) with a contiguous `seq`, for every producer of
 * decisions: wrap's proxy and serve's governed tool calls write the same format.
 */
import { type DecisionData, decisionEvent } from "./records.ts";

/** Where records go: a chained log (chained-log.ts) in every producer. */
export interface RecordSink {
  append(event: Record<string, unknown>): boolean;
  /** Several events in one write; how many were written, in order (chained-log.ts). Absent: one append each. */
  appendBatch?(events: readonly Record<string, unknown>[]): number;
}

/** What the caller decides; the recorder adds session, seq, server, policy digest and dry_run. */
export type DecisionFields = Pick<
  DecisionData,
  "request_id" | "tool" | "decision" | "reason_code" | "reason" | "matched_rule" | "arguments_sha256"
>;

export class DecisionRecorder {
  private seq: number;

  constructor(
    readonly log: RecordSink,
    private readonly source: string,
    /** The digest, or where it is read at each record (serve: the policy in force, which a reload replaces). */
    private readonly policyDigest: string | null | (() => string | null),
    private readonly dryRun: boolean,
    /** The first record's `seq`: a serve session that reopens its log continues it. */
    firstSeq = 0,
  ) {
    this.seq = firstSeq;
  }

  /** Appends one record; false when it could not be written (the log is then poisoned). */
  record(sessionId: string, serverId: string, fields: DecisionFields): boolean {
    return this.log.append(this.event(sessionId, serverId, fields));
  }

  /**
   * Appends records in one write where the sink can (each takes the next `seq`, as `record` does);
   * returns how many were written, in order: the first `n` are on record, the rest are not.
   */
  recordBatch(sessionId: string, serverId: string, batch: readonly DecisionFields[]): number {
    if (batch.length === 1) return this.record(sessionId, serverId, batch[0]!) ? 1 : 0;
    const events = batch.map((fields) => this.event(sessionId, serverId, fields));
    if (this.log.appendBatch !== undefined) return this.log.appendBatch(events);
    // One append each; every event is offered (the sink counts what it drops), and only the
    // leading run that was written is on record.
    let written = 0;
    events.forEach((event, i) => {
      if (this.log.append(event) && written === i) written++;
    });
    return written;
  }

  private event(sessionId: string, serverId: string, fields: DecisionFields): Record<string, unknown> {
    // Member order is the format's (wrap.md §5), pinned by golden tests.
    const data: DecisionData = {
      session_id: sessionId,
      seq: this.seq++,
      server_id: serverId,
      request_id: fields.request_id,
      tool: fields.tool,
      decision: fields.decision,
      reason_code: fields.reason_code,
      reason: fields.reason,
      matched_rule: fields.matched_rule,
      policy_digest: typeof this.policyDigest === "function" ? this.policyDigest() : this.policyDigest,
      arguments_sha256: fields.arguments_sha256,
      dry_run: this.dryRun,
    };
    return decisionEvent(this.source, data);
  }
}
