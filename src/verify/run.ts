/** `vigil verify`: load within bounds, verify (pure), render; the verdict is the exit status. */
import { statSync } from "node:fs";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { type FlagTable, didYouMean, scanFlags } from "../shared/flags.ts";
import { logLine } from "../shared/log.ts";
import { writeStdout } from "../shared/output.ts";
import { VERDICT_EXIT, VERIFY_USAGE_EXIT } from "./findings.ts";
import { loadCapture } from "./load-capture.ts";
import { renderJson, renderText } from "./render.ts";
import { verifyCapture } from "./verify-capture.ts";

export interface VerifyArgs {
  dir: string;
  json: boolean;
  requireReceipts: boolean;
}

const usage = (message: string) => new VigilError("usage", `verify: ${message}`, { exitCode: VERIFY_USAGE_EXIT, hint: "usage: vigil verify CAPTURE_DIR [--json] [--require-receipts]" });

/**
 * The arguments of `vigil verify`, the one declaration: commands/verify.ts hands it to citty for
 * `--help`, parseVerifyArgs scans against it. Descriptions are the help text.
 */
export const VERIFY_ARGS = {
  dir: { type: "positional", description: "Capture directory written by vigil wrap --capture-dir", valueHint: "CAPTURE_DIR", required: false },
  json: { type: "boolean", description: "Print one JSON document with stable reason codes" },
  "require-receipts": { type: "boolean", description: "Treat missing receipts as unknown" },
} as const satisfies FlagTable;

export function parseVerifyArgs(rawArgs: string[]): VerifyArgs {
  let dir = null as string | null;
  const flags = scanFlags(VERIFY_ARGS, rawArgs, {
    positional: (arg) => {
      if (arg.startsWith("-")) throw usage(`unknown flag ${arg}`);
      if (dir !== null) throw usage("one CAPTURE_DIR only");
      dir = arg;
    },
    // verify has switches only, so every problem but a contradiction is an argument it does not
    // know (`--json=1` too).
    refuse: (problem) =>
      problem.kind === "switch_contradicted"
        ? usage(`--${problem.name} and --no-${problem.name} given together`)
        : usage(`unknown flag ${problem.arg}${didYouMean(problem)}`),
  });
  if (dir === null) throw usage("missing CAPTURE_DIR");
  return { dir, json: flags.json === true, requireReceipts: flags["require-receipts"] === true };
}

export function runVerify(a: VerifyArgs): number {
  let isDir = false;
  try {
    isDir = statSync(a.dir).isDirectory();
  } catch {
    throw usage(`${a.dir} does not exist`);
  }
  if (!isDir) throw usage(`${a.dir} is not a directory`);
  const report = verifyCapture(loadCapture(a.dir), { requireReceipts: a.requireReceipts });
  try {
    writeStdout(a.json ? renderJson(report) : renderText(report));
  } catch (e) {
    // The verdict stands even when its report cannot be delivered; a reader that left (EPIPE) is
    // not an error worth a line, anything else is said once.
    if (errnoCode(e) !== "EPIPE") logLine(`verify: cannot write the report: ${errorMessage(e)}`);
  }
  return VERDICT_EXIT[report.verdict];
}
