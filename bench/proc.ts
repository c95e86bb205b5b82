/**
 * /proc readings shared by the bench harnesses (Linux only, like the harnesses): a process's CPU
 * time, this process's, and a process's memory and descriptor counts.
 */
import { readFileSync, readdirSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
export const CLK_TCK = 100;

/** utime + stime of a process (all its threads), ms; 0 once it is gone (or for null). */
export function cpuMsOf(pid: number | null): number {
  if (pid === null) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** This process's user + system CPU time, ms. */
export const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export interface Memory {
  rssKiB: number;
  hwmKiB: number;
  anonKiB: number;
  fds: number;
  threads: number;
}

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN);
  return { rssKiB: field("VmRSS"), hwmKiB: field("VmHWM"), anonKiB: field("RssAnon"), fds: readdirSync(`/proc/${pid}/fd`).length, threads: field("Threads") };
}

/** /proc/stat's first line so far, clock ticks: all CPU time, and the part of it the host took from this VM (steal). */
export function cpuTicks(): { total: number; steal: number } {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
  } catch {
    return { total: Number.NaN, steal: Number.NaN };
  }
}

/** Of the CPU time between two readings, the share the host took (0 when unknown or nothing passed). */
export function stealShare(from: { total: number; steal: number }, to: { total: number; steal: number }): number {
  const total = to.total - from.total;
  return total > 0 && Number.isFinite(total) ? (to.steal - from.steal) / total : 0;
}

/** CPU time the whole machine spent busy so far (every CPU, from /proc/stat: all but idle and iowait), ms. */
export function machineBusyMs(): number {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
    return ((user + nice + system + irq + softirq + steal) * 1000) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/** On-CPU time of a process's live threads (sum of /proc/<pid>/task/<tid>/schedstat), ms at ns precision; 0 once it is gone. */
export function schedCpuMsOf(pid: number): number {
  let ms = 0;
  for (const t of threadCpuMsOf(pid).values()) ms += t;
  return ms;
}

/**
 * On-CPU time of a process's live threads by thread name (digits dropped: "Bun Pool 0" and "Bun Pool 1"
 * are "Bun Pool"), ms at ns precision: where a process's CPU goes (its JS thread, the JIT, the
 * thread pool, the collector). Threads that ended are not counted.
 */
export function threadCpuMsOf(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim().replace(/\s*\d+$/, "");
        const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
        byName.set(name, (byName.get(name) ?? 0) + ns / 1e6);
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process is gone
  }
  return byName;
}

/** The change from `from` to `to` per `per` units, by thread name, largest first ("name=µs"), above `min`. */
export function threadCpuDelta(from: Map<string, number>, to: Map<string, number>, per: number, min = 0.5): string {
  const rows: [string, number][] = [];
  for (const [name, ms] of to) {
    const us = ((ms - (from.get(name) ?? 0)) * 1000) / per;
    if (us >= min) rows.push([name === "" ? "?" : name, us]);
  }
  return rows.sort((a, b) => b[1] - a[1]).map(([n, us]) => `${n}=${us.toFixed(1)}`).join(" ");
}
