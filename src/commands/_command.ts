/**
 * The one error boundary, and the dispatch it guards. `vigil` runs one `guarded(dispatch)`: the
 * argv is routed (_route.ts), then the chosen command runs and resolves with its exit status.
 * A VigilError — a refused flag included — prints its message (`vigil: <line>` for each line, plus
 * `hint:` when there is one) and sets its exit code; anything else is a bug and exits 70 with its
 * stack. citty never prints errors itself (under Bun it would dump a source frame and always exit 1).
 */
import { type CommandDef, type ParsedArgs, showUsage } from "citty";
import { VERSION } from "../shared/build-info.ts";
import { EXIT, VigilError } from "../shared/errors.ts";
import { logFormat, logLine } from "../shared/log.ts";
import { writeStdout } from "../shared/output.ts";
import { routeArgv } from "./_route.ts";

export function reportError(e: unknown): number {
  if (e instanceof VigilError) {
    // JSON format (serve --log-format json): one line, its code the error's, the problems and the
    // hint inside it, so a log shipper sees one record for one refusal.
    if (logFormat() === "json") logLine(e.message, { level: "error", code: e.code, ...(e.hint ? { hint: e.hint } : {}) });
    else {
      // One problem a line (config_invalid lists several), each a "vigil: " line of its own.
      for (const line of e.message.split("\n")) logLine(line);
      if (e.hint) logLine(`hint: ${e.hint}`);
    }
    return e.exitCode;
  }
  logLine(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, { level: "error", code: "internal" });
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

/**
 * Routes `argv` from `root` and runs what it names; resolves with the exit status. A command's
 * `run` gets its arguments as given (`rawArgs`) and resolves with its exit status; citty's lenient
 * parse (`args`) is left empty so no command can come to rely on it.
 */
export async function dispatch(root: CommandDef, argv: readonly string[]): Promise<number> {
  const route = await routeArgv(root, argv);
  switch (route.kind) {
    case "version":
      writeStdout(VERSION);
      return EXIT.ok;
    case "help":
      await showUsage(route.command, route.parent);
      return EXIT.ok;
    case "incomplete":
      await showUsage(route.command, route.parent);
      return EXIT.usage;
    case "run": {
      const status: unknown = await route.command.run?.({ rawArgs: route.rawArgs, args: { _: [] } as unknown as ParsedArgs, cmd: route.command });
      if (typeof status !== "number") throw new Error(`command ${route.name} resolved without an exit status`);
      return status;
    }
  }
}
