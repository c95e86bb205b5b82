/**
 * A serve session's evidence built in process with the producers' own builders (chain.ts, records.ts,
 * ledger-records.ts, dsse.ts, serve-stop.ts, the checkpoint payload of checkpoints.ts), as a
 * SessionInput for the pure verifier. Tests then edit the bytes to tamper with them.
 */
import { Chain, chainAnchor } from "../../../src/evidence/chain.ts";
import { CHECKPOINT_PAYLOAD_TYPE, IN_TOTO_PAYLOAD_TYPE, signEnvelope } from "../../../src/evidence/dsse.ts";
import { SESSION_FILES } from "../../../src/evidence/format.ts";
import { type LedgerAction, deliveredRecord, droppedRecord, gapRecord, receivedRecord } from "../../../src/evidence/ledger-records.ts";
import { decisionEvent } from "../../../src/evidence/records.ts";
import { type ServeStopReason, serveStopStatement } from "../../../src/evidence/serve-stop.ts";
import { CHECKPOINT_TYPE, type Statement } from "../../../src/evidence/statement.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";
import type { FileState } from "../../../src/verify/capture-input.ts";
import type { SessionInput } from "../../../src/verify/session/session-input.ts";
import { type TestKey, testKey } from "./capture-v2-builder.ts";
import { MISSING, readState } from "./golden-input.ts";

export const D = SESSION_FILES.decisions;
export const E = SESSION_FILES.events;
export const C = SESSION_FILES.checkpoints;
export { type TestKey, testKey };

const SUB = "a".repeat(64);
const PAYLOAD = "b".repeat(64);

export class SessionBuilder {
  /** Lines of each file, each without its newline. */
  readonly lines: Record<string, string[]> = { [D]: [], [E]: [], [C]: [] };
  /** Whether each log file exists (a log with no line yet may still exist). */
  readonly exists: Record<string, boolean> = { [D]: false, [E]: false, [C]: false };
  readonly stops: Uint8Array[] = [];
  private readonly chains: Record<string, Chain>;
  private pending = new Map<number, string | null>();

  constructor(
    readonly name = "s1",
    readonly source = "vigil://test",
  ) {
    this.chains = { [D]: Chain.start(chainAnchor(source, name, D)), [E]: Chain.start(chainAnchor(source, name, E)) };
  }

  private append(log: string, event: Record<string, unknown>): this {
    const chain = this.chains[log]!;
    const line = chain.line(event);
    chain.advance(line);
    this.lines[log]!.push(line);
    this.exists[log] = true;
    return this;
  }

  decision(tool = "echo"): this {
    const seq = this.lines[D]!.length;
    return this.append(D, decisionEvent(this.source, {
      session_id: this.name, seq, server_id: "srv", request_id: seq + 1, tool, decision: "allow", reason_code: "allowed",
      reason: "allowed by policy", matched_rule: null, policy_digest: null, arguments_sha256: "c".repeat(64), dry_run: false,
    }));
  }

  received(seq: number | null, eventId: string | null = seq === null ? "n" : `evt-${seq}`, action: LedgerAction = seq === null ? "notify" : "follow_up"): this {
    if (seq !== null) this.pending.set(seq, eventId);
    return this.append(E, receivedRecord(this.source, this.lines[E]!.length, {
      session_id: this.name, seq, server: "fx", event_name: "tick", subscription_key_sha256: SUB, delivery_mode: "poll", action, event_id: eventId, payload_sha256: PAYLOAD,
    }));
  }

  gap(seq: number | null): this {
    if (seq !== null) this.pending.set(seq, null);
    return this.append(E, gapRecord(this.source, this.lines[E]!.length, {
      session_id: this.name, seq, server: "fx", event_name: "tick", subscription_key_sha256: SUB, reason: "truncated", cursor: null,
    }));
  }

  delivered(seqs: number[], eventIds: (string | null)[] = seqs.map((s) => this.idOf(s))): this {
    for (const s of seqs) this.pending.delete(s);
    return this.append(E, deliveredRecord(this.source, this.lines[E]!.length, { session_id: this.name, batch_tag: "b1", run_id: "run-1", seqs, event_ids: eventIds }));
  }

  dropped(seq: number, eventId: string | null = this.idOf(seq)): this {
    this.pending.delete(seq);
    return this.append(E, droppedRecord(this.source, this.lines[E]!.length, { session_id: this.name, seq, event_id: eventId, attempts: 3, error_code: "model_error" }));
  }

  private idOf(seq: number): string | null {
    return this.pending.has(seq) ? this.pending.get(seq)! : `evt-${seq}`;
  }

  /** A signed checkpoint over both logs as they stand (the payload of checkpoints.ts). */
  checkpoint(key: TestKey): this {
    const payload = {
      _type: CHECKPOINT_TYPE,
      event_source: this.source,
      session_id: this.name,
      checkpoint: this.lines[C]!.length,
      time: "2026-01-01T00:00:00.000Z",
      logs: { [D]: this.chains[D]!.state, [E]: this.chains[E]!.state },
    };
    this.lines[C]!.push(JSON.stringify(signEnvelope(CHECKPOINT_PAYLOAD_TYPE, Buffer.from(JSON.stringify(payload)), key.signer)));
    this.exists[C] = true;
    return this;
  }

  /** A signed stop statement over the files as they stand (serve-stop.ts), as stops/<n>.dsse.json. */
  stop(key: TestKey, edit: (statement: Statement) => void = () => {}, reason: ServeStopReason = "closed"): this {
    const subjects = [D, E, C].filter((f) => this.exists[f]).map((name) => ({ name, digest: { sha256: sha256Hex(this.bytes(name)) } }));
    const logs: Record<string, { count: number; head: string }> = {};
    for (const log of [D, E]) if (this.exists[log]) logs[log] = this.chains[log]!.state;
    const statement = serveStopStatement({
      sessionId: this.name, eventSource: this.source, policyDigest: null, version: "0.0.0-test", stop: this.stops.length + 1, reason, logs,
      checkpointsWritten: this.lines[C]!.length, pending: [...this.pending.keys()], subjects,
    });
    edit(statement);
    this.stops.push(Buffer.from(`${JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement)), key.signer))}\n`));
    return this;
  }

  bytes(file: string): Buffer {
    return Buffer.from(this.lines[file]!.map((l) => `${l}\n`).join(""));
  }

  input(): SessionInput {
    const state = (file: string): FileState => (this.exists[file] ? readState(this.bytes(file)) : MISSING);
    return {
      name: this.name,
      decisions: state(D),
      events: state(E),
      checkpoints: state(C),
      stops: { kind: "read", entries: this.stops.map((bytes, i) => ({ n: i + 1, file: `stops/${i + 1}.dsse.json`, state: readState(bytes) })) },
    };
  }
}

/** The input with one file's bytes replaced. */
export function withBytes(input: SessionInput, file: typeof D | typeof E | typeof C, bytes: Uint8Array): SessionInput {
  const key = file === D ? "decisions" : file === E ? "events" : "checkpoints";
  return { ...input, [key]: readState(bytes) };
}

/** The lines of a file of the input (each without its newline), and their bytes back. */
export function linesOf(input: SessionInput, file: typeof D | typeof E | typeof C): string[] {
  const state = file === D ? input.decisions : file === E ? input.events : input.checkpoints;
  if (state.kind !== "read") return [];
  return Buffer.from(state.bytes).toString("utf8").split("\n").slice(0, -1);
}

export const joinLines = (lines: string[]): Buffer => Buffer.from(lines.map((l) => `${l}\n`).join(""));
