/**
 * A stdio server's stderr, forwarded to vigil's stderr one line at a time, each line prefixed with
 * the server's name so an operator can tell several servers apart in one journal.
 *
 * Lines are bounded (a server printing a megabyte without a newline must not make vigil hold it)
 * and control characters are escaped, so a server cannot forge vigil's own log lines or drive the
 * operator's terminal.
 *
 * With `--log-format json` each line is a JSON line of its own: `msg` is the server's line (bounded
 * and escaped the same way), `server` its name, `code` "server_stderr" — the name is a field, not
 * a prefix, so a shipper can filter on it.
 *
 * A long line is scrubbed before it is cut (issue 11 item 1): a secret straddling the cut would
 * otherwise leave its prefix in the log, where the whole-line scrub of `logLine` cannot see it. The
 * splitter keeps a window of the line a margin longer than the cut; the window is scrubbed, then cut.
 */
import { logFormat, logLine } from "../shared/log.ts";
import { type Frame, LineSplitter } from "../shared/ndjson/line-splitter.ts";
import { scrubAndCut } from "../shared/scrub.ts";
import { type LineReader, readLines } from "./line-reader.ts";

/** Longer lines are cut to their first bytes. */
export const STDERR_LINE_MAX_BYTES = 4096;
/** What is kept of a line to scrub before the cut: the cut plus room for a secret that straddles it. */
export const STDERR_SCRUB_WINDOW_BYTES = STDERR_LINE_MAX_BYTES + 4096;

export interface StderrForwarder extends LineReader {
  /** Lines forwarded so far. */
  lines(): number;
}

export function forwardServerStderr(
  stream: ReadableStream<Uint8Array>,
  serverName: string,
  write: (text: string, server: string) => void = serverStderrLine,
): StderrForwarder {
  let count = 0;
  const splitter = new LineSplitter(STDERR_SCRUB_WINDOW_BYTES, Number.POSITIVE_INFINITY, STDERR_SCRUB_WINDOW_BYTES);
  const reader = readLines(stream, splitter, {
    frame(frame) {
      const text = stderrLineText(frame);
      if (text === null) return;
      count++;
      write(text, serverName);
    },
    // A broken stderr pipe loses only diagnostics; the connection is judged by stdout and exit.
    failed() {},
    ended() {},
  });
  return { ...reader, lines: () => count };
}

/** One forwarded line on vigil's stderr: `[name] text` in text format, a `server_stderr` record in JSON. */
export function serverStderrLine(text: string, server: string): void {
  if (logFormat() === "json") logLine(text, { server, code: "server_stderr" });
  else logLine(`[${escapeControls(server)}] ${text}`);
}

/** The printable form of one stderr frame, scrubbed, then cut to STDERR_LINE_MAX_BYTES; null for an empty line. */
export function stderrLineText(frame: Frame): string | null {
  if (frame.kind === "oversized") return cutLine(frame.head, frame.length);
  let bytes = frame.kind === "line" ? frame.bytes : Buffer.concat(frame.parts).subarray(0, frame.length);
  if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
  if (bytes.length === 0) return null;
  if (bytes.length > STDERR_LINE_MAX_BYTES) return cutLine(bytes, bytes.length);
  return escapeControls(decode(bytes));
}

/** A line of `length` bytes of which `window` is the start: scrubbed, then cut at the byte limit (on a character boundary). */
function cutLine(window: Uint8Array, length: number): string {
  const head = decode(window.subarray(0, charBoundary(window, STDERR_LINE_MAX_BYTES)));
  const { text } = scrubAndCut(decode(window), head.length);
  return `${escapeControls(text)}… (line of ${length} bytes cut)`;
}

/** The largest offset ≤ `at` that does not split a UTF-8 sequence. */
function charBoundary(bytes: Uint8Array, at: number): number {
  let i = Math.min(at, bytes.length);
  while (i > 0 && i < bytes.length && (bytes[i]! & 0xc0) === 0x80) i--;
  return i;
}

function decode(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
}

/** C0 controls (but tab), DEL and C1 controls as \xNN; ANSI escapes then show up as text. */
export function escapeControls(text: string): string {
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
