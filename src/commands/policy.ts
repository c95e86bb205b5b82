import { defineCommand } from "citty";
import { checkPolicy } from "../policy/check.ts";
import { pinServer, renderPinsYaml } from "../pin/pin.ts";
import { usageError } from "../shared/errors.ts";
import { type FlagTable, flagRefusal, scanFlags } from "../shared/flags.ts";
import { writeStdout } from "../shared/output.ts";

const CHECK_USAGE = "usage: vigil policy check FILE";
const PIN_USAGE = "usage: vigil policy pin -- CMD [ARGS…]";

// policy check's one argument table: citty renders --help from it, parseCheckArgs scans against it.
const CHECK_ARGS = { file: { type: "positional", description: "Policy file (YAML or JSON)", valueHint: "FILE", required: true } } as const satisfies FlagTable;

/** `policy check FILE`: one file, no flags. */
function parseCheckArgs(rawArgs: readonly string[]): string {
  const files: string[] = [];
  scanFlags(CHECK_ARGS, rawArgs, {
    positional: (arg) => {
      if (arg === "--" || files.length > 0) throw usageError(`policy check: unexpected argument ${JSON.stringify(arg)} (one FILE only)`);
      files.push(arg);
    },
    refuse: (problem) => usageError(flagRefusal("policy check", problem)),
  });
  if (files.length === 0) throw usageError("policy check: missing FILE", CHECK_USAGE);
  return files[0]!;
}

/** `policy pin -- CMD [ARGS…]`: nothing before `--` (what follows is the server's command line, never scanned). */
function parsePinArgs(rawArgs: readonly string[]): string[] {
  const sep = rawArgs.indexOf("--");
  scanFlags({}, sep < 0 ? rawArgs : rawArgs.slice(0, sep), {
    positional: (arg) => {
      throw usageError(`policy pin: unexpected argument ${JSON.stringify(arg)} before '--'`);
    },
    refuse: (problem) => usageError(flagRefusal("policy pin", problem)),
  });
  const argv = sep < 0 ? [] : rawArgs.slice(sep + 1);
  if (argv.length === 0 || argv[0] === "") throw usageError("policy pin: missing server command", PIN_USAGE);
  return argv;
}

const check = defineCommand({
  meta: { name: "check", description: "Validate a policy file and print its digest" },
  args: CHECK_ARGS,
  run: async ({ rawArgs }) => {
    const summary = await checkPolicy(parseCheckArgs(rawArgs));
    writeStdout(JSON.stringify(summary, null, 2));
    return 0;
  },
});

const pin = defineCommand({
  meta: { name: "pin", description: "Start a stdio MCP server, list its tools and print a pins: block" },
  run: async ({ rawArgs }) => {
    const pins = await pinServer(parsePinArgs(rawArgs), { timeoutMs: 15_000, graceMs: 2_000 });
    writeStdout(renderPinsYaml(pins));
    return 0;
  },
});

export default defineCommand({
  meta: { name: "policy", description: "Check a policy file, or pin a server's tool definitions" },
  subCommands: { check, pin },
});
