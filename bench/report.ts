/** Number formatting and Markdown tables shared by the bench harnesses' reports. */
import { readFileSync } from "node:fs";

/** The median of the finite values; NaN when there are none. */
export const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The q-quantile (0 ≤ q ≤ 1) of the finite values, interpolated between neighbours; NaN when there are none. */
export const quantile = (xs: number[], q: number): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const pos = (s.length - 1) * Math.min(1, Math.max(0, q));
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
};

/** Thousands separators, fixed decimals; "—" for a value that could not be measured. */
export const fmt = (x: number, digits = 0) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "—";

export const mib = (kib: number) => fmt(kib / 1024, 1);

export function table(headers: string[], rows: string[][], align: ("l" | "r")[]): string[] {
  return [`| ${headers.join(" | ")} |`, `| ${align.map((a) => (a === "r" ? "---:" : "---")).join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)];
}

/** One target of a harness, as its met/missed table prints it. */
export interface Target {
  name: string;
  measured: string;
  /** null: not judged (not measured, or not the workload the target names). */
  met: boolean | null;
}

export const verdict = (met: boolean | null) => (met === null ? "n/a" : met ? "met" : "**missed**");

/** Targets as a Markdown table under a bold title (a RESULTS.md section); nothing when there are none. */
export function targetsMarkdown(title: string, targets: readonly Target[]): string[] {
  if (targets.length === 0) return [];
  return [`**${title}**`, "", ...table(["target", "measured", "result"], targets.map((t) => [t.name, t.measured, verdict(t.met)]), ["l", "r", "l"]), ""];
}

/** The same as plain text (a harness's summary on stdout). */
export function targetsText(title: string, targets: readonly Target[]): string[] {
  if (targets.length === 0) return [];
  const w = Math.max(...targets.map((t) => t.name.length));
  const m = Math.max(...targets.map((t) => t.measured.length));
  return ["", title, ...targets.map((t) => `  ${t.name.padEnd(w)}  ${t.measured.padStart(m)}  ${verdict(t.met).replace(/\*/g, "")}`)];
}

/** The CPU model from /proc/cpuinfo ("unknown CPU" off Linux). */
export function cpuModel(): string {
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? "unknown CPU";
  } catch {
    return "unknown CPU";
  }
}

/** Runs a harness's main: exits with its code; an escaped error is one line on stderr and exit 1. */
export function runBench(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`bench: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
