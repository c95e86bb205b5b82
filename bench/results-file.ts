/**
 * bench/RESULTS.md is shared by every harness: each owns one marked section
 * (`<!-- bench:<key> start … -->` … `<!-- bench:<key> end -->`) and replaces only that one. The file
 * is read right before writing, since other harnesses write their own sections.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const RESULTS_FILE = join(import.meta.dir, "RESULTS.md");

const HEADER =
  "# Benchmark results\n\nWritten by the harnesses in `bench/` (see bench/README.md). Newest section first; each dated section is replaced when the harness is re-run with `--write` on the same day.\n\n";

/**
 * Replaces the section between `<!-- bench:<key> start` and `<!-- bench:<key> end -->` with
 * `section` (which carries both markers); a new section goes before the first generated one
 * (newest first), or at the end.
 */
export function writeResultsSection(key: string, section: string, path = RESULTS_FILE): void {
  const startMark = `<!-- bench:${key} start`;
  const endMark = `<!-- bench:${key} end -->`;
  let text = existsSync(path) ? readFileSync(path, "utf8") : HEADER;
  const a = text.indexOf(startMark);
  const b = text.indexOf(endMark);
  if (a >= 0 && b > a) text = text.slice(0, a) + section + text.slice(b + endMark.length);
  else {
    const first = text.indexOf("<!-- bench:");
    text = first >= 0 ? `${text.slice(0, first)}${section}\n\n${text.slice(first)}` : `${text.replace(/\n*$/, "\n\n")}${section}\n`;
  }
  writeFileSync(path, text);
}

/** Prints a harness's summary and its section on stdout; with `write`, also records the section (said on stderr). */
export function publishResults(key: string, summary: string, section: string, write: boolean): void {
  process.stdout.write(`${summary}\n\n${section}\n`);
  if (!write) return;
  writeResultsSection(key, section);
  process.stderr.write(`written: ${RESULTS_FILE} (bench:${key} section)\n`);
}
