import { defineCommand } from "citty";
import { SERVE_FLAGS, parseServeArgs } from "../serve/flags.ts";
import { logFormatFromEnv, useLogFormat } from "../serve/log-format.ts";
import { runServe } from "../serve/main.ts";

// One flag table (SERVE_FLAGS): citty renders --help from it; parseServeArgs scans the argv
// strictly against it and runServe validates the values (usage errors exit 2 before anything
// starts).
export default defineCommand({
  meta: {
    name: "serve",
    description: "Run model sessions over MCP tools: NDJSON on stdio, or an HTTP + SSE daemon with --listen",
  },
  args: SERVE_FLAGS,
  run: ({ rawArgs }) => {
    // VIGIL_LOG_FORMAT before the scan, so a refused flag is a line in that format too (log-format.ts).
    useLogFormat(logFormatFromEnv(process.env));
    return runServe(parseServeArgs(rawArgs));
  },
});
