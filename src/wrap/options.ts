/**
 * `vigil wrap` flags → WrapOptions (wrap.md §1). Pure: no file system access (see output-plan.ts).
 * WRAP_FLAGS is the one declaration of the flags (help text and strict parse alike).
 * Every refusal is a one-line usage error (exit 2) raised before anything is spawned.
 */
import { basename } from "node:path";
import { CHECKPOINT_EVERY_DEFAULT, CHECKPOINT_SECONDS_DEFAULT } from "../evidence/checkpoints.ts";
import { usageError } from "../shared/errors.ts";
import type { EvidenceFailureMode } from "../policy/governed-call.ts";
import { type FlagTable, type FlagValues, flagRefusal, scanFlags } from "../shared/flags.ts";

export type { EvidenceFailureMode };

export interface WrapOptions {
  policyPath: string | null;
  allowAll: boolean;
  dryRun: boolean;
  serverId: string;
  eventSource: string | null;
  decisionLog: string | null;
  decisionLogNew: boolean;
  decisionLogFsync: boolean;
  receiptsOut: string | null;
  sessionContextOut: string | null;
  sessionStopOut: string | null;
  captureDir: string | null;
  maxMessageBytes: number;
  shutdownGraceMs: number;
  onEvidenceFailure: EvidenceFailureMode;
  /** Ed25519 PKCS#8 PEM key that signs the checkpoints and the capture (read before the server is spawned). */
  signingKey: string | null;
  /** Records across the logs between two signed checkpoints. */
  checkpointEvery: number;
  /** Seconds between two signed checkpoints while records are written. */
  checkpointSeconds: number;
  command: string[];
}

export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 3000;
const MAX_MESSAGE_BYTES_LIMIT = 1024 * 1024 * 1024;
const MAX_GRACE_MS = 600_000;
const MAX_CHECKPOINT_EVERY = 1_000_000_000;
const MAX_CHECKPOINT_SECONDS = 86_400;

/**
 * The flags of `vigil wrap`, the one declaration: commands/wrap.ts hands it to citty for `--help`,
 * parseWrapArgs scans against it. Descriptions are the help text.
 */
export const WRAP_FLAGS = {
  policy: { type: "string", description: "Policy file (YAML or JSON)", valueHint: "FILE" },
  "allow-all": { type: "boolean", description: "Observe only: allow and record every call" },
  "dry-run": { type: "boolean", description: "Evaluate and record would_deny, never block" },
  "server-id": { type: "string", description: "Label of the wrapped server (default: basename of CMD)" },
  "event-source": { type: "string", description: "CloudEvents source URI (scheme://…), required with evidence" },
  "decision-log": { type: "string", description: "Decision log (NDJSON CloudEvents)", valueHint: "FILE" },
  "decision-log-new": { type: "boolean", description: "The decision log must be new (required with --session-stop-out)" },
  "decision-log-fsync": { type: "boolean", description: "fdatasync the decision log after every line" },
  "receipts-out": { type: "string", description: "Request receipts (NDJSON CloudEvents)", valueHint: "FILE" },
  "session-context-out": { type: "string", description: "Session-context record", valueHint: "FILE" },
  "session-stop-out": { type: "string", description: "Session-stop record", valueHint: "FILE" },
  "capture-dir": { type: "string", description: "Write every output under DIR with a manifest", valueHint: "DIR" },
  "max-message-bytes": { type: "string", description: "Per-message cap, both directions (default 33554432)" },
  "shutdown-grace-ms": { type: "string", description: "Grace after closing the server's stdin (default 3000)" },
  "on-evidence-failure": { type: "string", description: "deny (default) or continue" },
  "signing-key": { type: "string", description: "Ed25519 key from vigil keygen (mode 0600) signing checkpoints and the capture; needs --capture-dir", valueHint: "FILE" },
  "checkpoint-every": { type: "string", description: "Signed checkpoint after every N records (default 1000; needs --signing-key)", valueHint: "N" },
  "checkpoint-seconds": { type: "string", description: "Signed checkpoint every S seconds while records are written (default 60; needs --signing-key)", valueHint: "S" },
} as const satisfies FlagTable;

type WrapFlagValues = FlagValues<typeof WRAP_FLAGS>;

const SCHEME_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;

/** Parses the arguments that follow `wrap`. */
export function parseWrapArgs(rawArgs: string[]): WrapOptions {
  const sep = rawArgs.indexOf("--");
  if (sep < 0) throw usageError("wrap: missing '--' before the server command", "usage: vigil wrap [flags] -- CMD [ARGS…]");
  const command = rawArgs.slice(sep + 1);
  if (command.length === 0 || command[0] === "") throw usageError("wrap: no server command after '--'");
  const values = scanFlags(WRAP_FLAGS, rawArgs.slice(0, sep), {
    positional: (arg) => {
      throw usageError(`wrap: unexpected argument ${JSON.stringify(arg)} before '--'`);
    },
    refuse: (problem) => usageError(flagRefusal("wrap", problem)),
  });
  return checkCombinations({
    policyPath: values["policy"] ?? null,
    allowAll: values["allow-all"] === true,
    dryRun: values["dry-run"] === true,
    serverId: values["server-id"] ?? basename(command[0]!),
    eventSource: values["event-source"] ?? null,
    decisionLog: values["decision-log"] ?? null,
    decisionLogNew: values["decision-log-new"] === true,
    decisionLogFsync: values["decision-log-fsync"] === true,
    receiptsOut: values["receipts-out"] ?? null,
    sessionContextOut: values["session-context-out"] ?? null,
    sessionStopOut: values["session-stop-out"] ?? null,
    captureDir: values["capture-dir"] ?? null,
    maxMessageBytes: integerFlag(values, "max-message-bytes", DEFAULT_MAX_MESSAGE_BYTES, 1024, MAX_MESSAGE_BYTES_LIMIT),
    shutdownGraceMs: integerFlag(values, "shutdown-grace-ms", DEFAULT_SHUTDOWN_GRACE_MS, 0, MAX_GRACE_MS),
    onEvidenceFailure: failureMode(values["on-evidence-failure"]),
    ...signingFlags(values),
    command,
  });
}

function signingFlags(values: WrapFlagValues): Pick<WrapOptions, "signingKey" | "checkpointEvery" | "checkpointSeconds"> {
  const signingKey = values["signing-key"] ?? null;
  for (const name of ["checkpoint-every", "checkpoint-seconds"] as const) {
    if (values[name] !== undefined && signingKey === null) throw usageError(`wrap: --${name} needs --signing-key FILE (checkpoints are signed)`);
  }
  const seconds = values["checkpoint-seconds"];
  if (seconds !== undefined && (!/^\d+(\.\d+)?$/.test(seconds) || Number(seconds) <= 0 || Number(seconds) > MAX_CHECKPOINT_SECONDS)) {
    throw usageError(`wrap: --checkpoint-seconds must be a number of seconds above 0 and at most ${MAX_CHECKPOINT_SECONDS}, got ${JSON.stringify(seconds)}`);
  }
  return {
    signingKey,
    checkpointEvery: integerFlag(values, "checkpoint-every", CHECKPOINT_EVERY_DEFAULT, 1, MAX_CHECKPOINT_EVERY),
    checkpointSeconds: seconds === undefined ? CHECKPOINT_SECONDS_DEFAULT : Number(seconds),
  };
}

function checkCombinations(o: WrapOptions): WrapOptions {
  if (o.policyPath !== null && o.allowAll) throw usageError("wrap: --policy and --allow-all exclude each other");
  if (o.policyPath === null && !o.allowAll) {
    throw usageError("wrap: a policy is required: pass --policy FILE, or --allow-all to observe without enforcing");
  }
  if (o.allowAll && o.dryRun) throw usageError("wrap: --dry-run needs a --policy to evaluate");
  const individual = [o.decisionLog, o.receiptsOut, o.sessionContextOut, o.sessionStopOut].some((p) => p !== null);
  if (o.captureDir !== null && (individual || o.decisionLogNew)) {
    throw usageError("wrap: --capture-dir cannot be combined with the individual output flags");
  }
  if (o.decisionLogNew && o.decisionLog === null) throw usageError("wrap: --decision-log-new needs --decision-log FILE");
  if (o.decisionLogFsync && o.decisionLog === null && o.captureDir === null) {
    throw usageError("wrap: --decision-log-fsync needs --decision-log FILE or --capture-dir");
  }
  if (o.sessionStopOut !== null && o.decisionLog !== null && !o.decisionLogNew) {
    throw usageError(
      "wrap: --session-stop-out with --decision-log requires --decision-log-new",
      "accounting must never be confused with a historical append log",
    );
  }
  if (o.signingKey !== null && o.captureDir === null) {
    throw usageError("wrap: --signing-key needs --capture-dir DIR (the signed statement covers a capture's files)");
  }
  if ((individual || o.captureDir !== null) && o.eventSource === null) {
    throw usageError("wrap: --event-source URI is required when any evidence output is requested");
  }
  if (o.eventSource !== null && !SCHEME_URI.test(o.eventSource)) {
    throw usageError(`wrap: --event-source must look like scheme://…, got ${JSON.stringify(o.eventSource)}`);
  }
  if (o.serverId.length === 0 || o.serverId.length > 256 || /[\x00-\x1f]/.test(o.serverId)) {
    throw usageError("wrap: --server-id must be 1–256 printable characters");
  }
  return o;
}

function integerFlag(values: WrapFlagValues, name: "max-message-bytes" | "shutdown-grace-ms" | "checkpoint-every", fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw usageError(`wrap: --${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function failureMode(raw: string | undefined): EvidenceFailureMode {
  if (raw === undefined) return "deny";
  if (raw === "deny" || raw === "continue") return raw;
  throw usageError(`wrap: --on-evidence-failure must be deny or continue, got ${JSON.stringify(raw)}`);
}
