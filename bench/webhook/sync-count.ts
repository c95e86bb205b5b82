/**
 * Counts a receiver's fdatasync and fsync calls over the timed window of bench/webhook/run.ts: the
 * mechanism the 5 × target is about (group commit: one sync covering many acknowledgements, against
 * the baseline's one per request). `perf stat` on the syscall tracepoints, attached to the
 * receiver's threads, started with its counters disabled and enabled/disabled through a control
 * FIFO at the window's edges: an exact kernel count with no per-syscall stop of the traced process
 * (strace -c would ptrace-stop every syscall and slow the receiver it measures).
 *
 * `perf stat -p` follows the threads the process has when it attaches; a thread created later is
 * not counted, so the threads at the start and at the end are compared and a difference is reported.
 */
import { closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PERF = ["/usr/bin/perf", "/usr/local/bin/perf"].find((p) => existsSync(p)) ?? null;
const EVENTS = ["syscalls:sys_enter_fdatasync", "syscalls:sys_enter_fsync"] as const;
const ATTACH_MS = 5_000;
const STOP_MS = 5_000;

export interface SyncCount {
  fdatasync: number;
  fsync: number;
  /** Threads of the receiver that appeared after perf attached (their syncs are not counted). */
  lateThreads: number;
}

export interface SyncCounter {
  /** Starts counting (the first timed delivery is being sent). Synchronous: a write to the FIFO. */
  enable(): void;
  /** Stops counting and returns the counts (null when perf failed). */
  finish(): Promise<SyncCount | null>;
}

const threadsOf = (pid: number) => new Set(readdirSync(`/proc/${pid}/task`));

/** A counter attached to `pid`, disabled until `enable()`; null when perf is missing or cannot attach. */
export async function attachSyncCounter(pid: number): Promise<SyncCounter | null> {
  if (PERF === null) return null;
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-perf-"));
  const ctl = join(dir, "ctl");
  const ack = join(dir, "ack");
  const made = Bun.spawnSync(["mkfifo", "-m", "0600", ctl, ack]);
  if (made.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  const threads = threadsOf(pid);
  const proc = Bun.spawn([PERF, "stat", "-x", ",", "--no-big-num", "-D", "-1", "--control", `fifo:${ctl},${ack}`, "-e", EVENTS.join(","), "-p", String(pid)], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  // Opened read-write, a FIFO never blocks the opener; the ack FIFO is polled without blocking.
  const fd = openSync(ctl, constants.O_RDWR);
  const ackFd = openSync(ack, constants.O_RDWR | constants.O_NONBLOCK);
  const close = () => {
    closeSync(fd);
    closeSync(ackFd);
    rmSync(dir, { recursive: true, force: true });
  };
  // A no-op command, answered once perf is attached and in its loop: the window may open then.
  writeSync(fd, "disable\n");
  if (!(await acked(ackFd, ATTACH_MS))) {
    proc.kill("SIGKILL");
    close();
    return null;
  }
  return {
    enable() {
      writeSync(fd, "enable\n");
    },
    async finish() {
      writeSync(fd, "disable\n");
      const ok = await acked(ackFd, STOP_MS);
      const late = [...threadsOf(pid)].filter((t) => !threads.has(t)).length;
      proc.kill("SIGINT");
      const code = await Promise.race([proc.exited, Bun.sleep(STOP_MS).then(() => null)]);
      if (code === null) proc.kill("SIGKILL");
      close();
      return ok ? parse(await stderr, late) : null;
    },
  };
}

/** Polls the ack FIFO for perf's `ack` line, up to `ms`. */
async function acked(fd: number, ms: number): Promise<boolean> {
  const buf = Buffer.alloc(64);
  const deadline = performance.now() + ms;
  let seen = "";
  while (performance.now() < deadline) {
    try {
      const n = readSync(fd, buf, 0, buf.length, null);
      seen += buf.toString("utf8", 0, n);
      if (seen.includes("ack")) return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") return false;
    }
    await Bun.sleep(5);
  }
  return false;
}

/** `perf stat -x ,` lines: `count,unit,event,…`. */
function parse(text: string, lateThreads: number): SyncCount | null {
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [count, , event] = line.split(",");
    if (event !== undefined && (EVENTS as readonly string[]).includes(event) && /^\d+$/.test(count ?? "")) counts.set(event, Number(count));
  }
  if (counts.size !== EVENTS.length) return null;
  return { fdatasync: counts.get(EVENTS[0])!, fsync: counts.get(EVENTS[1])!, lateThreads };
}
