/**
 * A long-lived signal (a subscription's, a run's) with a count of the `abort` listeners attached to
 * it right now: what the MCP SDK leaves behind per request is visible without timing anything.
 */
export function countedSignal(): { controller: AbortController; listeners: () => number } {
  const controller = new AbortController();
  const signal = controller.signal;
  const attached = new Set<unknown>();
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, listener: unknown, options?: unknown) => {
    if (type === "abort") attached.add(listener);
    add(type, listener as EventListener, options as AddEventListenerOptions);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((type: string, listener: unknown, options?: unknown) => {
    if (type === "abort") attached.delete(listener);
    remove(type, listener as EventListener, options as EventListenerOptions);
  }) as typeof signal.removeEventListener;
  return { controller, listeners: () => attached.size };
}
