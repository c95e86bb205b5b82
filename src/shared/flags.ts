/**
 * One flag table per command (issue 10): the same data renders `--help` and drives the command's
 * strict parser, so a flag cannot be declared in one place and forgotten in the other.
 *
 * - A table's entries are a subset of citty's argument definitions (same field names), so
 *   `commands/X.ts` hands the table to citty as `args` unchanged; shared/ itself does not import
 *   citty.
 * - citty parses leniently (unknown flags pass, a missing value becomes a boolean), so no command
 *   takes citty's parse: each gives its arguments to its feature's strict parser, which scans them
 *   here against the same table (issue 11 item 12: every subcommand refuses what it does not know).
 * - The scan decides; `flagRefusal` words the one-line refusal every command uses
 *   (`<command>: unknown flag --lisen (did you mean --listen?)`), and each command wraps it in its
 *   own usage error with its own exit code (public API: 2, but 64 for verify).
 *
 * The rules, the same for every command:
 * - `--name VALUE` and `--name=VALUE` for a value flag; an empty value is missing; a value flag
 *   given twice is ambiguous and refused, unless its spec says `repeatable` (then every value is
 *   kept, in order: `verify --public-key A --public-key B`).
 * - `--name` for a switch; `--no-name` says "off" (citty's negation, kept for switches only:
 *   `--no-listen` is an unknown flag); a switch given both ways is refused; `--name=x` is refused.
 * - Anything else that starts with `-` (but a lone `-`) is an unknown flag; `-x` is not a short
 *   form of anything. A bare `--` is handed to `positional` (the commands with a command tail strip
 *   it and what follows before scanning, so the tail is never scanned).
 */

/** A flag that takes a value: `--name VALUE` or `--name=VALUE`. */
export interface ValueFlagSpec {
  readonly type: "string";
  readonly description: string;
  readonly valueHint?: string;
  /** Given more than once, each value is kept (in order) instead of the repeat being refused. */
  readonly repeatable?: boolean;
}

/** A flag that takes none: `--name` (or `--no-name`). */
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

/** What a scan found: a value flag's string, or a switch's state (`false` only from `--no-name`). */
export type FlagValues<T extends FlagTable> = {
  [K in keyof T as T[K] extends PositionalSpec ? never : K]?: T[K] extends SwitchFlagSpec ? boolean : T[K] extends { repeatable: true } ? string[] : string;
};

/**
 * Why a scan refused an argument; `arg` is the argument as given, `name` the flag without its
 * dashes. An unknown flag also carries `flag` (as typed, without `=value`) and, when one is close,
 * the table's flag it probably meant.
 */
export type FlagProblem =
  | { kind: "unknown_flag"; arg: string; name: string; flag: string; suggestion?: string }
  | { kind: "switch_given_value"; arg: string; name: string }
  | { kind: "switch_contradicted"; arg: string; name: string }
  | { kind: "value_missing"; arg: string; name: string }
  | { kind: "value_repeated"; arg: string; name: string };

export interface FlagScanHooks {
  /** Called in order for each argument that is not a flag (a bare `--` too); may throw to refuse it. */
  positional(arg: string): void;
  /** The command's own usage error for a problem; thrown at the first one. */
  refuse(problem: FlagProblem): Error;
}

/**
 * Scans `args` against `table` (rules above). Arguments are judged in order and the first problem
 * is thrown, so a command's refusals do not depend on what follows. A value is the rest after `=`
 * or the next argument (whatever it is).
 */
export function scanFlags<T extends FlagTable>(table: T, args: readonly string[], hooks: FlagScanHooks): FlagValues<T> {
  const found = new Map<string, string | boolean | string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-" || arg === "--" || !arg.startsWith("-")) {
      hooks.positional(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const name = flag.replace(/^--?/, "");
    const spec = flag.startsWith("--") ? specOf(table, name) : undefined;
    const negated = spec === undefined && flag.startsWith("--no-") ? specOf(table, name.slice(3)) : undefined;
    if (spec?.type === "boolean" || negated?.type === "boolean") {
      const key = spec === undefined ? name.slice(3) : name;
      if (eq >= 0) throw hooks.refuse({ kind: "switch_given_value", arg, name });
      const on = spec !== undefined;
      if (found.has(key) && found.get(key) !== on) throw hooks.refuse({ kind: "switch_contradicted", arg, name: key });
      found.set(key, on);
      continue;
    }
    if (spec?.type !== "string") throw hooks.refuse(unknownFlag(table, arg, flag, name));
    const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") throw hooks.refuse({ kind: "value_missing", arg, name });
    if (spec.repeatable === true) {
      const values = found.get(name);
      if (Array.isArray(values)) values.push(value);
      else found.set(name, [value]);
      continue;
    }
    if (found.has(name)) throw hooks.refuse({ kind: "value_repeated", arg, name });
    found.set(name, value);
  }
  return Object.fromEntries(found) as FlagValues<T>;
}

/** The refusal line for a problem, prefixed with the command (`wrap`, `serve`, `policy check`). */
export function flagRefusal(command: string, problem: FlagProblem): string {
  switch (problem.kind) {
    case "unknown_flag":
      return `${command}: unknown flag ${problem.flag}${didYouMean(problem)}`;
    case "switch_given_value":
      return `${command}: --${problem.name} takes no value`;
    case "switch_contradicted":
      return `${command}: --${problem.name} and --no-${problem.name} given together`;
    case "value_missing":
      return `${command}: --${problem.name} needs a value`;
    case "value_repeated":
      return `${command}: --${problem.name} given twice`;
  }
}

/** ` (did you mean --x?)` for an unknown flag with a close match, else "": the tail of a refusal line. */
export function didYouMean(problem: FlagProblem): string {
  return problem.kind === "unknown_flag" && problem.suggestion !== undefined ? ` (did you mean --${problem.suggestion}?)` : "";
}

/**
 * The name among `names` that `typed` most likely misspells: the nearest by edit distance (at most
 * 2, and less than half the name), or the only one it is a prefix of. Bounded: long input is not
 * compared at all.
 */
export function closestName(typed: string, names: readonly string[]): string | undefined {
  if (typed.length === 0 || typed.length > MAX_COMPARED) return undefined;
  let best: string | undefined;
  let bestDistance = Math.min(2, Math.ceil(typed.length / 2) - 1);
  for (const name of names) {
    const d = editDistance(typed, name);
    if (d <= bestDistance && (best === undefined || d < bestDistance)) {
      best = name;
      bestDistance = d;
    }
  }
  if (best !== undefined) return best;
  const extending = names.filter((n) => n.startsWith(typed));
  return extending.length === 1 ? extending[0] : undefined;
}

const MAX_COMPARED = 64;

function specOf(table: FlagTable, name: string): FlagSpec | undefined {
  const spec = Object.hasOwn(table, name) ? table[name] : undefined;
  return spec?.type === "positional" ? undefined : spec;
}

function unknownFlag(table: FlagTable, arg: string, flag: string, name: string): FlagProblem {
  const flags = Object.keys(table).filter((n) => specOf(table, n) !== undefined);
  const suggestion = closestName(name, flags);
  return suggestion === undefined ? { kind: "unknown_flag", arg, name, flag } : { kind: "unknown_flag", arg, name, flag, suggestion };
}

/** Levenshtein distance with adjacent transpositions (optimal string alignment). */
function editDistance(a: string, b: string): number {
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2]! + 1);
      row.push(d);
    }
    prev2 = prev;
    prev = row;
  }
  return prev[b.length]!;
}
