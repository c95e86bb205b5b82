/**
 * How one named session of `vigil serve` is built on the parts the process shares (serve.md §4,
 * §6 item 9), and taken apart again.
 *
 * - Each session gets its own tool gateway (policy sessions per server) over the shared pool and,
 *   with `evidence`, its own evidence (session-evidence.ts): `sessions/<name>/decisions.ndjson`,
 *   whose chain (and `seq`) a reopened session continues, and with a signing key checkpoints and a
 *   signed statement at every stop.
 * - The prompt is announced right after run_start: clients see what the run answers, and a
 *   reopened session rebuilds its history from these user message frames.
 * - stdio mode opens its session's state (openSessionState) before the MCP servers start, and
 *   takes it into service (openServeSession) once they are connected.
 * - Close order: subscriptions stop first (nothing new arrives), then the run in flight settles
 *   (its batches are marked delivered or returned), then the events state is written; then the
 *   release (`release(reason)`) closes the evidence and writes the stop statement over the files.
 */
import { DecisionRecorder } from "../evidence/decision-recorder.ts";
import type { McpServerPool } from "../mcp/server-pool.ts";
import type { ServerStateReport } from "../mcp/supervision.ts";
import { VERSION } from "../shared/build-info.ts";
import { errorMessage } from "../shared/errors.ts";
import { StateError } from "../shared/durable/state-error.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { ServeTuning } from "./config/tuning.ts";
import type { EventsStore, LedgerOptions } from "../events/store/events-store.ts";
import type { PolicySource } from "./policy-holder.ts";
import { EventsService } from "./events-service.ts";
import type { RunModel } from "./models/types.ts";
import { type FrameBody, messageFrame } from "./protocol/frames.ts";
import { runConversation } from "./run/run-loop.ts";
import { runTraceInfo } from "./run/run-tracing.ts";
import { createToolGateway } from "./run/tool-gateway.ts";
import { contextBudget } from "./context/budget.ts";
import { armTestThrow } from "./session-faults.ts";
import { type EvidenceSetup, type ServeStopReason, SessionEvidence } from "./session-evidence.ts";
import { Session } from "./session/session.ts";
import type { Runner } from "./session/types.ts";
import { ensureSessionDir } from "./state/paths.ts";
import type { TranscriptLimits } from "./state/transcript-types.ts";
import type { OpenOptions } from "./types.ts";

/** What a session's state is opened with: no MCP server is needed for it. */
export interface StateParts {
  config: ServeConfig;
  stateDir: string;
  tuning: ServeTuning;
  /** Segment size and retention of every session's transcript (default: the transcript's own). */
  transcript?: TranscriptLimits;
  /** The containment boundary (session-faults.ts): an exception that escaped a session's own code. */
  faults?: (name: string, session: Session, error: unknown) => void;
  /** The MCP servers' states for get_state (late-bound: stdio mode opens its session before the pool exists). */
  serverStates?: () => readonly ServerStateReport[];
  /** The signing key and what the stop statements name (default: unsigned, no policy digest). */
  evidence?: EvidenceSetup;
}

/** What every session is built on: loaded once per process. */
export interface SessionParts extends StateParts {
  /** The policy in force, read at each decision (a reload replaces it). */
  policy: PolicySource;
  model: RunModel;
  pool: McpServerPool;
  events: EventsService;
}

export interface OpenedSession {
  session: Session;
  /**
   * Closes what the session holds beyond itself (its evidence); after the session closed. With a
   * reason the session served and stopped: its stop statement is written; without, it never served.
   */
  release(reason?: ServeStopReason): void;
}

/**
 * A session opened on its state alone: its decision log, its transcript (and the history rebuilt
 * from it), and — when asked — its events state checked; it has no runner yet and runs nothing.
 * stdio mode opens its one session so before any MCP server starts, so a refusal (a damaged state
 * file: exit 2; a decision log that cannot be opened: exit 3) has started nothing (README "Exit status").
 */
export interface SessionState extends OpenedSession {
  readonly name: string;
  readonly dir: string;
  /** Its evidence (null without `evidence` in the config). */
  readonly evidence: SessionEvidence | null;
  /** Its events store, when it was checked at opening (`checkEvents`): handed to the hub at attach. */
  readonly events: EventsStore | null;
  /** Gives the session its runner, once what runs need (the MCP servers) is there. Once. */
  bind(runner: Runner): void;
  /** Closes the session and releases it, when it is never taken into service. */
  discard(): Promise<void>;
}

export async function openSessionState(parts: StateParts, name: string, o: { checkEvents: boolean }): Promise<SessionState> {
  const dir = ensureSessionDir(parts.stateDir, name);
  const evidence = openEvidence(parts, name, dir);
  const release = (reason?: ServeStopReason) => (reason === undefined ? evidence?.close() : evidence?.stop(reason));
  let runner: Runner | null = null;
  let session: Session;
  try {
    // The session calls its runner only for a run, and none starts before `bind`: no command is
    // read and no events state is attached until then.
    session = await Session.open({
      name,
      dir,
      ...(parts.transcript === undefined ? {} : { transcript: parts.transcript }),
      runner: (request, emit, signal) => bound(runner)(request, emit, signal),
      ...(parts.config.model.context_tokens === undefined ? {} : { contextTokens: parts.config.model.context_tokens }),
      onFault: (error) => parts.faults?.(name, session, error),
      ...(parts.serverStates === undefined ? {} : { serverStates: parts.serverStates }),
    });
  } catch (e) {
    release();
    throw e;
  }
  let events: EventsStore | null = null;
  if (o.checkEvents) {
    try {
      events = await EventsService.openState(dir, parts.tuning, ledgerOptions(parts.config, name, evidence));
    } catch (e) {
      await session.close().catch(() => {});
      release();
      throw eventsStateRefused(name, e);
    }
  }
  return {
    name,
    dir,
    evidence,
    events,
    session,
    release,
    bind(r) {
      if (runner !== null) throw new Error(`session ${JSON.stringify(name)} already has its runner`);
      runner = r;
    },
    async discard() {
      await events?.close().catch(() => {});
      await session.close().catch(() => {});
      release();
    },
  };
}

function bound(runner: Runner | null): Runner {
  if (runner === null) throw new Error("a run started before the session was bound to its runner");
  return runner;
}

/**
 * Opens the session `name` with its events state attached (or takes `state`, opened before the MCP
 * servers started, into service); on failure nothing it opened stays open.
 */
export async function openServeSession(parts: SessionParts, name: string, options: OpenOptions, state?: SessionState): Promise<OpenedSession> {
  const opened = state ?? (await openSessionState(parts, name, { checkEvents: false }));
  opened.bind(sessionRunner(parts, name, opened.evidence));
  const { session, release } = opened;
  if (options.subscribe !== undefined) session.subscribe(options.subscribe);
  armTestThrow(session);
  try {
    const ledger = ledgerOptions(parts.config, name, opened.evidence);
    await parts.events.attach(session, opened.dir, opened.events ?? undefined, (error) => parts.faults?.(name, session, error), ledger);
  } catch (e) {
    await session.close().catch(() => {});
    release();
    throw eventsStateRefused(name, e);
  }
  const ledger = parts.events.ledgerOf(name);
  if (ledger !== null) opened.evidence?.attachLedger({ source: ledger, pending: () => ledger.pendingSeqs() });
  return { session, release };
}

/** With `evidence`, the events store keeps the session's event ledger (events.ndjson); its records count toward the checkpoints. */
function ledgerOptions(config: ServeConfig, name: string, evidence: SessionEvidence | null): LedgerOptions | undefined {
  if (config.evidence === undefined) return undefined;
  return { eventSource: config.evidence.event_source, sessionId: name, ...(evidence === null ? {} : { onWritten: (n: number) => evidence.noteWritten(n) }) };
}

/**
 * A state problem stays a StateError (its reason, so its exit code: a damaged `mcp-events.json`
 * is refused with exit 2 and one line naming the file, in stdio mode as at a daemon's 503);
 * anything else stays what it is, a bug.
 */
function eventsStateRefused(name: string, e: unknown): Error {
  const message = `session ${JSON.stringify(name)}: its MCP Events state cannot be used: ${errorMessage(e)}`;
  return e instanceof StateError ? new StateError(e.reason, message, { cause: e }) : new Error(message, { cause: e });
}

/** Closes the session `name` and writes its events state. */
export async function closeServeSession(events: EventsService, name: string, session: Session): Promise<void> {
  await events.beforeClose(name);
  await session.close();
  await events.detach(name);
}

function openEvidence(parts: StateParts, name: string, dir: string): SessionEvidence | null {
  if (parts.config.evidence === undefined) return null;
  return SessionEvidence.open(parts.config.evidence, parts.evidence ?? { signer: null, policyDigest: null, version: VERSION }, name, dir);
}

function sessionRunner(parts: SessionParts, name: string, evidence: SessionEvidence | null): Runner {
  const { config, policy, model, pool } = parts;
  const log = evidence?.decisions ?? null;
  // `seq` goes on from the resumed chain's count, so record ids stay unique across restarts.
  const decisions = log === null || config.evidence === undefined
    ? null
    : new DecisionRecorder(log, config.evidence.event_source, () => policy.current?.digest ?? null, false, log.head().count);
  const gateway = createToolGateway({ pool, policy, decisions, sessionId: name, toolsMaxTokens: contextBudget(model.contextTokens).toolsMax });
  const systemPrompt = config.system_prompt === undefined ? {} : { systemPrompt: config.system_prompt };
  const trace = runTraceInfo(name, config.model, pool);
  return (request, emit, signal) => {
    const announcing = async (frame: FrameBody) => {
      await emit(frame);
      if (frame.type !== "run_start") return;
      for (const m of request.prompt) if (m.role === "user") await emit(messageFrame("user", m.text));
    };
    // Per run: a reload may add the first server or remove the last (no servers: no tools offered).
    const tools = pool.serverNames.length === 0 ? null : gateway;
    return runConversation(request, { model, tools, ...systemPrompt, emit: announcing, trace }, signal);
  };
}
