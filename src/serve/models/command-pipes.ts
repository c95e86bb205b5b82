/**
 * The pipes of a `command` model process (models/command.ts): the prompt on stdin, stdout
 * collected up to a bound, stderr forwarded to vigil's log (bounded) with its last line kept for
 * the error message.
 */
import { type LogFields, logLine } from "../../shared/log.ts";
import type { GroupChild } from "../../shared/process-group.ts";
import { sinkWrite } from "../../shared/sink.ts";
import { scrubAndCut } from "../../shared/scrub.ts";

/** stderr forwarded to vigil's stderr per run; the rest is dropped (a chatty command must not flood logs). */
const MAX_FORWARDED_STDERR_BYTES = 64 * 1024;
const MAX_LINE_CHARS = 1000;
/** How much of an unterminated line is held, and scrubbed, before it is cut at MAX_LINE_CHARS. */
const MAX_LINE_WINDOW_CHARS = MAX_LINE_CHARS * 4;

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
 *
 * A line is scrubbed before it is cut (shared/scrub.ts `scrubAndCut`), so no part of a secret is
 * left at the cut. A line that grows past MAX_LINE_WINDOW_CHARS without its newline is cut there:
 * the window is scrubbed and cut like any long line, and the rest of that line is dropped up to its
 * newline — never forwarded as a line of its own, which could begin with the tail of a secret.
 */
export async function forwardStderr(stream: ReadableStream<Uint8Array>, write: (line: string, fields?: LogFields) => void = logLine): Promise<string> {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let forwarded = 0;
  let pending = "";
  let dropping = false;
  let last = "";
  const emit = (raw: string) => {
    // The scrub sees at most the window: a line that arrived whole in one big chunk is no more work.
    const { text, cut } = scrubAndCut(raw.slice(0, MAX_LINE_WINDOW_CHARS), MAX_LINE_CHARS);
    const clipped = cut ? `${text}…` : text;
    if (clipped.trim() !== "") last = clipped.trim().slice(0, 200);
    if (forwarded < MAX_FORWARDED_STDERR_BYTES) {
      forwarded += clipped.length;
      write(`model command: ${clipped}`, { code: "model_stderr" });
      if (forwarded >= MAX_FORWARDED_STDERR_BYTES) write("model command: (further stderr dropped)", { level: "warn", code: "model_stderr_dropped" });
    }
  };
  const take = (text: string) => {
    const lines = (pending + text).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (dropping) dropping = false; // the end of the line that was cut
      else emit(line);
    }
    if (dropping) pending = "";
    else if (pending.length > MAX_LINE_WINDOW_CHARS) {
      // A single unterminated line must not grow without bound.
      emit(pending);
      pending = "";
      dropping = true;
    }
  };
  for await (const chunk of stream) take(decoder.decode(chunk, { stream: true }));
  take(decoder.decode());
  if (pending !== "") emit(pending);
  return last;
}
