import { defineCommand } from "citty";
import { parseVerifyArgs, runVerify } from "../verify/run.ts";
import { guarded } from "./_command.ts";

export default defineCommand({
  meta: { name: "verify", description: "Check a wrap capture offline: closed (0), incomplete (1) or unknown (2)" },
  args: {
    dir: { type: "positional", description: "Capture directory written by vigil wrap --capture-dir", valueHint: "CAPTURE_DIR", required: false },
    json: { type: "boolean", description: "Print one JSON document with stable reason codes" },
    "require-receipts": { type: "boolean", description: "Treat missing receipts as unknown" },
  },
  run: ({ rawArgs }) => guarded(async () => runVerify(parseVerifyArgs(rawArgs))),
});
