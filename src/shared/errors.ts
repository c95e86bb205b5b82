/**
 * Typed errors with stable string codes, and the exit codes that are public API.
 *
 * Local errors (this file) are never serialized as JSON-RPC errors; wire errors sent to an MCP
 * client carry numeric JSON-RPC codes and live with the proxy.
 */

/** Exit codes shared by every command. Commands with a verdict (verify) add their own, documented there. */
export const EXIT = {
  /** Success. */
  ok: 0,
  /** Bad flags, bad policy/config file, spawn failure: nothing was started, no evidence written. */
  usage: 2,
  /** A requested evidence write failed (the observed child status is printed on stderr). */
  evidence: 3,
  /**
   * `vigil serve` stdio mode: the session failed on an internal error (it was contained: its
   * client got an `error` frame, serve shut down in order; pending events stay on disk).
   */
  sessionFailed: 4,
  /** A bug in vigil: an unexpected exception reached the error boundary. */
  internal: 70,
} as const;

export type ErrorCode =
  | "usage"
  | "policy_invalid"
  | "config_invalid"
  /** A state file vigil refuses to use (damaged, invalid, unreadable): named in the message, exit 2. */
  | "state_invalid"
  | "output_path_invalid"
  | "spawn_failed"
  | "evidence_write_failed"
  | "server_unreachable"
  | "internal";

export class VigilError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: number;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { exitCode?: number; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "VigilError";
    this.code = code;
    this.exitCode = options.exitCode ?? defaultExit(code);
    this.hint = options.hint;
  }
}

function defaultExit(code: ErrorCode): number {
  switch (code) {
    case "evidence_write_failed":
      return EXIT.evidence;
    case "internal":
      return EXIT.internal;
    default:
      return EXIT.usage;
  }
}

export const usageError = (message: string, hint?: string) =>
  new VigilError("usage", message, hint === undefined ? {} : { hint });

export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** errno-style code of a Node/Bun system error, if any (ENOENT, ENOSPC, …). */
export function errnoCode(e: unknown): string | undefined {
  if (typeof e === "object" && e !== null && "code" in e && typeof (e as { code: unknown }).code === "string") {
    return (e as { code: string }).code;
  }
  return undefined;
}
