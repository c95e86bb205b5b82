/**
 * One model run of `vigil serve` (serve.md §4, §5): the conversation goes to the model, tool calls go
 * through the governed gateway, and the frames `run_start`, `message`, `tool_call`, `tool_result`
 * and `run_end` tell the client what happened. Persistence is the session's job: the run returns
 * everything it added to the conversation (`appended`) and how many steered messages the model
 * actually received (`steersSeen`), and the session decides success once those are fsync'd.
 *
 * - Steers: `takeSteers()` is called right before each model turn; what it returns is appended,
 *   announced as `message` frames (role user) and counted as seen, because that turn is started with
 *   it. Messages never taken stay with the caller (they go back to its queue on abort).
 * - The prompt messages are part of `appended` but get no `message` frame here: the session
 *   announces the prompt it accepted.
 * - One path for every model provider (models/registry.ts): each turn goes to `ChatModel.turn`.
 *   The `command` model answers its one turn with text, so its run is one turn.
 * - Bounds: `maxTurns` model turns (one more turn wanted → failed, the conversation so far kept)
 *   and `timeoutMs` for the whole run (an internal deadline combined with the caller's signal).
 * - Context: every request goes through a ContextKeeper (context/keeper.ts), which holds it within
 *   `model.context_tokens`, compacting the history (a stored `compaction` frame) or the run's own
 *   growth first; `appended` is the run's messages as the model last saw them.
 * - A run that is aborted or times out while tool calls are pending answers those calls with an
 *   error tool message, so the stored conversation stays well formed for the next run.
 */
import { canonicalSha256 } from "../../shared/digest.ts";
import { errorMessage } from "../../shared/errors.ts";
import { type ChatMessage, ModelError, type RunModel, type ToolSpec, isToolArgumentsError } from "../models/types.ts";
import {
  type FrameBody,
  type RunStatus,
  type RunTrigger,
  messageFrame,
  runEndFrame,
  runStartFrame,
  toolCallFrame,
  toolResultFrame,
} from "../protocol/frames.ts";
import { unavailableRunCode } from "../models/availability.ts";
import type { HistoryBlock } from "../context/blocks.ts";
import { contextBudget } from "../context/budget.ts";
import { ContextKeeper } from "../context/keeper.ts";
import { ModelAnswerTooLargeError, modelAnswerProblem } from "./answer-caps.ts";
import { countRun, countUnplacedCall } from "./run-metrics.ts";
import { type RunTraceInfo, endRunSpan, endToolSpan, startRunSpan, startToolSpan, tracedChat } from "./run-tracing.ts";
import type { ToolGateway } from "./tool-gateway.ts";

export interface RunInput {
  runId: string;
  trigger: RunTrigger;
  /** The conversation so far (persisted by the session). */
  history: ChatMessage[];
  /** The new messages this run answers (usually user messages). */
  prompt: ChatMessage[];
  /** Messages steered into the running run; called right before each model turn. */
  takeSteers(): ChatMessage[];
  /**
   * The history as the session keeps it (blocks with transcript seqs), when it has one; `history`
   * is then its flattened messages. Without it `history` is one block.
   */
  blocks?: HistoryBlock[];
  /** The transcript's last seq when the run was created (a compaction's range ends there at most). */
  historySeq?: number;
  /** Called when the model answered a turn: the first `count` steers taken have been received. */
  steersReceived?(count: number): void;
}

export type { RunModel } from "../models/types.ts";

export interface RunDeps {
  model: RunModel;
  /** null: no tools are offered. */
  tools: ToolGateway | null;
  systemPrompt?: string;
  emit(frame: FrameBody): void | Promise<void>;
  /** What the run's spans say about the session and its model (run-tracing.ts). */
  trace?: RunTraceInfo;
}

export interface RunResult {
  status: RunStatus;
  error?: string;
  /** The stable code of a failure that has one (`model_answer_too_large`, `frame_not_stored`, `model_unavailable`: models/availability.ts). */
  code?: string;
  /** Everything this run added to the conversation, in order: prompt, steers, assistant and tool messages. */
  appended: ChatMessage[];
  /** How many steered messages a model turn was started with (the first `steersSeen` taken). */
  steersSeen: number;
}

const ABORTED_TOOL_TEXT = "vigil: the run ended before this tool call completed";

export async function runConversation(input: RunInput, deps: RunDeps, signal: AbortSignal): Promise<RunResult> {
  let steersSeen = 0;
  const deadline = new AbortController();
  const timeoutMs = deps.model.timeoutMs;
  const timer = setTimeout(() => deadline.abort(new Error("timeout")), timeoutMs);
  const combined = AbortSignal.any([signal, deadline.signal]);
  // Every model request of the run (its turns and compactions) is a span under the run's.
  const span = startRunSpan(input.runId, input.trigger, deps.trace);
  const model: RunModel = { ...deps.model, chat: tracedChat(deps.model.chat, span, deps.trace) };

  await deps.emit(runStartFrame(input.runId, input.trigger));
  // Every request goes through the keeper, which holds it within `model.context_tokens` (context/).
  const keeper = new ContextKeeper({
    chat: model.chat,
    budget: contextBudget(deps.model.contextTokens),
    ...(deps.systemPrompt === undefined ? {} : { systemPrompt: deps.systemPrompt }),
    blocks: input.blocks ?? (input.history.length === 0 ? [] : [{ fromSeq: 1, toSeq: input.historySeq ?? 0, messages: input.history }]),
    historySeq: input.historySeq ?? 0,
    prompt: input.prompt,
    emit: (frame) => deps.emit(frame),
  });
  const appended = keeper.own;
  const add = (m: ChatMessage) => keeper.add(m);
  const takeSteers = async () => {
    for (const m of input.takeSteers()) {
      add(m);
      steersSeen++;
      if (m.role === "user" || m.role === "system") await deps.emit(messageFrame(m.role, m.text));
    }
  };

  let status: RunStatus = "ok";
  let error: string | undefined;
  let code: string | undefined;
  const turns: TurnProgress = { answered: 0, steersReceived: input.steersReceived };
  try {
    if (signal.aborted) throw new ModelError("aborted", "run aborted before it started");
    await chatLoop(model, deps, input.runId, keeper, add, takeSteers, combined, turns, () => steersSeen);
  } catch (e) {
    if (signal.aborted) {
      status = "aborted";
      error = "the run was aborted";
    } else if (deadline.signal.aborted) {
      status = "failed";
      error = `the run timed out after ${timeoutMs} ms`;
      // The deadline cut a model request that never answered: the model is unavailable (availability.ts).
      code = e instanceof ModelError ? unavailableRunCode(new ModelError("timeout", error), turns.answered) : undefined;
    } else {
      status = "failed";
      code = unavailableRunCode(e, turns.answered) ?? stableCode(e);
      error = e instanceof ModelError || e instanceof RunLimitError || code !== undefined ? (e as Error).message : `the run failed: ${errorMessage(e)}`;
    }
    closePendingToolCalls(keeper.own, add);
  } finally {
    clearTimeout(timer);
  }
  countRun(status, code);
  endRunSpan(span, status, code);
  await deps.emit(runEndFrame(input.runId, status, error, code));
  const result: RunResult = { status, appended, steersSeen };
  if (error !== undefined) result.error = error;
  if (code !== undefined) result.code = code;
  return result;
}

class RunLimitError extends Error {}

/** How far the run got with the model: turns answered, and whom to tell that steers were received. */
interface TurnProgress {
  answered: number;
  steersReceived: ((count: number) => void) | undefined;
}

/**
 * The stable code of one of our typed errors, which the run_end carries so clients can tell
 * failures apart. Ours are lower_snake; a system error's errno (`EPIPE`) is not a run's code.
 */
function stableCode(e: unknown): string | undefined {
  const code = e instanceof Error ? (e as { code?: unknown }).code : undefined;
  return typeof code === "string" && /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : undefined;
}

async function chatLoop(
  model: RunModel,
  deps: RunDeps,
  runId: string,
  keeper: ContextKeeper,
  add: (m: ChatMessage) => void,
  takeSteers: () => Promise<void>,
  signal: AbortSignal,
  turns: TurnProgress,
  steersSeen: () => number,
): Promise<void> {
  // A model that cannot call tools is offered none, and the servers are not asked for their list.
  const specs: ToolSpec[] = deps.tools === null || !model.chat.acceptsTools ? [] : await deps.tools.specs();
  for (let turn = 0; turn < model.maxTurns; turn++) {
    signal.throwIfAborted();
    await takeSteers();
    const answer = await model.chat.turn(await keeper.request(specs, signal), specs, signal);
    turns.answered++;
    // The model answered a request carrying every steer taken so far: they are received (serve.md §6 item 5).
    turns.steersReceived?.(steersSeen());
    const tooLarge = modelAnswerProblem(answer);
    if (tooLarge !== null) throw new ModelAnswerTooLargeError(tooLarge);
    // Each message is announced before it joins the conversation: if its frame cannot be stored,
    // the run fails without it, so the history never holds what the transcript does not.
    if (answer.toolCalls.length === 0) {
      const text = answer.text ?? "";
      await deps.emit(messageFrame("assistant", text));
      add({ role: "assistant", text });
      return;
    }
    if (answer.text !== null && answer.text !== "") await deps.emit(messageFrame("assistant", answer.text));
    add({ role: "assistant", text: answer.text, toolCalls: answer.toolCalls });
    for (const call of answer.toolCalls) {
      signal.throwIfAborted();
      if (deps.tools === null) {
        // No tools were offered; a model that calls one anyway is told so (nothing is called).
        const argumentsSha256 = canonicalSha256(isToolArgumentsError(call.arguments) ? call.arguments.raw : (call.arguments ?? {}));
        await deps.emit(toolCallFrame({ run_id: runId, server: "", tool: call.name, arguments_sha256: argumentsSha256, decision: "deny" }));
        await deps.emit(toolResultFrame(runId, true));
        endToolSpan(startToolSpan(runId, call, specs, deps.trace?.session), { server: "", decision: "deny", reasonCode: "no_tools", isError: true });
        countUnplacedCall("no_tools");
        add({ role: "tool", toolCallId: call.id, text: "vigil: no tools are available in this session" });
        continue;
      }
      // tool_call is emitted once the decision is on record, before the server is called.
      const span = startToolSpan(runId, call, specs, deps.trace?.session);
      const outcome = await deps.tools.call(runId, call, signal, (d) =>
        deps.emit(toolCallFrame({ run_id: runId, server: d.server, tool: d.tool, arguments_sha256: d.argumentsSha256, decision: d.decision })),
      ).catch((e: unknown) => {
        endToolSpan(span, { thrown: e });
        throw e;
      });
      endToolSpan(span, outcome, deps.trace);
      await deps.emit(toolResultFrame(runId, outcome.isError));
      add({ role: "tool", toolCallId: call.id, text: outcome.text });
    }
  }
  throw new RunLimitError(`the model did not answer within max_turns (${model.maxTurns}) turns`);
}

/** Answers every tool call of the last assistant message that has no tool message yet. */
function closePendingToolCalls(messages: ChatMessage[], add: (m: ChatMessage) => void): void {
  let i = messages.length - 1;
  while (i >= 0 && messages[i]!.role === "tool") i--;
  const last = messages[i];
  if (last === undefined || last.role !== "assistant" || !last.toolCalls) return;
  const answered = new Set(messages.slice(i + 1).map((m) => (m.role === "tool" ? m.toolCallId : "")));
  for (const c of last.toolCalls) if (!answered.has(c.id)) add({ role: "tool", toolCallId: c.id, text: ABORTED_TOOL_TEXT });
}
