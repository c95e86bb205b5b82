/**
 * The signed evidence of one serve session (serve.md "Evidence"), in `sessions/<name>/`:
 *
 * - `decisions.ndjson`, hash-chained and continued across restarts: its torn tail is cut, its last
 *   record gives the chain's count and head (evidence/log-tail.ts), so `seq`, `vigilseq` and the
 *   record ids go on from where the last run stopped. A log an older vigil wrote (no chain) is set
 *   aside and a new chain starts. Anchor: (event_source, session name, "decisions.ndjson").
 * - With `evidence.signing_key`: one Checkpointer over the session's logs (the decision log, and the
 *   event ledger once the events store hands it over: `attachLedger`), appending to
 *   `checkpoints.ndjson`, numbered on from its last line; and at every stop (shutdown, reap, a close
 *   on its own) `stops/<n>.dsse.json`, written after the session and its events store are closed, so
 *   its subjects hash the files as they stand (evidence/serve-stop.ts says what it holds).
 *
 * A failure to write a checkpoint or a stop statement is one stderr line; the session goes on, and
 * its close goes on. The key is never logged: only its id appears in statements.
 */
import { closeSync, constants, lstatSync, openSync, readSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { chainAnchor } from "../evidence/chain.ts";
import { ChainedLog } from "../evidence/chained-log.ts";
import { CHECKPOINT_EVERY_DEFAULT, CHECKPOINT_SECONDS_DEFAULT, Checkpointer, type CheckpointSource } from "../evidence/checkpoints.ts";
import { IN_TOTO_PAYLOAD_TYPE, type Signer, signEnvelope } from "../evidence/dsse.ts";
import { EvidenceLog } from "../evidence/evidence-log.ts";
import { SESSION_FILES } from "../evidence/format.ts";
import { resumeChain, resumeCheckpoints } from "../evidence/log-tail.ts";
import { RecordWriteError, writeRecordFile } from "../evidence/record-file.ts";
import { type ServeStopReason, nextStopNumber, serveStopStatement, stopFileName } from "../evidence/serve-stop.ts";
import type { Subject } from "../evidence/statement.ts";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";
import { type Scheduler, realScheduler } from "../shared/time.ts";
import type { ServeConfig } from "./config/schema.ts";
import { ensureStopsDir } from "./state/paths.ts";

export type { ServeStopReason } from "../evidence/serve-stop.ts";

/** What every session's evidence is built on: loaded once per process, before any server starts. */
export interface EvidenceSetup {
  /** The signing key (`evidence.signing_key`); null: no checkpoints and no stop statements. */
  signer: Signer | null;
  policyDigest: string | null;
  version: string;
  scheduler?: Scheduler;
  /** Where the one-line failures go (default: stderr). */
  log?: (message: string) => void;
}

/** What the event ledger (events.ndjson, kept by the events store) hands the session's evidence. */
export interface LedgerEvidence {
  /** The ledger as a checkpoint covers it (name "events.ndjson"); its head stays readable after the store closed. */
  readonly source: CheckpointSource;
  /** The pending-queue seqs of the entries still pending, when the stop statement is written. */
  pending(): readonly number[];
}

type Config = NonNullable<ServeConfig["evidence"]>;

export class SessionEvidence {
  private ledger: LedgerEvidence | null = null;
  private ended = false;

  private constructor(
    readonly sessionId: string,
    readonly dir: string,
    private readonly config: Config,
    private readonly setup: EvidenceSetup,
    /** The decision log (null with `decision_log: false`). */
    readonly decisions: ChainedLog | null,
    private readonly checkpointer: Checkpointer | null,
  ) {}

  /**
   * Opens the session's evidence: resumes the decision log's chain and the checkpoints' numbering.
   * A log that cannot be continued is refused (LogTailError, exit 2); one that cannot be opened for
   * appending is an evidence failure (exit 3). Nothing stays open on a throw.
   */
  static open(config: Config, setup: EvidenceSetup, sessionId: string, dir: string): SessionEvidence {
    const log = setup.log ?? logLine;
    let decisions: ChainedLog | null = null;
    let checkpointer: Checkpointer | null = null;
    try {
      if (setup.signer !== null) {
        const path = join(dir, SESSION_FILES.checkpoints);
        const resumed = resumeCheckpoints(path, { log });
        checkpointer = new Checkpointer({
          file: openLog(path, "checkpoints file"),
          signer: setup.signer,
          eventSource: config.event_source,
          sessionId,
          every: config.checkpoint_every ?? CHECKPOINT_EVERY_DEFAULT,
          seconds: config.checkpoint_seconds ?? CHECKPOINT_SECONDS_DEFAULT,
          scheduler: setup.scheduler ?? realScheduler,
          firstNumber: resumed.firstNumber,
          onFailure: (message) => log(`serve: session ${JSON.stringify(sessionId)}: ${message}`),
        });
      }
      if (config.decision_log) {
        const path = join(dir, SESSION_FILES.decisions);
        const resumed = resumeChain(path, chainAnchor(config.event_source, sessionId, SESSION_FILES.decisions), { log });
        const cp = checkpointer;
        decisions = new ChainedLog(openLog(path, "decision log"), SESSION_FILES.decisions, resumed.start, cp === null ? undefined : () => cp.noteWritten());
        cp?.add(decisions);
      }
    } catch (e) {
      checkpointer?.close();
      decisions?.log.close();
      throw e;
    }
    return new SessionEvidence(sessionId, dir, config, setup, decisions, checkpointer);
  }

  /** The anchor of one of this session's logs (the ledger's: `anchor("events.ndjson")`). */
  anchor(logName: string): string {
    return chainAnchor(this.config.event_source, this.sessionId, logName);
  }

  get eventSource(): string {
    return this.config.event_source;
  }

  /** Whether checkpoints and stop statements are written (a signing key was given). */
  get signed(): boolean {
    return this.checkpointer !== null;
  }

  /** One record was written to a log of this session other than the decision log (the ledger's hook). */
  noteWritten(n = 1): void {
    this.checkpointer?.noteWritten(n);
  }

  /** The event ledger joins the checkpoints and the stop statements. */
  attachLedger(ledger: LedgerEvidence): void {
    this.ledger = ledger;
    this.checkpointer?.add(ledger.source);
  }

  /**
   * The session stopped (its session and events store are closed): the logs are synced and closed,
   * and with a key `stops/<n>.dsse.json` is written. Never throws; a failure is one stderr line.
   */
  stop(reason: ServeStopReason): void {
    if (this.ended) return;
    this.end();
    if (this.setup.signer === null) return;
    try {
      const path = this.writeStop(this.setup.signer, reason);
      (this.setup.log ?? logLine)(`serve: session ${JSON.stringify(this.sessionId)}: signed stop statement ${path}`);
    } catch (e) {
      (this.setup.log ?? logLine)(`serve: session ${JSON.stringify(this.sessionId)}: its stop statement was not written: ${errorMessage(e)}`);
    }
  }

  /** Closes the logs without a stop statement (a session that never served). */
  close(): void {
    if (!this.ended) this.end();
  }

  private end(): void {
    this.ended = true;
    this.decisions?.log.close();
    this.ledger?.source.sync();
    this.checkpointer?.close();
  }

  private writeStop(signer: Signer, reason: ServeStopReason): string {
    const subjects: Subject[] = [];
    let checkpointLines = 0;
    for (const name of [SESSION_FILES.decisions, SESSION_FILES.events, SESSION_FILES.checkpoints]) {
      const file = hashFile(join(this.dir, name));
      if (file === null) continue;
      subjects.push({ name, digest: { sha256: file.sha256 } });
      if (name === SESSION_FILES.checkpoints) checkpointLines = file.lines;
    }
    const logs: Record<string, { count: number; head: string }> = {};
    if (this.decisions !== null) logs[this.decisions.name] = this.decisions.head();
    if (this.ledger !== null) logs[this.ledger.source.name] = this.ledger.source.head();
    const stopsDir = ensureStopsDir(this.dir);
    // The next free number; a file that appeared meanwhile (another writer) moves us on, never over it.
    let n = nextStopNumber(readdirSync(stopsDir));
    for (let attempt = 0; ; attempt++) {
      const envelope = signEnvelope(
        IN_TOTO_PAYLOAD_TYPE,
        Buffer.from(JSON.stringify(serveStopStatement({
          sessionId: this.sessionId,
          eventSource: this.config.event_source,
          policyDigest: this.setup.policyDigest,
          version: this.setup.version,
          stop: n,
          reason,
          logs,
          checkpointsWritten: checkpointLines,
          pending: this.ledger?.pending() ?? [],
          subjects,
        }))),
        signer,
      );
      const path = join(stopsDir, stopFileName(n));
      try {
        writeRecordFile(path, envelope);
        return path;
      } catch (e) {
        if (!(e instanceof RecordWriteError) || errnoCode(e.cause) !== "EEXIST" || attempt >= 3) throw e;
        n++;
      }
    }
  }
}

/** Opens a session log for appending, or throws an evidence failure (exit 3). */
function openLog(path: string, what: string): EvidenceLog {
  try {
    return EvidenceLog.openAppend(path);
  } catch (e) {
    throw new VigilError("evidence_write_failed", `cannot open ${what} ${path}: ${errorMessage(e)}`, { cause: e });
  }
}

/** SHA-256 and newline count of a regular file streamed in 1 MiB pieces; null when it does not exist. */
function hashFile(path: string): { sha256: string; lines: number } | null {
  try {
    if (!lstatSync(path).isFile()) throw new Error(`${path} is not a regular file`);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return null;
    throw e;
  }
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  const hasher = new Bun.CryptoHasher("sha256");
  const buf = Buffer.allocUnsafe(1 << 20);
  let lines = 0;
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const piece = buf.subarray(0, n);
      hasher.update(piece);
      for (let i = piece.indexOf(0x0a); i >= 0; i = piece.indexOf(0x0a, i + 1)) lines++;
    }
  } finally {
    closeSync(fd);
  }
  return { sha256: hasher.digest("hex"), lines };
}
