/** The one flag scanner (shared/flags.ts) that wrap and verify parse their flag tables with. */
import { expect, test } from "bun:test";
import { type FlagProblem, type FlagTable, closestName, flagRefusal, scanFlags } from "../../../src/shared/flags.ts";

const TABLE = {
  name: { type: "string", description: "a value flag" },
  quiet: { type: "boolean", description: "a switch" },
  dir: { type: "positional", description: "a positional" },
} as const satisfies FlagTable;

class Refused extends Error {
  constructor(readonly problem: FlagProblem) {
    super(problem.kind);
  }
}

const scan = (args: string[]) => {
  const positionals: string[] = [];
  const values = scanFlags(TABLE, args, { positional: (a) => void positionals.push(a), refuse: (p) => new Refused(p) });
  return { values, positionals };
};
const problem = (args: string[]) => {
  try {
    scan(args);
  } catch (e) {
    return (e as Refused).problem;
  }
  return null;
};

test("values by = or the next argument, switches, positionals in order", () => {
  expect(scan(["a", "--name=x", "b", "--quiet", "--quiet"])).toEqual({ values: { name: "x", quiet: true }, positionals: ["a", "b"] });
  expect(scan(["--name", "--quiet"]).values).toEqual({ name: "--quiet" });
});

test("each problem names the argument as given and the flag", () => {
  expect(problem(["--nope=1"])).toEqual({ kind: "unknown_flag", arg: "--nope=1", name: "nope", flag: "--nope" });
  expect(problem(["--dir", "d"])).toEqual({ kind: "unknown_flag", arg: "--dir", name: "dir", flag: "--dir" });
  expect(problem(["--quiet=1"])).toEqual({ kind: "switch_given_value", arg: "--quiet=1", name: "quiet" });
  expect(problem(["--name"])).toEqual({ kind: "value_missing", arg: "--name", name: "name" });
  expect(problem(["--name="])).toEqual({ kind: "value_missing", arg: "--name=", name: "name" });
  expect(problem(["--name", "a", "--name=b"])).toEqual({ kind: "value_repeated", arg: "--name=b", name: "name" });
});

test("the first problem wins, in argument order", () => {
  expect(problem(["--quiet=1", "--nope"])?.kind).toBe("switch_given_value");
});

test("--no-NAME turns a switch off; a switch given both ways is refused; value flags have no negation", () => {
  expect(scan(["--no-quiet"]).values).toEqual({ quiet: false });
  expect(scan(["--quiet", "--quiet"]).values).toEqual({ quiet: true });
  expect(problem(["--quiet", "--no-quiet"])).toEqual({ kind: "switch_contradicted", arg: "--no-quiet", name: "quiet" });
  expect(problem(["--no-quiet=1"])?.kind).toBe("switch_given_value");
  expect(problem(["--no-name", "x"])).toEqual({ kind: "unknown_flag", arg: "--no-name", name: "no-name", flag: "--no-name" });
});

test("single-dash arguments are unknown flags; a lone - and a bare -- are positionals", () => {
  expect(problem(["-q"])).toEqual({ kind: "unknown_flag", arg: "-q", name: "q", flag: "-q", suggestion: "quiet" });
  expect(scan(["-", "--"]).positionals).toEqual(["-", "--"]);
  // a value is taken as given, dashes or not
  expect(scan(["--name", "-x"]).values).toEqual({ name: "-x" });
});

test("an unknown flag carries the table's flag it is closest to, if any", () => {
  expect(problem(["--quite"])).toMatchObject({ suggestion: "quiet" });
  expect(problem(["--nmae=1"])).toMatchObject({ suggestion: "name" });
  expect(problem(["--entirely-else"])).not.toHaveProperty("suggestion");
  expect(problem(["--d"])).not.toHaveProperty("suggestion"); // positionals are not flags
});

test("closestName: near by edit distance, else a unique prefix; bounded", () => {
  const names = ["listen", "session", "session-idle-timeout", "config"];
  expect(closestName("lisen", names)).toBe("listen");
  expect(closestName("confg", names)).toBe("config");
  expect(closestName("sesion", names)).toBe("session");
  expect(closestName("l", names)).toBe("listen");
  expect(closestName("sess", names)).toBeUndefined(); // two names extend it
  expect(closestName("xyz", names)).toBeUndefined();
  expect(closestName("l".repeat(100_000), names)).toBeUndefined();
});

test("flagRefusal words one line per problem, prefixed with the command", () => {
  const line = (args: string[]) => flagRefusal("serve", problem(args)!);
  expect(line(["--lisen"])).toBe("serve: unknown flag --lisen");
  expect(line(["--nam", "x"])).toBe("serve: unknown flag --nam (did you mean --name?)");
  expect(line(["--quiet=yes"])).toBe("serve: --quiet takes no value");
  expect(line(["--no-quiet", "--quiet"])).toBe("serve: --quiet and --no-quiet given together");
  expect(line(["--name"])).toBe("serve: --name needs a value");
  expect(line(["--name", "a", "--name", "b"])).toBe("serve: --name given twice");
});

test("a repeatable value flag keeps every value in order; repeats of other value flags are still refused", () => {
  const table = {
    key: { type: "string", description: "repeatable", repeatable: true },
    name: { type: "string", description: "once" },
  } as const satisfies FlagTable;
  const values = scanFlags(table, ["--key", "a", "--name=n", "--key=b", "--key", "c"], { positional: () => {}, refuse: (p) => new Refused(p) });
  expect(values).toEqual({ key: ["a", "b", "c"], name: "n" });
  const keys: string[] | undefined = values.key;
  expect(keys).toHaveLength(3);
  expect(() => scanFlags(table, ["--key"], { positional: () => {}, refuse: (p) => new Refused(p) })).toThrow("value_missing");
});
