/**
 * One signal per request, derived from a long-lived one (a subscription's, a session's), and let go
 * of when the request settles (issue 12 item D; serve.md §6 item 10).
 *
 * Why: the MCP SDK adds an `abort` listener to the signal of every request and never removes it.
 * Handed a long-lived signal, every request ever made stays attached to it (memory), and aborting it
 * sends `notifications/cancelled` for all of them, although the base protocol allows a cancel only
 * for a request still in progress. Given its own signal, the SDK's listener dies with it; the link
 * to the long-lived signal is one listener of ours, removed when the request settles, so aborting
 * the long-lived signal reaches only the requests still in flight.
 */

/** Runs `request` with its own signal, aborted with `parent`'s reason while the request is in flight. */
export async function withRequestSignal<T>(parent: AbortSignal | undefined, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController();
  if (parent === undefined) return request(own.signal);
  if (parent.aborted) own.abort(parent.reason);
  const forward = () => own.abort(parent.reason);
  parent.addEventListener("abort", forward, { once: true });
  try {
    return await request(own.signal);
  } finally {
    parent.removeEventListener("abort", forward);
  }
}
