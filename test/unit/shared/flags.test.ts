/** The one flag scanner (shared/flags.ts) that wrap and verify parse their flag tables with. */
import { expect, test } from "bun:test";
import { type FlagProblem, type FlagTable, scanFlags } from "../../../src/shared/flags.ts";

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
  expect(problem(["--nope=1"])).toEqual({ kind: "unknown_flag", arg: "--nope=1", name: "nope" });
  expect(problem(["--dir", "d"])).toEqual({ kind: "unknown_flag", arg: "--dir", name: "dir" });
  expect(problem(["--quiet=1"])).toEqual({ kind: "switch_given_value", arg: "--quiet=1", name: "quiet" });
  expect(problem(["--name"])).toEqual({ kind: "value_missing", arg: "--name", name: "name" });
  expect(problem(["--name="])).toEqual({ kind: "value_missing", arg: "--name=", name: "name" });
  expect(problem(["--name", "a", "--name=b"])).toEqual({ kind: "value_repeated", arg: "--name=b", name: "name" });
});

test("the first problem wins, in argument order", () => {
  expect(problem(["--quiet=1", "--nope"])?.kind).toBe("switch_given_value");
});
