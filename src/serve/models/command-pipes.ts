/**
 * The pipes of a `command` model process (models/command.ts): the prompt on stdin, stdout
 * collected up to a bound, stderr forwarded to vigil's log (bounded) with its last line kept for
 * the error message.
 */
import { logLine } from "../../shared/log.ts";
import type { GroupChild } from "../../shared/process-group.ts";
import { sinkWrite } from "../../shared/sink.ts";

/** stderr forwarded to vigil's stderr per run; the rest is dropped (a chatty command must not flood logs). */
const MAX_FORWARDED_STDERR_BYTES = 64 * 1024;
const MAX_LINE_CHARS = 1000;

export async function writePrompt(child: GroupChild, prompt: string): Promise<void> {
  try {
    sinkWrite(child.stdin, prompt);
    await child.stdin.end();
  } catch {
    // EPIPE: the command exited or closed stdin without reading it all; its exit status tells the story.
  }
}

export function closeStdin(child: GroupChild): void {
  try {
    void Promise.resolve(child.stdin.end()).catch(() => {});
  } catch {
    // already closed
  }
}

/** Collects a stream up to `max` bytes; beyond that calls `onOverflow` once and keeps draining without storing. */
export async function readBounded(stream: ReadableStream<Uint8Array>, max: number, onOverflow: () => void): Promise<Uint8Array> {
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
export async function forwardStderr(stream: ReadableStream<Uint8Array>): Promise<string> {
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
