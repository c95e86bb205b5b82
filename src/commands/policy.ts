import { defineCommand } from "citty";
import { checkPolicy } from "../policy/check.ts";
import { pinServer, renderPinsYaml } from "../pin/pin.ts";
import { usageError } from "../shared/errors.ts";
import { writeStdout } from "../shared/output.ts";
import { guarded } from "./_command.ts";

const check = defineCommand({
  meta: { name: "check", description: "Validate a policy file and print its digest" },
  args: { file: { type: "positional", description: "Policy file (YAML or JSON)", required: true } },
  run: ({ args }) =>
    guarded(async () => {
      const summary = await checkPolicy(String(args.file));
      writeStdout(JSON.stringify(summary, null, 2));
      return 0;
    }),
});

const pin = defineCommand({
  meta: { name: "pin", description: "Start a stdio MCP server, list its tools and print a pins: block" },
  run: ({ rawArgs }) =>
    guarded(async () => {
      const sep = rawArgs.indexOf("--");
      const argv = sep < 0 ? [] : rawArgs.slice(sep + 1);
      if (argv.length === 0) throw usageError("policy pin: missing server command", "usage: vigil policy pin -- CMD [ARGS…]");
      const pins = await pinServer(argv, { timeoutMs: 15_000, graceMs: 2_000 });
      writeStdout(renderPinsYaml(pins));
      return 0;
    }),
});

export default defineCommand({
  meta: { name: "policy", description: "Check a policy file, or pin a server's tool definitions" },
  subCommands: { check, pin },
});
