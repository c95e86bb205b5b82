import { defineCommand } from "citty";
import { VERIFY_ARGS, parseVerifyArgs, runVerify } from "../verify/run.ts";

// One argument table (VERIFY_ARGS): citty renders --help from it; parseVerifyArgs parses strictly
// against the same table.
export default defineCommand({
  meta: { name: "verify", description: "Check a wrap capture or a serve session directory offline: closed (0), incomplete (1) or unknown (2)" },
  args: VERIFY_ARGS,
  run: async ({ rawArgs }) => runVerify(parseVerifyArgs(rawArgs)),
});
