/**
 * The one way vigil installs and removes signal handlers (issue 10: wrap, serve's stdio and daemon
 * modes and serve's start-up each wrote their own).
 *
 * Every way out of vigil must end its child process groups within a bounded time
 * (../spec/README.md, Processes), so the signals that ask vigil to stop are caught rather than left
 * to their default (death without a sweep), and the exit status a mode reports for one is 128+signo.
 */

/** The signals that ask a vigil mode to stop, in the order their handlers are installed, with their numbers. */
export const ENDING_SIGNALS = { SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as const;

export type EndingSignal = keyof typeof ENDING_SIGNALS;

/** The signals that stop serve's daemon mode: there SIGHUP asks for a reload instead (RELOAD_SIGNALS). */
export const DAEMON_ENDING_SIGNALS = { SIGTERM: 15, SIGINT: 2 } as const;

/** Daemon mode's reload signal (systemd: `ExecReload=/bin/kill -HUP $MAINPID`); stdio mode keeps SIGHUP as hang-up. */
export const RELOAD_SIGNALS = { SIGHUP: 1 } as const;

/**
 * Installs `handler` for each of `signals` and returns the function that removes exactly those
 * handlers again. `on`, not `once`: while installed, a second signal calls the handler again
 * instead of falling back to the default, so what a repeat means is the caller's decision.
 */
export function onSignals(
  signals: Readonly<Partial<Record<EndingSignal, number>>>,
  handler: (signo: number, name: EndingSignal) => void,
): () => void {
  const installed = (Object.entries(signals) as [EndingSignal, number][]).map(([name, signo]) => {
    const listener = () => handler(signo, name);
    process.on(name, listener);
    return () => void process.off(name, listener);
  });
  return () => {
    for (const remove of installed) remove();
  };
}
