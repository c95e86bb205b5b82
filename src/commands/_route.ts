/**
 * From argv to the command that runs (issue 11 item 12). citty renders the help; the routing is
 * ours, because citty's is lenient in ways that are public behaviour here:
 *
 * - citty treats `--help` anywhere in argv as a request for help, `--` or not: `vigil wrap
 *   --allow-all -- server --help` would print vigil's help instead of starting `server --help`.
 *   Here only the arguments before the first `--` are looked at; what follows is a command line.
 * - citty ignores unknown flags before a subcommand (`vigil --bogus`) and ends with exit 1; here
 *   an unknown flag or subcommand is refused with one line (exit 2).
 * - A command group without its subcommand (`vigil`, `vigil policy`) prints its usage, exit 2.
 * - `--version` / `-v` alone after `vigil` prints the version; help is `--help` / `-h` at any
 *   level, shown for the deepest command named.
 *
 * Leaf commands then get their arguments untouched and parse them strictly themselves (shared/
 * flags.ts); citty's own parse of them is never used.
 */
import type { CommandDef } from "citty";
import { usageError } from "../shared/errors.ts";
import { closestName } from "../shared/flags.ts";

export type Route =
  /** `--help`: the usage of `command` (named under `parent`). */
  | { kind: "help"; command: CommandDef; parent: CommandDef | undefined }
  /** A group named without a subcommand: its usage, then exit 2. */
  | { kind: "incomplete"; command: CommandDef; parent: CommandDef | undefined }
  | { kind: "version" }
  | { kind: "run"; command: CommandDef; name: string; rawArgs: string[] };

const HELP_FLAGS: readonly string[] = ["--help", "-h"];
const VERSION_FLAGS: readonly string[] = ["--version", "-v"];

export async function routeArgv(root: CommandDef, argv: readonly string[]): Promise<Route> {
  if (argv.length === 1 && VERSION_FLAGS.includes(argv[0]!)) return { kind: "version" };
  const end = argv.indexOf("--");
  const head = end < 0 ? argv : argv.slice(0, end);
  const wantsHelp = head.some((a) => HELP_FLAGS.includes(a));
  const path: string[] = [];
  let command = root;
  let parent: CommandDef | undefined;
  for (;;) {
    const subCommands = await resolve(command.subCommands);
    if (subCommands === undefined) break;
    const arg = head[path.length];
    if (wantsHelp && (arg === undefined || arg.startsWith("-"))) return { kind: "help", command, parent };
    if (arg === undefined) return { kind: "incomplete", command, parent };
    const names = Object.keys(subCommands);
    if (arg.startsWith("-")) throw unknownFlag(path, arg, path.length === 0);
    if (!Object.hasOwn(subCommands, arg)) throw unknownCommand(path, arg, names);
    parent = command;
    command = await resolve(subCommands[arg]!);
    path.push(arg);
  }
  if (wantsHelp) return { kind: "help", command, parent };
  return { kind: "run", command, name: path.join(" "), rawArgs: argv.slice(path.length) };
}

type Lazy<T> = T | Promise<T> | (() => T | Promise<T>);

async function resolve<T>(value: Lazy<T>): Promise<T> {
  return typeof value === "function" ? (value as () => T | Promise<T>)() : value;
}

/** `vigil: policy: …` for a group, `vigil: …` at the top (logLine adds `vigil: `). */
function prefix(path: readonly string[]): string {
  return path.length === 0 ? "" : `${path.join(" ")}: `;
}

function helpOf(path: readonly string[]): string {
  return ["vigil", ...path, "--help"].join(" ");
}

function unknownFlag(path: readonly string[], arg: string, top: boolean) {
  // A flag before the subcommand belongs to no one: vigil's groups take none but help (and version).
  const flag = arg.split("=")[0]!;
  const near = flag.startsWith("--") ? closestName(flag.slice(2), top ? ["help", "version"] : ["help"]) : undefined;
  if (near !== undefined && flag === `--${near}`) {
    return usageError(`${prefix(path)}${flag} ${arg.includes("=") ? "takes no value" : "is given alone (vigil --version)"}`);
  }
  return usageError(`${prefix(path)}unknown flag ${flag} (${near === undefined ? `see ${helpOf(path)}` : `did you mean --${near}?`})`);
}

function unknownCommand(path: readonly string[], arg: string, names: readonly string[]) {
  const near = closestName(arg, names);
  const shown = arg.length <= 80 ? JSON.stringify(arg) : `(${arg.length} characters)`;
  const guess = near === undefined ? "" : `did you mean ${near}? `;
  return usageError(`${prefix(path)}unknown command ${shown} (${guess}commands: ${names.join(", ")}; see ${helpOf(path)})`);
}
