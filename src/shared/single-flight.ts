/**
 * At most one call at a time (issue 12 item D: one `events/list` per server, however many
 * subscriptions start together). Callers asking for the same key while a call is in flight share
 * its outcome; a caller asking for another key (a newer generation: the answer in flight is out of
 * date) waits for it to settle, then starts its own.
 *
 * Each caller may bring its own signal. Aborting it gives that caller up at once; the shared call
 * is aborted only when every caller that joined it gave up, so one unsubscribing never cancels the
 * list another subscription still waits for, and nobody is left holding a request nobody wants.
 */

interface Flight<T> {
  readonly key: number;
  readonly controller: AbortController;
  readonly promise: Promise<T>;
  /** Resolves (never rejects) once the call settled and left the slot. */
  readonly settled: Promise<void>;
  waiters: number;
}

export class SingleFlight<T> {
  private flight: Flight<T> | null = null;

  /** A call is in flight (for tests and status). */
  get busy(): boolean {
    return this.flight !== null;
  }

  /** Joins the call in flight for `key`, or starts `start` once no other call is in flight. */
  async run(key: number, start: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (;;) {
      signal?.throwIfAborted();
      const current = this.flight;
      if (current === null) {
        this.flight = this.launch(key, start);
        continue;
      }
      // An abandoned call is on its way out: it is not joined, its successor is started after it.
      if (current.key === key && !current.controller.signal.aborted) return join(current, signal);
      await settledOrAborted(current.settled, signal);
    }
  }

  private launch(key: number, start: (signal: AbortSignal) => Promise<T>): Flight<T> {
    const controller = new AbortController();
    const promise = (async () => start(controller.signal))();
    const flight: Flight<T> = {
      key,
      controller,
      promise,
      waiters: 0,
      settled: promise.then(
        () => this.vacate(flight),
        () => this.vacate(flight),
      ),
    };
    return flight;
  }

  private vacate(flight: Flight<T>): void {
    if (this.flight === flight) this.flight = null;
  }
}

function join<T>(flight: Flight<T>, signal: AbortSignal | undefined): Promise<T> {
  flight.waiters++;
  // A caller without a signal never gives up: the call then runs to its end (its own bounds apply).
  if (signal === undefined) return flight.promise;
  return new Promise<T>((resolve, reject) => {
    const leave = () => {
      flight.waiters--;
      if (flight.waiters === 0) flight.controller.abort(signal.reason);
      reject(signal.reason);
    };
    signal.addEventListener("abort", leave, { once: true });
    flight.promise.then(
      (value) => {
        signal.removeEventListener("abort", leave);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", leave);
        reject(error);
      },
    );
  });
}

function settledOrAborted(settled: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return settled;
  return new Promise<void>((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    void settled.then(done);
  });
}
