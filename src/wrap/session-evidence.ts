/**
 * The evidence of one wrap session: decision log, receipts, session context and session stop
 * (wrap.md §5–§8), with the failure accounting that decides `--on-evidence-failure` and exit 3.
 *
 * Both logs are hash-chained (wrap.md §12) from the session's own anchors, so their chains start
 * when the session does (`start()`: the session id is the anchor's input). An append-mode decision
 * log (`--decision-log FILE` without -new) holds earlier sessions' records: this session's records
 * form a chain of their own inside it, from this session's anchor. With a signing key, a
 * checkpointer signs both logs' heads into checkpoints.ndjson as records are written.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { type ChainHead, chainAnchor } from "../evidence/chain.ts";
import { ChainedLog } from "../evidence/chained-log.ts";
import { Checkpointer } from "../evidence/checkpoints.ts";
import { type DecisionFields, DecisionRecorder } from "../evidence/decision-recorder.ts";
import type { Signer } from "../evidence/dsse.ts";
import { EvidenceLog } from "../evidence/evidence-log.ts";
import { CAPTURE_FILES, contextEventId } from "../evidence/format.ts";
import { writeRecordFile } from "../evidence/record-file.ts";
import { writeErrorText } from "../evidence/write-error.ts";
import {
  type ContextData,
  type Counts,
  type DecisionLogState,
  type ReceiptData,
  type SessionEnd,
  type StopDataV2,
  contextEvent,
  receiptEvent,
  stopEventV2,
} from "../evidence/records.ts";
import { VERSION } from "../shared/build-info.ts";
import { VigilError, errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import type { SweepResult } from "../shared/process-group.ts";
import { realScheduler } from "../shared/time.ts";
import type { OutputPlan } from "./output-plan.ts";

export interface SessionMeta {
  eventSource: string | null;
  serverId: string;
  serverPid: number;
  commandSha256: string;
  policyDigest: string | null;
  dryRun: boolean;
  decisionLogFsync: boolean;
  decisionLogFaultBytes: number | undefined;
  /** With a signing key (which needs a capture dir): signed checkpoints of the logs. */
  signing?: SessionSigning;
}

export interface SessionSigning {
  signer: Signer;
  /** Records across the logs between two checkpoints. */
  every: number;
  /** Seconds between two checkpoints while records are written. */
  seconds: number;
}

export interface HandshakeInfo {
  protocol_version: string | null;
  client_info: { name: string; version: string } | null;
  server_info: { name: string; version: string } | null;
}

export class SessionEvidence {
  sessionId: string | null = null;
  private startedAt = "";
  private decisionLog: EvidenceLog | null = null;
  private receipts: EvidenceLog | null = null;
  private decisions: DecisionRecorder | null = null;
  private decisionChain: ChainedLog | null = null;
  private receiptChain: ChainedLog | null = null;
  private checkpointFile: EvidenceLog | null = null;
  private checkpointer: Checkpointer | null = null;
  /** The stop record's data once finish() has built it (what the signed statement repeats). */
  stopData: StopDataV2 | null = null;
  private receiptSeq = 0;
  private contextId: string | null = null;
  private contextAttempted = false;
  /** The requested outputs that failed, by name (each reported on stderr once, when it failed; exit 3). */
  readonly failures: string[] = [];
  private handshake: HandshakeInfo = { protocol_version: null, client_info: null, server_info: null };

  constructor(
    private readonly plan: OutputPlan,
    private readonly meta: SessionMeta,
  ) {}

  /** Opens the NDJSON writers (exclusive create unless append mode). Throws a usage error. */
  openLogs(): void {
    const dl = this.plan.decisionLog;
    let opening = "";
    try {
      if (dl) {
        opening = dl.path;
        const options = {
          syncEachLine: this.meta.decisionLogFsync,
          ...(this.meta.decisionLogFaultBytes === undefined ? {} : { failAfterBytes: this.meta.decisionLogFaultBytes }),
        };
        this.decisionLog = dl.mode === "new" ? EvidenceLog.createNew(dl.path, options) : EvidenceLog.openAppend(dl.path, options);
      }
      if (this.plan.receipts) {
        opening = this.plan.receipts;
        this.receipts = EvidenceLog.createNew(this.plan.receipts);
      }
      if (this.meta.signing && this.plan.captureDir !== null) {
        opening = join(this.plan.captureDir, CAPTURE_FILES.checkpoints);
        this.checkpointFile = EvidenceLog.createNew(opening);
      }
    } catch (e) {
      this.decisionLog?.close();
      this.receipts?.close();
      throw new VigilError("output_path_invalid", `wrap: cannot create evidence file: ${writeErrorText(e, opening)}`);
    }
  }

  get keepsDecisions(): boolean {
    return this.decisionLog !== null;
  }

  get keepsReceipts(): boolean {
    return this.receipts !== null;
  }

  get started(): boolean {
    return this.sessionId !== null;
  }

  /** The session starts at the first client request that is not server/discover. */
  start(): void {
    if (this.sessionId !== null) return;
    this.sessionId = randomBytes(16).toString("hex");
    this.startedAt = new Date().toISOString();
    this.openChains(this.sessionId);
  }

  /** The chains (and the checkpointer over them) of the logs this session writes. */
  private openChains(sessionId: string): void {
    const source = this.meta.eventSource;
    if (source === null) return;
    const signing = this.meta.signing;
    const file = this.checkpointFile;
    const checkpointer =
      signing === undefined || file === null
        ? null
        : new Checkpointer({
            file,
            signer: signing.signer,
            eventSource: source,
            sessionId,
            every: signing.every,
            seconds: signing.seconds,
            scheduler: realScheduler,
            onFailure: (message) => this.reportFailure("checkpoints", message),
          });
    this.checkpointer = checkpointer;
    const onWritten = checkpointer === null ? undefined : () => checkpointer.noteWritten();
    // A log's chain is named by its role, the capture file name (decisions.ndjson, receipts.ndjson),
    // wherever the file is written: `--decision-log audit.log` placed in a capture dir under its
    // capture name still verifies (verify.md), and the two logs can never share an anchor.
    const chained = (log: EvidenceLog, name: string) => {
      const chain = new ChainedLog(log, name, { count: 0, head: chainAnchor(source, sessionId, name) }, onWritten);
      checkpointer?.add(chain);
      return chain;
    };
    if (this.decisionLog) {
      this.decisionChain = chained(this.decisionLog, CAPTURE_FILES.decisions);
      this.decisions = new DecisionRecorder(this.decisionChain, source, this.meta.policyDigest, this.meta.dryRun);
    }
    if (this.receipts) this.receiptChain = chained(this.receipts, CAPTURE_FILES.receipts);
  }

  /** True once any requested writer has failed: calls are then denied unless --on-evidence-failure continue. */
  get unavailable(): boolean {
    return this.failures.length > 0;
  }

  /** Writes one decision record; false when it could not be written. */
  recordDecision(fields: DecisionFields): boolean {
    if (!this.decisionLog || !this.decisions || this.sessionId === null) return true;
    const ok = this.decisions.record(this.sessionId, this.meta.serverId, fields);
    if (!ok) this.noteFailure("decision log", this.decisionLog);
    return ok;
  }

  /**
   * Writes decision records in one write (the tools/calls of one client read); returns how many
   * were written, in order: the calls of the first `n` are on record, the others are not.
   */
  recordDecisions(batch: readonly DecisionFields[]): number {
    if (!this.decisionLog || !this.decisions || this.sessionId === null) return batch.length;
    const written = this.decisions.recordBatch(this.sessionId, this.meta.serverId, batch);
    if (written < batch.length) this.noteFailure("decision log", this.decisionLog);
    return written;
  }

  recordReceipt(fields: Omit<ReceiptData, "session_id" | "seq">): void {
    if (!this.receipts || !this.receiptChain || this.meta.eventSource === null || this.sessionId === null) return;
    const data: ReceiptData = { session_id: this.sessionId, seq: this.receiptSeq++, ...fields };
    if (!this.receiptChain.append(receiptEvent(this.meta.eventSource, data))) {
      this.noteFailure("receipts", this.receipts);
    }
  }

  /** Remembers what the initialize exchange said, for the context record. */
  noteHandshake(info: Partial<HandshakeInfo>): void {
    this.handshake = { ...this.handshake, ...info };
  }

  /** Writes the context record once (after the first relayed response, or at the latest before the stop). */
  writeContext(): void {
    if (this.contextAttempted || !this.plan.context || this.sessionId === null || this.meta.eventSource === null) return;
    const data: ContextData = {
      session_id: this.sessionId,
      server_id: this.meta.serverId,
      server_pid: this.meta.serverPid,
      event_source: this.meta.eventSource,
      started_at: this.startedAt,
      vigil_version: VERSION,
      command_sha256: this.meta.commandSha256,
      policy_digest: this.meta.policyDigest,
      dry_run: this.meta.dryRun,
      ...this.handshake,
      outputs: {
        decision_log: this.plan.decisionLog?.mode ?? "absent",
        receipts: this.plan.receipts !== null,
        session_stop: this.plan.stop !== null,
      },
    };
    // Once attempted, never retried: the failure stands (the gate is closed, exit 3) and the stop
    // record says there is no context record (session_context_id null). A failed attempt removed
    // the file it created (record-file.ts), so nothing of ours is left at the path.
    this.contextAttempted = true;
    try {
      writeRecordFile(this.plan.context, contextEvent(this.meta.eventSource, data));
      this.contextId = contextEventId(this.sessionId);
    } catch (e) {
      this.reportFailure("session context", `cannot write the session context record: ${errorMessage(e)}`);
    }
  }

  /**
   * Closes the logs, then the checkpoints, and writes the stop record (wrap.md §8, §12). A run
   * whose session never started (only server/discover, or nothing) writes no stop record.
   */
  finish(end: SessionEnd, sweep: SweepResult, counts: Counts, proxyError: boolean): void {
    this.decisionLog?.close();
    this.receipts?.close();
    for (const [name, log] of [["decision log", this.decisionLog], ["receipts", this.receipts]] as const) {
      if (log?.poisoned) this.noteFailure(name, log);
    }
    // No final checkpoint: the stop record (and the signed statement) cover what follows the last one.
    this.checkpointer?.close();
    this.checkpointFile?.close();
    if (this.checkpointFile?.poisoned) this.reportFailure("checkpoints", `checkpoints writer stopped: ${this.checkpointFile.failure}`);
    if (this.sessionId === null) return;
    this.writeContext();
    if (!this.plan.stop || this.meta.eventSource === null) return;
    const dl = this.decisionLog;
    const data: StopDataV2 = {
      session_id: this.sessionId,
      server_id: this.meta.serverId,
      server_pid: this.meta.serverPid,
      session_context_id: this.contextId,
      session_end: end,
      status: sweep.status,
      kill_requested: sweep.kill_requested,
      decision_log: decisionLogState(this.plan, dl, proxyError),
      decision_events_written: dl ? dl.written : null,
      decision_events_dropped: dl ? dl.dropped : null,
      decision_prefix_sha256: dl ? dl.prefixSha256() : null,
      receipts: this.receipts
        ? { written: this.receipts.written, dropped: this.receipts.dropped, prefix_sha256: this.receipts.prefixSha256() }
        : null,
      counts,
      chains: this.chainHeads(),
      checkpoints: this.checkpointer === null ? null : { written: this.checkpointer.written },
    };
    this.stopData = data;
    try {
      writeRecordFile(this.plan.stop, stopEventV2(this.meta.eventSource, data));
    } catch (e) {
      this.reportFailure("session stop", `cannot write the session stop record: ${errorMessage(e)}`);
    }
  }

  /** One stderr line per failed output, when it fails; the summary at exit names the outputs only. */
  reportFailure(name: string, line: string): void {
    if (this.failures.includes(name)) return;
    this.failures.push(name);
    logLine(`evidence: ${line}`);
  }

  private chainHeads(): Record<string, ChainHead> {
    const heads: Record<string, ChainHead> = {};
    for (const chain of [this.decisionChain, this.receiptChain]) if (chain !== null) heads[chain.name] = chain.head();
    return heads;
  }

  private noteFailure(name: string, log: EvidenceLog): void {
    this.reportFailure(name, `${name} writer stopped: ${log.failure}; ${log.written} written, later records are dropped and counted`);
  }
}

function decisionLogState(plan: OutputPlan, log: EvidenceLog | null, proxyError: boolean): DecisionLogState {
  if (!plan.decisionLog) return "absent";
  if (!log) return "unknown";
  return log.poisoned || proxyError ? "incomplete" : "complete";
}
