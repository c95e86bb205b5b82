/**
 * One clean text for a failed evidence write (issue 11 item 11): the errno code once, the system's
 * description, and the file — `ENOSPC: no space left on device (/var/log/decisions.ndjson)`.
 * Bun's own message already starts with the code and ends with the call (`…, write` or
 * `…, open '/path'`), so printing the code next to it said the code twice.
 */
import { errnoCode, errorMessage } from "../shared/errors.ts";

export function writeErrorText(e: unknown, path: string): string {
  const code = errnoCode(e);
  let text = errorMessage(e);
  if (code !== undefined && text.startsWith(`${code}: `)) text = text.slice(code.length + 2);
  const syscall = typeof e === "object" && e !== null ? (e as { syscall?: unknown }).syscall : undefined;
  if (typeof syscall === "string") {
    const at = text.lastIndexOf(`, ${syscall}`);
    if (at > 0) text = text.slice(0, at);
  }
  return `${code === undefined ? "" : `${code}: `}${text} (${path})`;
}
