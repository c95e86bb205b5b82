/**
 * The `command` model provider (serve.md §2, §5): its `model` mapping, and one process per run, in
 * its own process group, fed the rendered prompt on stdin; its stdout is the assistant message and
 * exit 0 means success. As a `ChatModel` it answers one turn with text only: it cannot call tools,
 * so a run with it is one model turn.
 *
 * Whatever happens (success, failure, timeout, abort, oversized output), the whole group is swept
 * before the promise settles: commands like `claude -p` start helpers, and one left behind would
 * outlive the run and keep holding our pipes.
 *
 * Config: every `command` element expands `${VAR}` (and is secret when it did).
 */
import * as v from "valibot";
import { MCP_SERVER_LIMITS } from "../../mcp/server-config.ts";
import { VigilError, errorMessage } from "../../shared/errors.ts";
import { type GroupChild, spawnGroup, statusExitCode, sweepGroup, tryStatus } from "../../shared/process-group.ts";
import { NO_NUL, integer, text } from "../../shared/schema-parts.ts";
import { scrubText } from "../../shared/scrub.ts";
import { within } from "../../shared/time.ts";
import type { Env } from "../config/env.ts";
import { contextTokensEntry } from "../context/budget.ts";
import { closeStdin, forwardStderr, readBounded, writePrompt } from "./command-pipes.ts";
import type { ProviderEntry } from "./provider.ts";
import { renderTranscriptPrompt } from "./transcript-prompt.ts";
import { type ChatModel, ModelError } from "./types.ts";

/** Bounds of the `command` model mapping; an argv is bounded as every argv in the file. */
export const COMMAND_LIMITS = {
  argv: MCP_SERVER_LIMITS.argv,
  valueChars: MCP_SERVER_LIMITS.valueChars,
  /** `timeout_ms`: 24 h. */
  timeoutMs: 86_400_000,
} as const;

function commandModelSchema(_expanded: boolean) {
  const L = COMMAND_LIMITS;
  /** Argv: 1..argv elements, the first (the program) non-empty. */
  const argv = v.pipe(
    v.array(text("a string", L.valueChars, 0, NO_NUL), "expected a list of strings"),
    v.minLength(1, "expected a non-empty list"),
    v.maxLength(L.argv, `expected at most ${L.argv} elements`),
    v.check((parts) => parts[0] !== "", "expected a non-empty program name first"),
  );
  return v.strictObject({
    provider: v.literal("command"),
    command: argv,
    timeout_ms: v.optional(integer(1, L.timeoutMs), 600_000),
    context_tokens: contextTokensEntry(),
  }, "expected a mapping");
}

export type CommandModelConfig = v.InferOutput<ReturnType<typeof commandModelSchema>>;

export const commandProvider = {
  name: "command",
  schema: commandModelSchema,
  limits: COMMAND_LIMITS,
  expand: (model, value) => ({ ...model, command: model.command.map((part, j) => value(part, ["command", j])) }),
  redact: (model, hide) => ({ ...model, command: model.command.map((part, j) => hide.value(part, ["command", j])) }),
  describe: (model) => `command:${model.command[0] ?? ""}`,
  apiKeyVariable: () => undefined,
  // The command inherits vigil's environment, as it always has (`env` is not passed on).
  create: (model) => ({ chat: createCommandModel(model), maxTurns: 1, timeoutMs: model.timeout_ms, contextTokens: model.context_tokens }),
} as const satisfies ProviderEntry<ReturnType<typeof commandModelSchema>>;

/** The command model as a `ChatModel`: each turn renders the conversation and runs the command once. */
export function createCommandModel(config: CommandModelConfig, options: { env?: Env } = {}): ChatModel {
  return {
    acceptsTools: false,
    async turn(messages, _tools, signal) {
      const { text } = await runCommandModel(config, renderTranscriptPrompt(messages), signal, options);
      return { text, toolCalls: [] };
    },
  };
}

/** Largest stdout accepted as the answer; beyond it the command is stopped and the run fails. */
export const MAX_COMMAND_OUTPUT_BYTES = 8 * 1024 * 1024;
/** After the group is gone, a pipe can only still be open if someone escaped the group: stop waiting. */
const PIPE_DRAIN_MS = 1000;

type StopReason = "timeout" | "aborted" | "too_large";

/**
 * Runs the command once. Resolves `{ text }` (stdout, decoded as UTF-8) when it exits 0. Rejects
 * with ModelError: "spawn" (cannot start), "exit" (non-zero exit or signal; `exitCode` set, message
 * ends with the last stderr line), "timeout" (`timeout_ms`), "aborted" (`signal`), "protocol"
 * (stdout over MAX_COMMAND_OUTPUT_BYTES). Settles only after the process group is gone (bounded by
 * the sweep's SIGTERM → SIGKILL budget).
 */
export async function runCommandModel(
  config: CommandModelConfig,
  prompt: string,
  signal: AbortSignal,
  options: { env?: Env } = {},
): Promise<{ text: string }> {
  if (signal.aborted) throw new ModelError("aborted", "model command aborted before it started");
  let child: GroupChild;
  try {
    child = spawnGroup(config.command, { stderr: "pipe", ...(options.env === undefined ? {} : { env: { ...options.env } }) });
  } catch (e) {
    // The argv may hold `${VAR}` values: scrubbed like every model error (its stderr line already is, in command-pipes.ts).
    throw new ModelError("spawn", scrubText(e instanceof VigilError ? e.message : `cannot start the model command: ${errorMessage(e)}`), { cause: e });
  }

  let stopped: StopReason | undefined;
  let sweeping: Promise<unknown> | undefined;
  const stop = (why: StopReason) => {
    if (stopped !== undefined || tryStatus(child) !== null) return;
    stopped = why;
    closeStdin(child);
    // Grace 0: the command had its time; SIGTERM the group now, SIGKILL after the sweep's poll.
    sweeping = sweepGroup(child, 0);
  };
  const onAbort = () => stop("aborted");
  signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => stop("timeout"), config.timeout_ms);

  // Not awaited: a command that never reads stdin must not block us on a full pipe.
  void writePrompt(child, prompt);
  const stdout = readBounded(child.stdout, MAX_COMMAND_OUTPUT_BYTES, () => stop("too_large"));
  const stderr = child.stderr === undefined ? Promise.resolve("") : forwardStderr(child.stderr);

  try {
    await child.exited;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    // Also after a clean exit: a background child of the command may still be running in the group.
    await (sweeping ?? sweepGroup(child, 0));
  }
  const out = await within(stdout, PIPE_DRAIN_MS);
  const lastStderr = (await within(stderr, PIPE_DRAIN_MS)) ?? "";

  if (stopped === "timeout") throw new ModelError("timeout", `model command timed out after ${config.timeout_ms} ms`);
  if (stopped === "aborted") throw new ModelError("aborted", "model command aborted");
  if (stopped === "too_large") throw new ModelError("protocol", `model command output exceeds ${MAX_COMMAND_OUTPUT_BYTES} bytes`);
  const status = tryStatus(child);
  if (status === null || status.termination !== "exited" || status.exit_code !== 0) {
    const code = status === null ? 1 : statusExitCode(status);
    const how = status?.termination === "signaled" ? `was killed by signal ${status.signal}` : `exited with code ${code}`;
    throw new ModelError("exit", `model command ${how}${lastStderr === "" ? "" : `: ${lastStderr}`}`, { exitCode: code });
  }
  if (out === undefined) throw new ModelError("protocol", "model command output did not end (a process outside its group holds stdout)");
  return { text: new TextDecoder("utf-8", { fatal: false }).decode(out) };
}

