/**
 * Child processes in their own process groups, and the escalating, bounded sweep that ends them.
 *
 * MCP servers are often `npx` → node → more processes, and some double-fork. Signalling only the
 * leader's pid orphans the rest, so every child is spawned `detached: true` (setsid: it leads a new
 * group whose id is its pid) and is only ever signalled as a group (`kill(-pgid)`), which also avoids
 * signalling a recycled pid after the leader was reaped.
 */
import { readdirSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import type { Subprocess } from "bun";
import { VigilError, errnoCode, errorMessage } from "./errors.ts";
import { within } from "./time.ts";

export interface ChildStatus {
  termination: "exited" | "signaled" | "unknown";
  exit_code: number | null;
  /** Unix signal number that ended the leader, if it died by a signal. */
  signal: number | null;
  /** Not observable through Bun's spawn API: always null. */
  core_dumped: boolean | null;
}

export const UNKNOWN_STATUS: ChildStatus = { termination: "unknown", exit_code: null, signal: null, core_dumped: null };

export type GroupChild = Subprocess<"pipe", "pipe", "pipe" | "inherit">;

export interface SpawnGroupOptions {
  stderr: "pipe" | "inherit";
  env?: Record<string, string | undefined>;
  cwd?: string;
}

/** Spawns argv as the leader of a new process group. Throws VigilError("spawn_failed") with a one-line reason. */
export function spawnGroup(argv: string[], options: SpawnGroupOptions): GroupChild {
  try {
    return Bun.spawn(argv, {
      detached: true,
      stdin: "pipe",
      stdout: "pipe",
      stderr: options.stderr,
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    }) as GroupChild;
  } catch (e) {
    const code = errnoCode(e);
    const why =
      code === "ENOENT" ? "command not found" : code === "EACCES" ? "permission denied" : errorMessage(e);
    throw new VigilError("spawn_failed", `cannot start ${JSON.stringify(argv[0])}: ${why}`, { cause: e });
  }
}

/** The leader's status if it has exited, otherwise null (the non-blocking "try_wait"). */
export function tryStatus(child: GroupChild): ChildStatus | null {
  const sig = child.signalCode as string | number | null;
  if (sig !== null && sig !== undefined) {
    const signo = typeof sig === "number" ? sig : signalNumber(sig);
    return { termination: "signaled", exit_code: null, signal: signo, core_dumped: null };
  }
  if (child.exitCode !== null) return { termination: "exited", exit_code: child.exitCode, signal: null, core_dumped: null };
  return null;
}

/** Exit status vigil reports for a child status: the code, or 128+signo for a signal death. */
export function statusExitCode(status: ChildStatus): number {
  if (status.termination === "exited" && status.exit_code !== null) return status.exit_code;
  if (status.termination === "signaled" && status.signal !== null) return 128 + status.signal;
  return 1;
}

export function signalNumber(name: string): number | null {
  const n = (constants.signals as Record<string, number>)[name];
  return typeof n === "number" ? n : null;
}

/** Sends a signal to every process of the group. False when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * True while any non-zombie process is in the group. On Linux this reads /proc, because a zombie
 * (an orphan whose reaper has not reaped it yet) still answers kill(-pgid, 0) but is already gone.
 */
export function groupAlive(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return signalGroupProbe(pgid);
  }
  for (const entry of entries) {
    const c = entry.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "latin1");
    } catch {
      continue; // exited while we looked
    }
    // Fields after the parenthesised command name: state ppid pgrp …
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(rest[2]) === pgid && rest[0] !== "Z" && rest[0] !== "X") return true;
  }
  return false;
}

function signalGroupProbe(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves true when `done()` holds, false after `ms`. Polls every 20 ms. */
export async function pollUntil(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (done()) return true;
    if (performance.now() >= deadline) return false;
    await sleep(Math.min(20, Math.max(1, deadline - performance.now())));
  }
}

export interface SweepResult {
  status: ChildStatus;
  /** vigil sent a signal because no status was available after the grace. */
  kill_requested: boolean;
}

export const SIGNAL_POLL_MS = 2000;

/**
 * Ends a child and its whole group, bounded by graceMs + 2 × pollMs (default SIGNAL_POLL_MS). Never throws.
 *
 * 1. If the leader has not exited, wait up to `graceMs` (the caller has closed its stdin), unless
 *    the caller has already sent SIGTERM (`termSent`).
 * 2. Still running: SIGTERM the group, poll up to pollMs; then SIGKILL the group, poll up to pollMs.
 * 3. Leader gone but members remain (double-forked servers): SIGTERM then SIGKILL the group, so no
 *    orphan outlives vigil.
 */
export async function sweepGroup(child: GroupChild, graceMs: number, options: { termSent?: boolean; pollMs?: number } = {}): Promise<SweepResult> {
  const pgid = child.pid;
  const pollMs = options.pollMs ?? SIGNAL_POLL_MS;
  let killRequested = options.termSent === true;
  if (tryStatus(child) === null && graceMs > 0 && !options.termSent) await within(child.exited, graceMs);
  if (tryStatus(child) === null) {
    killRequested = true;
    // With termSent the caller already sent SIGTERM: the 2 s poll follows it, not a second grace.
    if (!options.termSent) signalGroup(pgid, "SIGTERM");
    await within(child.exited, pollMs);
    if (tryStatus(child) === null) {
      signalGroup(pgid, "SIGKILL");
      await within(child.exited, pollMs);
    }
  }
  await sweepStragglers(pgid, pollMs);
  return { status: tryStatus(child) ?? UNKNOWN_STATUS, kill_requested: killRequested };
}

/** After the leader exited: TERM, then KILL, whatever is left in its group; bounded by 2 × pollMs. */
export async function sweepStragglers(pgid: number, pollMs = SIGNAL_POLL_MS): Promise<void> {
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, "SIGTERM");
  if (await pollUntil(() => !groupAlive(pgid), pollMs)) return;
  signalGroup(pgid, "SIGKILL");
  await pollUntil(() => !groupAlive(pgid), pollMs);
}
