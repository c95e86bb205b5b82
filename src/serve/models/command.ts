/**
 * The `command` model (serve.md §5): one process per run, in its own process group, fed the
 * rendered prompt on stdin; its stdout is the assistant message and exit 0 means success.
 *
 * Whatever happens (success, failure, timeout, abort, oversized output), the whole group is swept
 * before the promise settles: commands like `claude -p` start helpers, and one left behind would
 * outlive the run and keep holding our pipes.
 */
import type { ModelConfig } from "../config/schema.ts";
import type { Env } from "../config/expand.ts";
import { VigilError, errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { sinkWrite } from "../../shared/sink.ts";
import { type GroupChild, spawnGroup, statusExitCode, sweepGroup, tryStatus, within } from "../../shared/process-group.ts";
import { ModelError } from "./types.ts";

export type CommandModelConfig = Extract<ModelConfig, { provider: "command" }>;

/** Largest stdout accepted as the answer; beyond it the command is stopped and the run fails. */
export const MAX_COMMAND_OUTPUT_BYTES = 8 * 1024 * 1024;
/** stderr forwarded to vigil's stderr per run; the rest is dropped (a chatty command must not flood logs). */
const MAX_FORWARDED_STDERR_BYTES = 64 * 1024;
const MAX_LINE_CHARS = 1000;
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
    throw new ModelError("spawn", e instanceof VigilError ? e.message : `cannot start the model command: ${errorMessage(e)}`, { cause: e });
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

async function writePrompt(child: GroupChild, prompt: string): Promise<void> {
  try {
    sinkWrite(child.stdin, prompt);
    await child.stdin.end();
  } catch {
    // EPIPE: the command exited or closed stdin without reading it all; its exit status tells the story.
  }
}

function closeStdin(child: GroupChild): void {
  try {
    void Promise.resolve(child.stdin.end()).catch(() => {});
  } catch {
    // already closed
  }
}

/** Collects a stream up to `max` bytes; beyond that calls `onOverflow` once and keeps draining without storing. */
async function readBounded(stream: ReadableStream<Uint8Array>, max: number, onOverflow: () => void): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let overflowed = false;
  for await (const chunk of stream) {
    if (overflowed) continue;
    total += chunk.byteLength;
    if (total > max) {
      overflowed = true;
      chunks.length = 0;
      onOverflow();
      continue;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Forwards the command's stderr line by line (prefixed, bounded) and resolves with its last
 * non-empty line, for the error message. Diagnostics only: the prompt is never on stderr.
 */
async function forwardStderr(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let forwarded = 0;
  let pending = "";
  let last = "";
  const emit = (line: string) => {
    const clipped = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
    if (clipped.trim() !== "") last = clipped.trim().slice(0, 200);
    if (forwarded < MAX_FORWARDED_STDERR_BYTES) {
      forwarded += clipped.length;
      logLine(`model command: ${clipped}`);
      if (forwarded >= MAX_FORWARDED_STDERR_BYTES) logLine("model command: (further stderr dropped)");
    }
  };
  for await (const chunk of stream) {
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) emit(line);
    // A single unterminated line must not grow without bound.
    if (pending.length > MAX_LINE_CHARS * 4) {
      emit(pending);
      pending = "";
    }
  }
  pending += decoder.decode();
  if (pending !== "") emit(pending);
  return last;
}
