/**
 * Every started, not yet closed stdio transport of this process, so that every way out of serve
 * (stdin EOF, SIGTERM, a fatal error after connecting, a crash handler) can end all server process
 * groups without knowing which session owns which connection (serve.md §6 item 9).
 */
import { signalGroup } from "../shared/process-group.ts";
import { within } from "../shared/time.ts";

export interface TrackedTransport {
  /** Leader pid = process group id; null before start. */
  readonly pid: number | null;
  /** The longest close() can take (grace + escalation + drain). */
  readonly closeBoundMs: number;
  close(): Promise<void>;
}

const open = new Set<TrackedTransport>();

export function trackTransport(transport: TrackedTransport): void {
  open.add(transport);
}

export function untrackTransport(transport: TrackedTransport): void {
  open.delete(transport);
}

export function openStdioTransportCount(): number {
  return open.size;
}

/**
 * Closes every open transport in parallel (stdin EOF, grace, group sweep), bounded by the slowest
 * transport's close bound. Never rejects. A transport whose close() overran the bound (it should
 * not: each step is bounded) has its group SIGKILLed, so nothing outlives the call.
 */
export async function closeAllStdioTransports(): Promise<void> {
  const closing = [...open];
  if (closing.length === 0) return;
  const bound = Math.max(...closing.map((t) => t.closeBoundMs)) + 1000;
  await within(Promise.allSettled(closing.map((t) => t.close())), bound);
  for (const t of closing) if (open.has(t) && t.pid !== null) signalGroup(t.pid, "SIGKILL");
}

/**
 * Synchronous last resort for paths that cannot wait (a `process.on("exit")` hook): SIGKILLs every
 * open transport's group. Returns how many groups were signalled.
 */
export function killAllStdioTransportGroups(): number {
  let signalled = 0;
  for (const t of open) if (t.pid !== null && signalGroup(t.pid, "SIGKILL")) signalled++;
  return signalled;
}
