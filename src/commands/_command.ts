/**
 * The one error boundary. Every command's run goes through `guarded`: a VigilError prints one line
 * (`vigil: <message>`, plus `hint:` when there is one) and sets its exit code; anything else is a
 * bug and exits 70 with its stack. citty never prints errors itself (under Bun it would dump a
 * source frame and always exit 1).
 */
import { EXIT, VigilError } from "../shared/errors.ts";
import { logLine } from "../shared/log.ts";

export function reportError(e: unknown): number {
  if (e instanceof VigilError) {
    logLine(e.message);
    if (e.hint) logLine(`hint: ${e.hint}`);
    return e.exitCode;
  }
  logLine(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return EXIT.internal;
}

/** Runs a command body and exits the process with its status (or the error's). */
export async function guarded(body: () => Promise<number>): Promise<never> {
  let code: number;
  try {
    code = await body();
  } catch (e) {
    code = reportError(e);
  }
  process.exit(code);
}
