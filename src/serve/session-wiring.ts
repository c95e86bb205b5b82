/**
 * How one named session of `vigil serve` is built on the parts the process shares (serve.md §4,
 * §6 item 9), and taken apart again.
 *
 * - Each session gets its own tool gateway (policy sessions per server) over the shared pool and,
 *   with `evidence.decision_log`, its own `sessions/<name>/decisions.ndjson` (append mode, so a
 *   reopened session continues its log).
 * - The prompt is announced right after run_start: clients see what the run answers, and a
 *   reopened session rebuilds its history from these user message frames.
 * - Close order: subscriptions stop first (nothing new arrives), then the run in flight settles
 *   (its batches are marked delivered or returned), then the events state is written.
 */
import { join } from "node:path";
import { DecisionRecorder } from "../evidence/decision-recorder.ts";
import { EvidenceLog } from "../evidence/evidence-log.ts";
import type { McpServerPool } from "../mcp/server-pool.ts";
import type { LoadedPolicy } from "../policy/load.ts";
import { VigilError, errorMessage } from "../shared/errors.ts";
import type { ServeConfig } from "./config/schema.ts";
import type { EventsService } from "./events-service.ts";
import type { RunModel } from "./models/types.ts";
import { type FrameBody, messageFrame } from "./protocol/frames.ts";
import { runConversation } from "./run/run-loop.ts";
import { createToolGateway } from "./run/tool-gateway.ts";
import { Session } from "./session/session.ts";
import type { Runner } from "./session/types.ts";
import { DECISIONS_FILE, ensureSessionDir } from "./state/paths.ts";
import type { OpenOptions } from "./types.ts";

/** What every session is built on: loaded once per process. */
export interface SessionParts {
  config: ServeConfig;
  stateDir: string;
  policy: LoadedPolicy | null;
  model: RunModel;
  pool: McpServerPool;
  events: EventsService;
}

export interface OpenedSession {
  session: Session;
  /** Closes what the session holds beyond itself (its decision log); after the session closed. */
  release(): void;
}

/** Opens the session `name` with its events state attached; on failure nothing it opened stays open. */
export async function openServeSession(parts: SessionParts, name: string, options: OpenOptions): Promise<OpenedSession> {
  const dir = ensureSessionDir(parts.stateDir, name);
  const log = openDecisionLog(parts.config, dir);
  const release = () => log?.close();
  let session: Session;
  try {
    session = await Session.open({ name, dir, runner: sessionRunner(parts, name, log) });
  } catch (e) {
    release();
    throw e;
  }
  if (options.subscribe !== undefined) session.subscribe(options.subscribe);
  try {
    await parts.events.attach(session, dir);
  } catch (e) {
    await session.close().catch(() => {});
    release();
    throw new Error(`session ${JSON.stringify(name)}: its MCP Events state cannot be used: ${errorMessage(e)}`, { cause: e });
  }
  return { session, release };
}

/** Closes the session `name` and writes its events state. */
export async function closeServeSession(events: EventsService, name: string, session: Session): Promise<void> {
  await events.beforeClose(name);
  await session.close();
  await events.detach(name);
}

function openDecisionLog(config: ServeConfig, dir: string): EvidenceLog | null {
  if (config.evidence === undefined || !config.evidence.decision_log) return null;
  const path = join(dir, DECISIONS_FILE);
  try {
    return EvidenceLog.openAppend(path);
  } catch (e) {
    throw new VigilError("evidence_write_failed", `cannot open decision log ${path}: ${errorMessage(e)}`, { cause: e });
  }
}

function sessionRunner(parts: SessionParts, name: string, log: EvidenceLog | null): Runner {
  const { config, policy, model, pool } = parts;
  const decisions = log === null || config.evidence === undefined
    ? null
    : new DecisionRecorder(log, config.evidence.event_source, policy?.digest ?? null, false);
  const tools = config.mcp_servers.length === 0 ? null : createToolGateway({ pool, policy, decisions, sessionId: name });
  const systemPrompt = config.system_prompt === undefined ? {} : { systemPrompt: config.system_prompt };
  return (request, emit, signal) => {
    const announcing = async (frame: FrameBody) => {
      await emit(frame);
      if (frame.type !== "run_start") return;
      for (const m of request.prompt) if (m.role === "user") await emit(messageFrame("user", m.text));
    };
    return runConversation(request, { model, tools, ...systemPrompt, emit: announcing }, signal);
  };
}
