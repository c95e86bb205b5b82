/** `vigil verify`: load within bounds, verify (pure), render; the verdict is the exit status. */
import { statSync } from "node:fs";
import { entryExists } from "../shared/durable/bounded-file.ts";
import { join } from "node:path";
import type { TrustedKey } from "../evidence/dsse.ts";
import { CAPTURE_FILES, SESSION_FILES } from "../evidence/format.ts";
import { loadPublicKey, loadTrustedKeys } from "../evidence/keys.ts";
import { VigilError, errnoCode, errorMessage } from "../shared/errors.ts";
import { type FlagTable, didYouMean, flagRefusal, scanFlags } from "../shared/flags.ts";
import { logLine } from "../shared/log.ts";
import { writeStdout } from "../shared/output.ts";
import { VERDICT_EXIT, VERIFY_USAGE_EXIT } from "./findings.ts";
import { loadCapture } from "./load-capture.ts";
import { renderJson, renderText } from "./render.ts";
import { loadSession } from "./session/load-session.ts";
import { renderSessionJson, renderSessionText } from "./session/render-session.ts";
import { verifySession } from "./session/verify-session.ts";
import { verifyCapture } from "./verify-capture.ts";

export interface VerifyArgs {
  dir: string;
  json: boolean;
  requireReceipts: boolean;
  /** `--public-key FILE`, in the order given (repeatable). */
  publicKeys: string[];
  /** `--trusted-keys DIR`: every `*.pub` in it. */
  trustedKeys: string | null;
}

const USAGE_HINT = "usage: vigil verify DIR [--json] [--require-receipts] [--public-key FILE]... [--trusted-keys DIR]";
const usage = (message: string) => new VigilError("usage", `verify: ${message}`, { exitCode: VERIFY_USAGE_EXIT, hint: USAGE_HINT });

/**
 * The arguments of `vigil verify`, the one declaration: commands/verify.ts hands it to citty for
 * `--help`, parseVerifyArgs scans against it. Descriptions are the help text.
 */
export const VERIFY_ARGS = {
  dir: { type: "positional", description: "Capture directory written by vigil wrap --capture-dir, or a serve session directory", valueHint: "DIR", required: false },
  json: { type: "boolean", description: "Print one JSON document with stable reason codes" },
  "require-receipts": { type: "boolean", description: "Treat missing receipts as unknown" },
  "public-key": { type: "string", description: "Trust this Ed25519 public key (SPKI PEM, from vigil keygen) and require a valid signature; repeatable", valueHint: "FILE", repeatable: true },
  "trusted-keys": { type: "string", description: "Trust every *.pub key in this directory and require a valid signature", valueHint: "DIR" },
} as const satisfies FlagTable;

export function parseVerifyArgs(rawArgs: string[]): VerifyArgs {
  let dir = null as string | null;
  const flags = scanFlags(VERIFY_ARGS, rawArgs, {
    positional: (arg) => {
      if (arg.startsWith("-")) throw usage(`unknown flag ${arg}`);
      if (dir !== null) throw usage("one DIR only");
      dir = arg;
    },
    refuse: (problem) => {
      if (problem.kind === "switch_contradicted") return usage(`--${problem.name} and --no-${problem.name} given together`);
      if (problem.kind === "value_missing" || problem.kind === "value_repeated") return new VigilError("usage", flagRefusal("verify", problem), { exitCode: VERIFY_USAGE_EXIT, hint: USAGE_HINT });
      // `--json=1` is an argument verify does not know, like any other.
      return usage(`unknown flag ${problem.arg}${didYouMean(problem)}`);
    },
  });
  if (dir === null) throw usage("missing DIR");
  return {
    dir,
    json: flags.json === true,
    requireReceipts: flags["require-receipts"] === true,
    publicKeys: flags["public-key"] ?? [],
    trustedKeys: flags["trusted-keys"] ?? null,
  };
}

/** What kind of evidence directory DIR is. */
export type EvidenceDirKind = "capture" | "session";

/**
 * A wrap capture has a manifest, a stop record or one of its companions (even one whose session
 * died early: the context or the server's stderr); a serve session directory (sessions/<name>/)
 * has an event ledger or stop statements and none of those. Anything else is read as a capture,
 * which then says what is missing.
 */
export function evidenceDirKind(dir: string): EvidenceDirKind {
  const exists = (name: string) => entryExists(join(dir, name));
  const captureMarks = [CAPTURE_FILES.manifest, CAPTURE_FILES.stop, CAPTURE_FILES.context, CAPTURE_FILES.receipts, CAPTURE_FILES.serverStderr];
  if (captureMarks.some(exists)) return "capture";
  // A session without events yet (the ledger is created by its first record) has its decision log only.
  return exists(SESSION_FILES.events) || exists(SESSION_FILES.stopsDir) || exists(SESSION_FILES.decisions) ? "session" : "capture";
}

/** The keys of --public-key and --trusted-keys, once each; a key that cannot be loaded is a usage error (64). */
export function loadVerifyKeys(a: Pick<VerifyArgs, "publicKeys" | "trustedKeys">): TrustedKey[] {
  const keys = new Map<string, TrustedKey>();
  try {
    for (const file of a.publicKeys) {
      const k = loadPublicKey(file);
      if (!keys.has(k.keyid)) keys.set(k.keyid, k);
    }
    if (a.trustedKeys !== null) for (const k of loadTrustedKeys(a.trustedKeys)) if (!keys.has(k.keyid)) keys.set(k.keyid, k);
  } catch (e) {
    // Well-formed arguments naming a bad key: the usage hint would not help.
    throw new VigilError("usage", `verify: ${errorMessage(e)}`, { exitCode: VERIFY_USAGE_EXIT });
  }
  return [...keys.values()];
}

export function runVerify(a: VerifyArgs): number {
  let isDir = false;
  try {
    isDir = statSync(a.dir).isDirectory();
  } catch {
    throw usage(`${a.dir} does not exist`);
  }
  if (!isDir) throw usage(`${a.dir} is not a directory`);
  const trusted = loadVerifyKeys(a);
  if (evidenceDirKind(a.dir) === "session") {
    if (a.requireReceipts) throw usage("--require-receipts applies to wrap captures; a serve session has no receipts");
    const report = verifySession(loadSession(a.dir), { trusted });
    return deliver(a.json ? renderSessionJson(report) : renderSessionText(report), VERDICT_EXIT[report.verdict]);
  }
  const report = verifyCapture(loadCapture(a.dir), { requireReceipts: a.requireReceipts, trusted });
  return deliver(a.json ? renderJson(report) : renderText(report), VERDICT_EXIT[report.verdict]);
}

/** Prints a report and returns the verdict's exit status. */
export function deliver(text: string, exit: number): number {
  try {
    writeStdout(text);
  } catch (e) {
    // The verdict stands even when its report cannot be delivered; a reader that left (EPIPE) is
    // not an error worth a line, anything else is said once.
    if (errnoCode(e) !== "EPIPE") logLine(`verify: cannot write the report: ${errorMessage(e)}`);
  }
  return exit;
}
