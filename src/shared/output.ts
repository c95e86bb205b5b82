/**
 * The only module that writes to stdout for commands whose stdout is a report (verify, policy).
 * wrap's stdout (the MCP stream) and serve's stdio frames go through src/shared/ndjson/line-writer.ts instead.
 */
import { writeSync } from "node:fs";

export function writeStdout(text: string): void {
  const bytes = Buffer.from(text.endsWith("\n") ? text : `${text}\n`);
  let off = 0;
  while (off < bytes.length) off += writeSync(1, bytes, off);
}

export function writeJson(value: unknown): void {
  writeStdout(JSON.stringify(value, null, 2));
}
