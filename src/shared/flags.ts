/**
 * One flag table per command (issue 10): the same data renders `--help` and drives the command's
 * strict parser, so a flag cannot be declared in one place and forgotten in the other.
 *
 * - A table's entries are a subset of citty's argument definitions (same field names), so
 *   `commands/X.ts` hands the table to citty as `args` unchanged; shared/ itself does not import
 *   citty.
 * - citty parses leniently (unknown flags pass, a missing value becomes a boolean), so the
 *   commands do not take citty's parse: they give `rawArgs` to their feature's strict parser,
 *   which scans them here against the same table.
 * - The scan decides; it does not word the refusal. Each command keeps its own usage messages
 *   and exit code (they are public API), by turning a FlagProblem into its own error.
 */

/** A flag that takes a value: `--name VALUE` or `--name=VALUE`. */
export interface ValueFlagSpec {
  readonly type: "string";
  readonly description: string;
  readonly valueHint?: string;
}

/** A flag that takes none: `--name`. */
export interface SwitchFlagSpec {
  readonly type: "boolean";
  readonly description: string;
}

/** A positional argument: shown in `--help`; the command's parser collects it. */
export interface PositionalSpec {
  readonly type: "positional";
  readonly description: string;
  readonly valueHint?: string;
  readonly required?: boolean;
}

export type FlagSpec = ValueFlagSpec | SwitchFlagSpec | PositionalSpec;
export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** What a scan found: a value flag's string, or `true` for a switch that was given. */
export type FlagValues<T extends FlagTable> = {
  [K in keyof T as T[K] extends PositionalSpec ? never : K]?: T[K] extends SwitchFlagSpec ? true : string;
};

/** Why a scan refused an argument; `arg` is the argument as given, `name` the flag without `--`. */
export type FlagProblem =
  | { kind: "unknown_flag"; arg: string; name: string }
  | { kind: "switch_given_value"; arg: string; name: string }
  | { kind: "value_missing"; arg: string; name: string }
  | { kind: "value_repeated"; arg: string; name: string };

export interface FlagScanHooks {
  /** Called in order for each argument that does not start with `--`; may throw to refuse it. */
  positional(arg: string): void;
  /** The command's own usage error for a problem; thrown at the first one. */
  refuse(problem: FlagProblem): Error;
}

/**
 * Scans `args` (everything before a `--` separator, which the caller strips) against `table`.
 * Arguments are judged in order and the first problem is thrown, so a command's refusals do not
 * depend on what follows. A value is the rest after `=` or the next argument (whatever it is);
 * an empty value is missing; a value flag given twice is refused; a repeated switch is not.
 */
export function scanFlags<T extends FlagTable>(table: T, args: readonly string[], hooks: FlagScanHooks): FlagValues<T> {
  const found = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) {
      hooks.positional(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = Object.hasOwn(table, name) ? table[name] : undefined;
    if (spec?.type === "boolean") {
      if (eq >= 0) throw hooks.refuse({ kind: "switch_given_value", arg, name });
      found.set(name, true);
      continue;
    }
    if (spec?.type !== "string") throw hooks.refuse({ kind: "unknown_flag", arg, name });
    const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") throw hooks.refuse({ kind: "value_missing", arg, name });
    if (found.has(name)) throw hooks.refuse({ kind: "value_repeated", arg, name });
    found.set(name, value);
  }
  return Object.fromEntries(found) as FlagValues<T>;
}
