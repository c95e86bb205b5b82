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
