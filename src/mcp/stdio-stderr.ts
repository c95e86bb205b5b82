/**
 * A stdio server's stderr, forwarded to vigil's stderr one line at a time, each line prefixed with
 * the server's name so an operator can tell several servers apart in one journal.
 *
 * Lines are bounded (a server printing a megabyte without a newline must not make vigil hold it)
 * and control characters are escaped, so a server cannot forge vigil's own log lines or drive the
 * operator's terminal.
 */
import { logLine } from "../shared/log.ts";
import { type Frame, LineSplitter } from "../shared/ndjson/line-splitter.ts";
import { type LineReader, readLines } from "./line-reader.ts";

/** Longer lines are cut to their first bytes (LineSplitter keeps a 4 KiB head of an over-cap line). */
export const STDERR_LINE_MAX_BYTES = 4096;

export interface StderrForwarder extends LineReader {
  /** Lines forwarded so far. */
  lines(): number;
}

export function forwardServerStderr(
  stream: ReadableStream<Uint8Array>,
  serverName: string,
  write: (line: string) => void = logLine,
): StderrForwarder {
  const prefix = `[${escapeControls(serverName)}] `;
  let count = 0;
  const reader = readLines(stream, new LineSplitter(STDERR_LINE_MAX_BYTES), {
    frame(frame) {
      const text = stderrLineText(frame);
      if (text === null) return;
      count++;
      write(prefix + text);
    },
    // A broken stderr pipe loses only diagnostics; the connection is judged by stdout and exit.
    failed() {},
    ended() {},
  });
  return { ...reader, lines: () => count };
}

/** The printable form of one stderr frame; null for an empty line. */
export function stderrLineText(frame: Frame): string | null {
  if (frame.kind === "oversized") return `${decode(frame.head)}… (line of ${frame.length} bytes cut)`;
  const bytes = frame.kind === "line" ? frame.bytes : Buffer.concat(frame.parts).subarray(0, frame.length);
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
  if (end === 0) return null;
  return decode(bytes.subarray(0, end));
}

function decode(bytes: Uint8Array): string {
  return escapeControls(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
}

/** C0 controls (but tab), DEL and C1 controls as \xNN; ANSI escapes then show up as text. */
export function escapeControls(text: string): string {
  return text.replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
