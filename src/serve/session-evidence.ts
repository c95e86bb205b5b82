/**
 * The signed evidence of one serve session (serve.md "Evidence"), in `sessions/<name>/`:
 *
 * - `decisions.ndjson`, hash-chained and continued across restarts: its torn tail is cut, its last
 *   record gives the chain's count and head (evidence/log-tail.ts), so `seq`, `vigilseq` and the
 *   record ids go on from where the last run stopped. A log an older vigil wrote (no chain) is set
 *   aside and a new chain starts. Anchor: (event_source, session name, "decisions.ndjson").
 * - With `decision_log: false` a decision log an earlier run wrote is still named (its head as it
 *   stands): a stop or checkpoint that left out a log an earlier one named would be refused.
 * - With `evidence.signing_key`: one Checkpointer over the session's logs (the decision log, and the
 *   event ledger once the events store hands it over: `attachLedger`), appending to
 *   `checkpoints.ndjson`, numbered on from its last line. The ledger's records written before it is
 *   attached (those its store's opening appends) count toward a checkpoint only once it is: no
 *   checkpoint leaves it out. At every stop (shutdown, reap, a close on its own)
 *   `stops/<n>.dsse.json`, written after the session and its events store are closed, so its
 *   subjects hash the files as they stand — each log's first `count` lines, the count its predicate
 *   names (evidence/serve-stop.ts says what it holds) — and published whole (publish-file.ts).
 *
 * A failure to write a checkpoint or a stop statement is one stderr line; the session goes on, and
 * its close goes on. The key is never logged: only its id appears in statements.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { chainAnchor } from "../evidence/chain.ts";
import { ChainedLog } from "../evidence/chained-log.ts";
import { CHECKPOINT_EVERY_DEFAULT, CHECKPOINT_SECONDS_DEFAULT, Checkpointer, type CheckpointSource } from "../evidence/checkpoints.ts";
import { IN_TOTO_PAYLOAD_TYPE, type Signer, signEnvelope } from "../evidence/dsse.ts";
import { EvidenceLog } from "../evidence/evidence-log.ts";
import { SESSION_FILES } from "../evidence/format.ts";
import { resumeChain, resumeCheckpoints } from "../evidence/log-tail.ts";
import { publishRecordFile, sweepPublishTemps } from "../evidence/publish-file.ts";
import { RecordWriteError } from "../evidence/record-file.ts";
import { type ServeStopReason, nextStopNumber, serveStopStatement, stopFileName, stopNumberOf } from "../evidence/serve-stop.ts";
import type { Subject } from "../evidence/statement.ts";
import { sha256OfLines } from "../shared/digest.ts";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { entryExists } from "../shared/durable/bounded-file.ts";
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
  /** Ledger records written before `attachLedger` (its store's opening): noted to the checkpointer once attached. */
  private unattachedRecords = 0;
  private ended = false;

  private constructor(
    readonly sessionId: string,
    readonly dir: string,
    private readonly config: Config,
    private readonly setup: EvidenceSetup,
    /** The decision log (null with `decision_log: false`). */
    readonly decisions: ChainedLog | null,
    private readonly checkpointer: Checkpointer | null,
    /** The decision log as it stands when this run writes none (`decision_log: false`, an earlier run's log), else null. */
    private readonly oldDecisions: CheckpointSource | null,
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
    let oldDecisions: CheckpointSource | null = null;
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
      const path = join(dir, SESSION_FILES.decisions);
      if (config.decision_log) {
        const resumed = resumeChain(path, chainAnchor(config.event_source, sessionId, SESSION_FILES.decisions), { log });
        const cp = checkpointer;
        decisions = new ChainedLog(openLog(path, "decision log"), SESSION_FILES.decisions, resumed.start, cp === null ? undefined : () => cp.noteWritten());
        cp?.add(decisions);
      } else if (entryExists(path)) {
        const start = resumeChain(path, chainAnchor(config.event_source, sessionId, SESSION_FILES.decisions), { log }).start;
        // An older vigil's log was set aside: no file is left, and nothing to name.
        if (entryExists(path)) {
          oldDecisions = { name: SESSION_FILES.decisions, head: () => ({ ...start }), sync: () => true };
          checkpointer?.add(oldDecisions);
        }
      }
    } catch (e) {
      checkpointer?.close();
      decisions?.log.close();
      throw e;
    }
    return new SessionEvidence(sessionId, dir, config, setup, decisions, checkpointer, oldDecisions);
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

  /**
   * Records were written to the event ledger (its hook). Before the ledger is attached they wait: a
   * checkpoint they made due now would not name the ledger, and one leaving out a log an earlier
   * checkpoint named is refused by `vigil verify`.
   */
  noteWritten(n = 1): void {
    if (this.ledger === null) this.unattachedRecords += n;
    else this.checkpointer?.noteWritten(n);
  }

  /** The event ledger joins the checkpoints and the stop statements. */
  attachLedger(ledger: LedgerEvidence): void {
    this.ledger = ledger;
    this.checkpointer?.add(ledger.source);
    const waiting = this.unattachedRecords;
    this.unattachedRecords = 0;
    if (waiting > 0) this.checkpointer?.noteWritten(waiting);
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
    const logs: Record<string, { count: number; head: string }> = {};
    for (const source of [this.decisions ?? this.oldDecisions, this.ledger?.source ?? null]) if (source !== null) logs[source.name] = source.head();
    const subjects: Subject[] = [];
    let checkpointLines = 0;
    for (const name of [SESSION_FILES.decisions, SESSION_FILES.events, SESSION_FILES.checkpoints]) {
      // A log's first `count` lines, as its predicate names them (past them: a line a failed write
      // left, which nothing names); the checkpoints file's complete lines (a torn last one is not).
      const file = sha256OfLines(join(this.dir, name), logs[name]?.count);
      if (file === null) continue;
      subjects.push({ name, digest: { sha256: file.sha256 } });
      if (name === SESSION_FILES.checkpoints) checkpointLines = file.lines;
    }
    const stopsDir = ensureStopsDir(this.dir);
    const names = readdirSync(stopsDir);
    sweepPublishTemps(stopsDir, names, stopTempTarget);
    // The next free number; a file that appeared meanwhile (another writer) moves us on, never over it.
    let n = nextStopNumber(names);
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
        publishRecordFile(path, envelope);
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

/** The stop file a temp name in stops/ is for (publish-file.ts), or null. */
function stopTempTarget(name: string): string | null {
  const m = /^\.([^/]+\.dsse\.json)\.tmp-/.exec(name);
  return m !== null && stopNumberOf(m[1]!) !== null ? m[1]! : null;
}
