/**
 * A v2 wrap capture (vigil.capture.v2) built in process with the producer's own builders (chain.ts,
 * records.ts stopEventV2, the checkpoint payload of checkpoints.ts, session-statement.ts, dsse.ts),
 * signed or not, as a CaptureInput for the pure verifier. Tests edit its lines and then `close` it
 * again: stop accounting, manifest and (with a signer) envelope follow the edit, so that the
 * branch under test — a chain, a checkpoint, a subject — is what reacts.
 */
import { generateKeyPairSync } from "node:crypto";
import { Chain, type ChainHead, chainAnchor } from "../../../src/evidence/chain.ts";
import { CHECKPOINT_PAYLOAD_TYPE, IN_TOTO_PAYLOAD_TYPE, type Signer, type TrustedKey, ed25519Signer, signEnvelope } from "../../../src/evidence/dsse.ts";
import { CAPTURE_FILES, CAPTURE_FORMAT_V2, contextEventId } from "../../../src/evidence/format.ts";
import { keyIdOf } from "../../../src/evidence/keys.ts";
import { type StopDataV2, contextEvent, decisionEvent, receiptEvent, stopEventV2 } from "../../../src/evidence/records.ts";
import { wrapSessionStatement } from "../../../src/evidence/session-statement.ts";
import { CHECKPOINT_TYPE } from "../../../src/evidence/statement.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";
import type { CaptureFileName, CaptureInput, FileState } from "../../../src/verify/capture-input.ts";
import { MISSING, readState } from "./golden-input.ts";

export const F = CAPTURE_FILES;
export const D = F.decisions;
export const R = F.receipts;
export const CP = F.checkpoints;
export const ENV = F.envelope;
export { MISSING, readState };

export interface TestKey {
  signer: Signer;
  trusted: TrustedKey;
}

export function testKey(file = "test.pub"): TestKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const keyid = keyIdOf(publicKey);
  return { signer: ed25519Signer(keyid, privateKey), trusted: { keyid, key: publicKey, file } };
}

const VERSION = "0.2.0";
const BINARY = "e".repeat(64);
const POLICY = `sha256:${"c".repeat(64)}`;
/** The server-stderr.log of every built capture (held as hashed, like the loader does). */
export const STDERR = Buffer.from("server says hello\n");

export interface V2Options {
  sessionId?: string;
  source?: string;
  decisions?: number;
  receipts?: number;
  /** Sign with this key (checkpoints + envelope); unsigned without. */
  signer?: Signer;
  /** A checkpoint after every this many records across both logs. */
  checkpointEvery?: number;
  /** A last checkpoint over the records since the previous one, as a closing session writes (default true). */
  finalCheckpoint?: boolean;
}

/** The lines (without newlines) of each file as the session wrote them, and what closes the capture. */
export class V2Capture {
  readonly sessionId: string;
  readonly source: string;
  readonly signer: Signer | undefined;
  readonly lines: Record<string, string[]> = { [D]: [], [R]: [], [CP]: [] };
  /** The heads each checkpoint named (for tests that truncate after one). */
  readonly checkpointHeads: Record<string, ChainHead>[] = [];
  private readonly chains: Record<string, Chain>;

  constructor(o: V2Options = {}) {
    this.sessionId = o.sessionId ?? "a1".repeat(16);
    this.source = o.source ?? "vigil://test/capture";
    this.signer = o.signer;
    this.chains = {
      [D]: Chain.start(chainAnchor(this.source, this.sessionId, D)),
      [R]: Chain.start(chainAnchor(this.source, this.sessionId, R)),
    };
    const every = o.checkpointEvery ?? 1000;
    let since = 0;
    const decisions = o.decisions ?? 4;
    const receipts = o.receipts ?? 5;
    for (let i = 0; i < Math.max(decisions, receipts); i++) {
      for (const [log, n] of [[D, decisions], [R, receipts]] as const) {
        if (i >= n) continue;
        this.append(log, log === D ? this.decision(i) : this.receipt(i));
        if (this.signer && ++since >= every) {
          this.checkpoint();
          since = 0;
        }
      }
    }
    if (this.signer && since > 0 && o.finalCheckpoint !== false) this.checkpoint();
  }

  decision(seq: number): Record<string, unknown> {
    return decisionEvent(this.source, {
      session_id: this.sessionId,
      seq,
      server_id: "srv",
      request_id: seq + 2,
      tool: "read_file",
      decision: "allow",
      reason_code: "P_ALLOW",
      reason: "allowed by policy",
      matched_rule: null,
      policy_digest: POLICY,
      arguments_sha256: "d".repeat(64),
      dry_run: false,
    });
  }

  receipt(seq: number): Record<string, unknown> {
    return receiptEvent(this.source, {
      session_id: this.sessionId,
      seq,
      request_id: seq + 1,
      method: "tools/call",
      outcome: "response",
      request_sha256: "1".repeat(64),
      response_sha256: "2".repeat(64),
      request_bytes: 10,
      response_bytes: 20,
      started_at: "2026-01-01T00:00:00.000Z",
      duration_us: 5,
    });
  }

  append(log: string, event: Record<string, unknown>): void {
    const chain = this.chains[log]!;
    const line = chain.line(event);
    chain.advance(line);
    this.lines[log]!.push(line);
  }

  checkpoint(): void {
    const logs = { [D]: this.chains[D]!.state, [R]: this.chains[R]!.state };
    const payload = { _type: CHECKPOINT_TYPE, event_source: this.source, session_id: this.sessionId, checkpoint: this.lines[CP]!.length, time: "2026-01-01T00:00:01.000Z", logs };
    this.checkpointHeads.push(logs);
    this.lines[CP]!.push(JSON.stringify(signEnvelope(CHECKPOINT_PAYLOAD_TYPE, Buffer.from(JSON.stringify(payload)), this.signer!)));
  }

  /** The logs as they are now (lines possibly edited), with a trailing tail. */
  bytesOf(log: string, tail = ""): Buffer {
    return Buffer.from(this.lines[log]!.map((l) => `${l}\n`).join("") + tail);
  }

  /**
   * Every file of the closed capture: context, logs, stop (accounting and chains of the logs as
   * they are now, heads recomputed from their lines), checkpoints, manifest and — with a signer —
   * the envelope over all of them.
   */
  close(o: { signer?: Signer | null; stopEdit?: (d: StopDataV2) => void } = {}): CaptureInput {
    const files = {} as Record<CaptureFileName, FileState>;
    for (const name of Object.values(F)) files[name] = MISSING;
    const context = contextEvent(this.source, {
      session_id: this.sessionId,
      server_id: "srv",
      server_pid: 4242,
      event_source: this.source,
      started_at: "2026-01-01T00:00:00.000Z",
      vigil_version: VERSION,
      command_sha256: "f".repeat(64),
      policy_digest: POLICY,
      dry_run: false,
      protocol_version: "2025-11-25",
      client_info: { name: "c", version: "1" },
      server_info: { name: "s", version: "1" },
      outputs: { decision_log: "new", receipts: true, session_stop: true },
    });
    files[F.context] = readState(`${JSON.stringify(context)}\n`);
    const d = this.bytesOf(D);
    const r = this.bytesOf(R);
    files[D] = readState(d);
    files[R] = readState(r);
    files[F.serverStderr] = { kind: "hashed", bytes: STDERR.length, sha256: sha256Hex(STDERR) };
    const signer = o.signer === undefined ? this.signer : o.signer;
    if (this.signer) files[CP] = readState(this.bytesOf(CP));
    const data: StopDataV2 = {
      session_id: this.sessionId,
      server_id: "srv",
      server_pid: 4242,
      session_context_id: contextEventId(this.sessionId),
      session_end: "client_closed",
      status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null },
      kill_requested: false,
      decision_log: "complete",
      decision_events_written: this.lines[D]!.length,
      decision_events_dropped: 0,
      decision_prefix_sha256: sha256Hex(d),
      receipts: { written: this.lines[R]!.length, dropped: 0, prefix_sha256: sha256Hex(r) },
      counts: { client_messages: 3, server_messages: 3, rejected_frames: 0, server_garbage_lines: 0, oversized: 0 },
      chains: { [D]: headOf(this.source, this.sessionId, D, this.lines[D]!), [R]: headOf(this.source, this.sessionId, R, this.lines[R]!) },
      checkpoints: this.signer ? { written: this.lines[CP]!.length } : null,
    };
    o.stopEdit?.(data);
    files[F.stop] = readState(`${JSON.stringify(stopEventV2(this.source, data))}\n`);
    const input: CaptureInput = { files, strayEntries: [] };
    writeManifest(input, this.source, this.sessionId);
    if (signer) sign(input, signer, this.source, data);
    return input;
  }
}

function headOf(source: string, sessionId: string, log: string, lines: readonly string[]): ChainHead {
  const c = Chain.start(chainAnchor(source, sessionId, log));
  for (const l of lines) c.advance(l);
  return c.state;
}

/** The manifest over the files as they are (never the envelope). */
export function writeManifest(input: CaptureInput, source: string, sessionId: string): void {
  const listed: Record<string, { bytes: number; sha256: string }> = {};
  for (const name of [F.context, F.stop, D, R, F.serverStderr, CP] as const) {
    const s = input.files[name];
    if (s.kind === "read") listed[name] = { bytes: s.bytes.length, sha256: s.sha256 };
    else if (s.kind === "hashed") listed[name] = { bytes: s.bytes, sha256: s.sha256 };
  }
  const manifest = {
    format: CAPTURE_FORMAT_V2,
    created_at: "2026-01-01T00:00:02.000Z",
    event_source: source,
    server_id: "srv",
    session_id: sessionId,
    vigil: { version: VERSION, binary_sha256: BINARY },
    command_sha256: "f".repeat(64),
    policy: { digest: POLICY, sha256_of_file: "9".repeat(64) },
    files: listed,
  };
  input.files[F.manifest] = readState(`${JSON.stringify(manifest)}\n`);
}

/** capture.dsse.json over every other file present, as wrap writes it. */
export function sign(input: CaptureInput, signer: Signer, source: string, stop: StopDataV2): void {
  const digests: Record<string, string> = {};
  for (const name of Object.values(F)) {
    if (name === ENV) continue;
    const s = input.files[name];
    if (s.kind !== "problem") digests[name] = s.sha256;
  }
  const statement = wrapSessionStatement(digests, { eventSource: source, policyDigest: POLICY, version: VERSION, binarySha256: BINARY, stop });
  input.files[ENV] = readState(JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement)), signer)));
}
