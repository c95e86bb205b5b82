/** `vigil verify`: load within bounds, verify (pure), render; the verdict is the exit status. */
import { statSync } from "node:fs";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
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

export function parseVerifyArgs(rawArgs: string[]): VerifyArgs {
  let dir: string | null = null;
  let json = false;
  let requireReceipts = false;
  for (const arg of rawArgs) {
    if (arg === "--json") json = true;
    else if (arg === "--require-receipts") requireReceipts = true;
    else if (arg.startsWith("-")) throw usage(`unknown flag ${arg}`);
    else if (dir !== null) throw usage("one CAPTURE_DIR only");
    else dir = arg;
  }
  if (dir === null) throw usage("missing CAPTURE_DIR");
  return { dir, json, requireReceipts };
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
