/**
 * Where wrap writes its evidence, checked before anything is spawned (wrap.md §1, §9): parents must
 * exist (never created silently), paths must be distinct (compared by the real path of their parent
 * plus their name), and none may exist yet except an append-mode decision log.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, statSync, chmodSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { CAPTURE_FILES } from "../evidence/format.ts";
import { usageError } from "../shared/errors.ts";
import type { WrapOptions } from "./options.ts";

export interface OutputPlan {
  captureDir: string | null;
  decisionLog: { path: string; mode: "new" | "append" } | null;
  receipts: string | null;
  context: string | null;
  stop: string | null;
  serverStderr: string | null;
  manifest: string | null;
}

export function planOutputs(o: WrapOptions): OutputPlan {
  if (o.captureDir !== null) return planCaptureDir(o.captureDir);
  const plan: OutputPlan = {
    captureDir: null,
    decisionLog: o.decisionLog === null ? null : { path: resolve(o.decisionLog), mode: o.decisionLogNew ? "new" : "append" },
    receipts: o.receiptsOut === null ? null : resolve(o.receiptsOut),
    context: o.sessionContextOut === null ? null : resolve(o.sessionContextOut),
    stop: o.sessionStopOut === null ? null : resolve(o.sessionStopOut),
    serverStderr: null,
    manifest: null,
  };
  const outputs: [string, string, boolean][] = [];
  if (plan.decisionLog) outputs.push(["--decision-log", plan.decisionLog.path, plan.decisionLog.mode === "append"]);
  if (plan.receipts) outputs.push(["--receipts-out", plan.receipts, false]);
  if (plan.context) outputs.push(["--session-context-out", plan.context, false]);
  if (plan.stop) outputs.push(["--session-stop-out", plan.stop, false]);
  const seen = new Map<string, string>();
  for (const [flag, path, mayExist] of outputs) {
    const key = identity(flag, path);
    const other = seen.get(key);
    if (other) throw usageError(`wrap: ${flag} and ${other} name the same file ${path}`);
    seen.set(key, flag);
    checkTarget(flag, path, mayExist);
  }
  return plan;
}

function planCaptureDir(dir: string): OutputPlan {
  const abs = resolve(dir);
  if (!existsSync(dirname(abs))) throw usageError(`wrap: --capture-dir parent ${dirname(abs)} does not exist`);
  if (existsSync(abs) || isSymlink(abs)) {
    const st = lstatSync(abs);
    if (!st.isDirectory()) throw usageError(`wrap: --capture-dir ${abs} exists and is not a directory`);
    if (readdirSync(abs).length > 0) throw usageError(`wrap: --capture-dir ${abs} is not empty`);
  }
  const at = (name: string) => join(abs, name);
  return {
    captureDir: abs,
    decisionLog: { path: at(CAPTURE_FILES.decisions), mode: "new" },
    receipts: at(CAPTURE_FILES.receipts),
    context: at(CAPTURE_FILES.context),
    stop: at(CAPTURE_FILES.stop),
    serverStderr: at(CAPTURE_FILES.serverStderr),
    manifest: at(CAPTURE_FILES.manifest),
  };
}

/** Creates the capture directory (0700) once the server has been spawned. */
export function createCaptureDir(plan: OutputPlan): void {
  if (plan.captureDir === null) return;
  if (existsSync(plan.captureDir)) chmodSync(plan.captureDir, 0o700);
  else mkdirSync(plan.captureDir, { mode: 0o700 });
}

function identity(flag: string, path: string): string {
  const parent = dirname(path);
  let real: string;
  try {
    real = realpathSync(parent);
  } catch {
    throw usageError(`wrap: ${flag}: directory ${parent} does not exist`);
  }
  return join(real, basename(path));
}

function checkTarget(flag: string, path: string, mayExist: boolean): void {
  if (!existsSync(path) && !isSymlink(path)) return;
  if (!mayExist) throw usageError(`wrap: ${flag} ${path} already exists (evidence files are always new)`);
  if (statSync(path).isDirectory()) throw usageError(`wrap: ${flag} ${path} is a directory`);
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
