/**
 * Signed checkpoints (wrap.md §12): while a session runs, one line of `checkpoints.ndjson` after
 * every `every` records written across the session's logs and every `seconds` when something was
 * written since the last one. Each line is a DSSE envelope (dsse.ts, payload type
 * CHECKPOINT_PAYLOAD_TYPE) over
 *
 *   {"_type":"vigil.checkpoint.v1","event_source","session_id","checkpoint":N,"time",
 *    "logs":{"<log file name>":{"count","head"},…}}
 *
 * `checkpoint` counts from 0 per file. Before a checkpoint names a head, every log is synced, and
 * the checkpoint line itself is synced: a session that dies without a stop record is then provably
 * intact up to its last checkpoint. A checkpoint that cannot be written poisons the checkpoint file
 * (nothing more is written to it) and is reported once through `onFailure`.
 */
import { rfc3339 } from "./format.ts";
import type { ChainHead } from "./chain.ts";
import { CHECKPOINT_PAYLOAD_TYPE, type Signer, signEnvelope } from "./dsse.ts";
import { EvidenceLog } from "./evidence-log.ts";
import { CHECKPOINT_TYPE } from "./statement.ts";
import type { Scheduler, TimerHandle } from "../shared/time.ts";

export const CHECKPOINT_EVERY_DEFAULT = 1000;
export const CHECKPOINT_SECONDS_DEFAULT = 60;

/** A log a checkpoint covers: its head as written, and a sync to make that durable first. */
export interface CheckpointSource {
  readonly name: string;
  head(): ChainHead;
  /** False when the log cannot be made durable (it is poisoned): the checkpoint then names what it has. */
  sync(): boolean;
}

export interface CheckpointPayload {
  _type: typeof CHECKPOINT_TYPE;
  event_source: string;
  session_id: string;
  checkpoint: number;
  time: string;
  logs: Record<string, ChainHead>;
}

export interface CheckpointerOptions {
  /** The checkpoints file, opened by the caller (a new file for wrap, append for a serve session). */
  file: EvidenceLog;
  signer: Signer;
  eventSource: string;
  sessionId: string;
  /** Records across the logs between two checkpoints (≥ 1). */
  every: number;
  /** Seconds between two checkpoints while records are written (> 0). */
  seconds: number;
  scheduler: Scheduler;
  /** The number of the first checkpoint this writes (a resumed serve session continues its file). */
  firstNumber?: number;
  onFailure: (message: string) => void;
}

export class Checkpointer {
  private readonly sources: CheckpointSource[] = [];
  private sinceLast = 0;
  private next: number;
  private timer: TimerHandle | null = null;
  private closed = false;
  private reported = false;
  private lastPayload: CheckpointPayload | null = null;

  constructor(private readonly o: CheckpointerOptions) {
    this.next = o.firstNumber ?? 0;
  }

  add(source: CheckpointSource): void {
    this.sources.push(source);
  }

  /** Checkpoints written by this checkpointer so far, and the file's line count. */
  get written(): number {
    return this.o.file.written;
  }

  /** The last checkpoint written (what the stop statement can name), or null. */
  get last(): CheckpointPayload | null {
    return this.lastPayload;
  }

  /** One record was written to one of the logs. */
  noteWritten(n = 1): void {
    if (this.closed) return;
    this.sinceLast += n;
    if (this.sinceLast >= this.o.every) {
      this.checkpoint();
      return;
    }
    if (this.timer === null) {
      this.timer = this.o.scheduler.setTimeout(() => {
        this.timer = null;
        if (this.sinceLast > 0) this.checkpoint();
      }, this.o.seconds * 1000, { unref: true });
    }
  }

  /** Writes a checkpoint now when something was written since the last one; false when it could not. */
  checkpoint(): boolean {
    if (this.closed || this.sinceLast === 0) return true;
    if (this.timer !== null) this.o.scheduler.clearTimeout(this.timer);
    this.timer = null;
    const logs: Record<string, ChainHead> = {};
    for (const s of this.sources) {
      s.sync();
      logs[s.name] = s.head();
    }
    const payload: CheckpointPayload = {
      _type: CHECKPOINT_TYPE,
      event_source: this.o.eventSource,
      session_id: this.o.sessionId,
      checkpoint: this.next,
      time: rfc3339(),
      logs,
    };
    const envelope = signEnvelope(CHECKPOINT_PAYLOAD_TYPE, Buffer.from(JSON.stringify(payload)), this.o.signer);
    const ok = this.o.file.append(JSON.stringify(envelope)) && this.o.file.sync();
    if (!ok) {
      if (!this.reported) this.o.onFailure(`checkpoints writer stopped: ${this.o.file.failure ?? "write failed"}`);
      this.reported = true;
      return false;
    }
    this.next++;
    this.sinceLast = 0;
    this.lastPayload = payload;
    return true;
  }

  /** No more checkpoints; the file is synced and closed (a stop statement covers what follows). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) this.o.scheduler.clearTimeout(this.timer);
    this.timer = null;
    this.o.file.close();
  }
}
