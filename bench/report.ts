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
