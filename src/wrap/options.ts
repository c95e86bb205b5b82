/**
 * `vigil wrap` flags → WrapOptions (wrap.md §1). Pure: no file system access (see output-plan.ts).
 * Every refusal is a one-line usage error (exit 2) raised before anything is spawned.
 */
import { basename } from "node:path";
import { usageError } from "../shared/errors.ts";

export type EvidenceFailureMode = "deny" | "continue";

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
  command: string[];
}

export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
export const DEFAULT_SHUTDOWN_GRACE_MS = 3000;
const MAX_MESSAGE_BYTES_LIMIT = 1024 * 1024 * 1024;
const MAX_GRACE_MS = 600_000;

const VALUE_FLAGS = [
  "policy",
  "server-id",
  "event-source",
  "decision-log",
  "receipts-out",
  "session-context-out",
  "session-stop-out",
  "capture-dir",
  "max-message-bytes",
  "shutdown-grace-ms",
  "on-evidence-failure",
] as const;
const BOOLEAN_FLAGS = ["allow-all", "dry-run", "decision-log-new", "decision-log-fsync"] as const;

type ValueFlag = (typeof VALUE_FLAGS)[number];
type BooleanFlag = (typeof BOOLEAN_FLAGS)[number];

const SCHEME_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;

/** Parses the arguments that follow `wrap`. */
export function parseWrapArgs(rawArgs: string[]): WrapOptions {
  const sep = rawArgs.indexOf("--");
  if (sep < 0) throw usageError("wrap: missing '--' before the server command", "usage: vigil wrap [flags] -- CMD [ARGS…]");
  const command = rawArgs.slice(sep + 1);
  if (command.length === 0 || command[0] === "") throw usageError("wrap: no server command after '--'");
  const values = new Map<ValueFlag, string>();
  const flags = new Set<BooleanFlag>();
  const flagArgs = rawArgs.slice(0, sep);
  for (let i = 0; i < flagArgs.length; i++) {
    const arg = flagArgs[i]!;
    if (!arg.startsWith("--")) throw usageError(`wrap: unexpected argument ${JSON.stringify(arg)} before '--'`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if ((BOOLEAN_FLAGS as readonly string[]).includes(name)) {
      if (eq >= 0) throw usageError(`wrap: --${name} takes no value`);
      flags.add(name as BooleanFlag);
      continue;
    }
    if (!(VALUE_FLAGS as readonly string[]).includes(name)) throw usageError(`wrap: unknown flag --${name}`);
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else value = flagArgs[++i];
    if (value === undefined || value === "") throw usageError(`wrap: --${name} needs a value`);
    if (values.has(name as ValueFlag)) throw usageError(`wrap: --${name} given twice`);
    values.set(name as ValueFlag, value);
  }
  return checkCombinations({
    policyPath: values.get("policy") ?? null,
    allowAll: flags.has("allow-all"),
    dryRun: flags.has("dry-run"),
    serverId: values.get("server-id") ?? basename(command[0]!),
    eventSource: values.get("event-source") ?? null,
    decisionLog: values.get("decision-log") ?? null,
    decisionLogNew: flags.has("decision-log-new"),
    decisionLogFsync: flags.has("decision-log-fsync"),
    receiptsOut: values.get("receipts-out") ?? null,
    sessionContextOut: values.get("session-context-out") ?? null,
    sessionStopOut: values.get("session-stop-out") ?? null,
    captureDir: values.get("capture-dir") ?? null,
    maxMessageBytes: integerFlag(values, "max-message-bytes", DEFAULT_MAX_MESSAGE_BYTES, 1024, MAX_MESSAGE_BYTES_LIMIT),
    shutdownGraceMs: integerFlag(values, "shutdown-grace-ms", DEFAULT_SHUTDOWN_GRACE_MS, 0, MAX_GRACE_MS),
    onEvidenceFailure: failureMode(values.get("on-evidence-failure")),
    command,
  });
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

function integerFlag(values: Map<ValueFlag, string>, name: ValueFlag, fallback: number, min: number, max: number): number {
  const raw = values.get(name);
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
