import { defineCommand } from "citty";
import { WRAP_FLAGS, parseWrapArgs } from "../wrap/options.ts";
import { runWrap } from "../wrap/run.ts";
import { guarded } from "./_command.ts";

// One flag table (WRAP_FLAGS): citty renders --help from it; parsing is strict and done by
// parseWrapArgs against the same table (unknown flags, missing values and conflicting
// combinations are refused before anything is spawned).
export default defineCommand({
  meta: { name: "wrap", description: "Run a stdio MCP server behind a policy proxy that records session evidence" },
  args: WRAP_FLAGS,
  run: ({ rawArgs }) => guarded(() => runWrap(parseWrapArgs(rawArgs))),
});
