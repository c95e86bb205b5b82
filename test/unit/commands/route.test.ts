/** The argv router (src/commands/_route.ts): which command runs, with which arguments; help; refusals. */
import { expect, test } from "bun:test";
import { defineCommand } from "citty";
import { routeArgv } from "../../../src/commands/_route.ts";
import { VigilError } from "../../../src/shared/errors.ts";

const leaf = defineCommand({ meta: { name: "leaf" }, run: async () => 0 });
const check = defineCommand({ meta: { name: "check" }, run: async () => 0 });
const group = defineCommand({ meta: { name: "group" }, subCommands: { check } });
const root = defineCommand({ meta: { name: "vigil", version: "1.0.0" }, subCommands: { leaf: () => Promise.resolve(leaf), group } });

const refusal = async (argv: string[]) => {
  try {
    await routeArgv(root, argv);
  } catch (e) {
    expect(e).toBeInstanceOf(VigilError);
    return [(e as VigilError).exitCode, (e as VigilError).message];
  }
  throw new Error("expected a refusal");
};

test("a leaf gets everything after its name, untouched, `--` and its tail included", async () => {
  expect(await routeArgv(root, ["leaf", "--x", "a", "--", "cmd", "--help"])).toEqual({ kind: "run", command: leaf, name: "leaf", rawArgs: ["--x", "a", "--", "cmd", "--help"] });
  expect(await routeArgv(root, ["group", "check", "f"])).toMatchObject({ kind: "run", command: check, name: "group check", rawArgs: ["f"] });
});

test("help before `--` at any level shows the deepest command named; --version only alone", async () => {
  expect(await routeArgv(root, ["--help"])).toEqual({ kind: "help", command: root, parent: undefined });
  expect(await routeArgv(root, ["group", "-h"])).toEqual({ kind: "help", command: group, parent: root });
  expect(await routeArgv(root, ["group", "check", "f", "--help"])).toEqual({ kind: "help", command: check, parent: group });
  expect(await routeArgv(root, ["--version"])).toEqual({ kind: "version" });
  expect(await routeArgv(root, ["group"])).toEqual({ kind: "incomplete", command: group, parent: root });
});

test("unknown flags and commands before the leaf are refused with exit 2, with a guess when one is close", async () => {
  expect(await refusal(["--bogus"])).toEqual([2, "unknown flag --bogus (see vigil --help)"]);
  expect(await refusal(["--verison"])).toEqual([2, "unknown flag --verison (did you mean --version?)"]);
  expect(await refusal(["--version", "x"])).toEqual([2, "--version is given alone (vigil --version)"]);
  expect(await refusal(["lef"])).toEqual([2, 'unknown command "lef" (did you mean leaf? commands: leaf, group; see vigil --help)']);
  expect(await refusal(["group", "--x", "check"])).toEqual([2, "group: unknown flag --x (see vigil group --help)"]);
  expect(await refusal(["group", "nope"])).toEqual([2, 'group: unknown command "nope" (commands: check; see vigil group --help)']);
});
