/**
 * The stderr logger. stdout is a data channel (the MCP stream in wrap, frames in serve), so every
 * diagnostic goes here. Lines are prefixed "vigil: " and never carry raw tool arguments or secrets:
 * every line is scrubbed of the registered secrets as a last guard (shared/scrub.ts).
 */
import { writeSync } from "node:fs";
import { scrubText } from "./scrub.ts";

let quiet = false;

export function setQuiet(value: boolean): void {
  quiet = value;
}

/** `--log-format` (issue 15 item 3): text lines `vigil: …` (the default) or one JSON object per line. */
export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
let format: LogFormat = "text";

export function setLogFormat(value: LogFormat): void {
  format = value;
}

export function logFormat(): LogFormat {
  return format;
}

/** The format a `--log-format` / `VIGIL_LOG_FORMAT` value names (exact, lower case); null for any other value. */
export function parseLogFormat(raw: string): LogFormat | null {
  return (LOG_FORMATS as readonly string[]).includes(raw) ? (raw as LogFormat) : null;
}

/**
 * The stable fields of a JSON log line, besides `time`, `level` and `msg`. In text format they
 * are not printed (the message already says what they name).
 */
export interface LogFields {
  level?: "error" | "warn" | "info" | "debug";
  session?: string;
  server?: string;
  event?: string;
  /** A stable lower_snake code (an error code, a refusal reason). */
  code?: string;
  /** What to do about an error (a VigilError's hint); in text format the error boundary writes it as a `hint:` line of its own. */
  hint?: string;
}

/** Writes one line to stderr synchronously (so it survives an exit right after). */
export function logLine(message: string, fields: LogFields = {}): void {
  if (!quiet) writeStderr(format === "json" ? jsonLine(message, fields) : `vigil: ${scrubText(message)}\n`);
}

/**
 * A line tools wait for on stderr (`vigil serve listening http://HOST:PORT`): in text format it is
 * written as it is, without the `vigil: ` prefix, as it always was; in JSON format it is an
 * ordinary line whose `msg` is that same text, so one search finds it in either format.
 */
export function announce(message: string, fields: LogFields = {}): void {
  if (!quiet) writeStderr(format === "json" ? jsonLine(message, fields) : `${scrubText(message)}\n`);
}

function writeStderr(line: string): void {
  try {
    writeSync(2, line);
  } catch {
    // stderr gone (EPIPE): nothing sensible left to report to.
  }
}

/** One JSON log line; every string in it goes through the scrubber. */
export function jsonLine(message: string, fields: LogFields = {}): string {
  const { level = "info", ...rest } = fields;
  const record: Record<string, string> = { time: new Date().toISOString(), level, msg: scrubText(message) };
  for (const [k, v] of Object.entries(rest)) if (typeof v === "string") record[k] = scrubText(v);
  return `${JSON.stringify(record)}\n`;
}

/**
 * `VIGIL_LOG_LEVEL=debug` adds diagnostic lines (what a session read on open, compactions); the
 * default level (`info`, or unset) leaves them out. Read once, at the first debug line; serve
 * refuses any other value at start (serve/config/tuning.ts), so here it only has to be read.
 */
export const LOG_LEVELS = ["info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The level a `VIGIL_LOG_LEVEL` value names (case and surrounding blanks ignored); null for any other value. */
export function parseLogLevel(raw: string): LogLevel | null {
  const level = raw.trim().toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : null;
}

let debug: boolean | null = null;

export function debugEnabled(): boolean {
  debug ??= parseLogLevel(process.env.VIGIL_LOG_LEVEL ?? "") === "debug";
  return debug;
}

/** A diagnostic line, written only at the debug level (prefixed "debug: "). */
export function logDebug(message: string, fields: LogFields = {}): void {
  if (!debugEnabled()) return;
  if (format === "json") logLine(message, { ...fields, level: "debug" });
  else logLine(`debug: ${message}`, fields);
}

/** A bounded, escaped preview of untrusted bytes for a log line. */
export function preview(bytes: Uint8Array, max = 80): string {
  const head = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, max));
  const escaped = JSON.stringify(head).slice(1, -1);
  return bytes.length > max ? `${escaped}… (${bytes.length} bytes)` : escaped;
}
