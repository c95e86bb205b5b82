import { defineCommand } from "citty";
import { WRAP_FLAGS, parseWrapArgs } from "../wrap/options.ts";
import { runWrap } from "../wrap/run.ts";

// One flag table (WRAP_FLAGS): citty renders --help from it; parsing is strict and done by
// parseWrapArgs against the same table (unknown flags, missing values and conflicting
// combinations are refused before anything is spawned; what follows `--` is never scanned).
export default defineCommand({
  meta: { name: "wrap", description: "Run a stdio MCP server behind a policy proxy that records session evidence" },
  args: WRAP_FLAGS,
  run: ({ rawArgs }) => runWrap(parseWrapArgs(rawArgs)),
});
