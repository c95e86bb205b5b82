/**
 * Child processes of the bench harnesses, and bounded waits. Every child leads its own process
 * group, so that stopping it also stops whatever it started; every group still alive is killed
 * (SIGKILL) when the harness exits in any way: a normal end, an error, or SIGINT/SIGTERM/SIGHUP,
 * which are turned into an exit here so that the exit handlers run. A harness registers its own
 * exit handler (temporary directory and the like) after importing this module, so it runs after
 * the groups are gone.
 */
import { resolve } from "node:path";
import type { Subprocess } from "bun";

const ROOT = resolve(import.meta.dir, "..");
/** How long a child gets to exit after SIGTERM (or stdin EOF) before its group is killed. */
const STOP_MS = 8_000;

const liveGroups = new Set<number>();

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

process.on("exit", () => {
  for (const pgid of liveGroups) killGroup(pgid);
  liveGroups.clear();
});
for (const [name, signo] of [["SIGINT", 2], ["SIGTERM", 15], ["SIGHUP", 1]] as const) {
  process.on(name, () => {
    process.stderr.write(`bench: ${name}, stopping\n`);
    process.exit(128 + signo);
  });
}

/** Ends the harness (exit 1, so every group is killed) unless the run is done within `ms`; returns what calls that off. */
export function exitUnlessDoneWithin(ms: number): () => void {
  const timer = setTimeout(() => {
    process.stderr.write(`bench: the run did not finish within ${ms / 1000} s; stopping\n`);
    process.exit(1);
  }, ms);
  return () => clearTimeout(timer);
}

/** `p`, or a rejection once `ms` have passed. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `cond` every `pollMs` until it holds (true) or `ms` have passed (false). */
export async function until(cond: () => boolean, ms: number, pollMs = 5): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) return false;
    await Bun.sleep(pollMs);
  }
  return true;
}

/** One line of stdout, as the harness saw it arrive. */
export type LineHandler = (line: string, at: number) => void;

export interface Child {
  name: string;
  proc: Subprocess<"pipe" | "ignore", "pipe", "pipe">;
  pid: number;
  /** The first MiB of stderr. */
  stderr: string;
  /** stdout lines, the first 10,000 (none when an `onLine` handler takes them). */
  lines: string[];
}

export interface SpawnOptions {
  env?: Record<string, string>;
  /**
   * "pipe" (default): kept open, so its EOF tells the child we are gone (or, with `stop(…, "eof")`,
   * that it should end); "ignore" for children that do not read it.
   */
  stdin?: "pipe" | "ignore";
  /** Takes each stdout line as it arrives instead of keeping it (large outputs, timed lines). */
  onLine?: LineHandler;
}

/** Spawns a process group leader in the repository root; stdout is split into lines, stderr kept as text. */
export function spawnChild(name: string, argv: string[], o: SpawnOptions = {}): Child {
  const proc = Bun.spawn(argv, { cwd: ROOT, detached: true, stdin: o.stdin ?? "pipe", stdout: "pipe", stderr: "pipe", env: { ...process.env, ...o.env } });
  liveGroups.add(proc.pid);
  const child: Child = { name, proc, pid: proc.pid, stderr: "", lines: [] };
  const onLine = o.onLine;
  void (async () => {
    const decoder = new TextDecoder();
    let carry = "";
    try {
      for await (const chunk of proc.stdout) {
        const at = performance.now();
        carry += decoder.decode(chunk, { stream: true });
        let nl = carry.indexOf("\n");
        let from = 0;
        while (nl !== -1) {
          const line = carry.slice(from, nl);
          if (onLine) onLine(line, at);
          else if (child.lines.length < 10_000) child.lines.push(line);
          from = nl + 1;
          nl = carry.indexOf("\n", from);
        }
        carry = carry.slice(from);
      }
    } catch {
      // the process is gone
    }
  })();
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of proc.stderr) if (child.stderr.length < 1 << 20) child.stderr += decoder.decode(chunk, { stream: true });
    } catch {
      // the process is gone
    }
  })();
  return child;
}

/** Polls `match` on the child's output until it finds something; fails at once if the child exits first. */
async function waitOutput(child: Child, match: () => RegExpExecArray | null, what: string, ms: number, pollMs: number): Promise<RegExpExecArray> {
  const deadline = performance.now() + ms;
  for (;;) {
    const m = match();
    if (m !== null) return m;
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.name} exited (${child.proc.exitCode ?? child.proc.signalCode}) before it was ready: ${child.stderr.slice(-2000)}`);
    }
    if (performance.now() > deadline) throw new Error(`${child.name}: ${what} within ${ms} ms: ${child.stderr.slice(-2000)}`);
    await Bun.sleep(pollMs);
  }
}

/** The first stdout line that matches `pattern` (lines come without their "\n"). */
export function waitLine(child: Child, pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  const match = () => {
    for (const line of child.lines) {
      const m = pattern.exec(line);
      if (m !== null) return m;
    }
    return null;
  };
  return waitOutput(child, match, `nothing matching ${pattern}`, ms, 5);
}

/** The first match of `pattern` in the child's stderr so far. */
export function waitStderr(child: Child, pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  return waitOutput(child, () => pattern.exec(child.stderr), "not ready", ms, 10);
}

/**
 * SIGTERM (or, with "eof", the end of its stdin; SIGTERM if stdin is not a pipe), then SIGKILL to
 * the group if the child has not exited within STOP_MS, and to what it left behind in its group
 * either way; returns the exit code (null if it had to be killed).
 */
export async function stop(child: Child, how: "term" | "eof" = "term"): Promise<number | null> {
  try {
    if (how === "eof" && child.proc.stdin !== undefined) child.proc.stdin.end();
    else process.kill(child.pid, "SIGTERM");
  } catch {
    // already gone
  }
  const code = await within(child.proc.exited, STOP_MS, `${child.name} stop`).catch(() => null);
  killGroup(child.pid);
  liveGroups.delete(child.pid);
  return code;
}
