/**
 * The one poll-until helper of the test suite (issue 10 item 7). Every wait is bounded by
 * `timeoutMs`, an async predicate included (a reading that hangs is cut off at the deadline), and a
 * timeout names what was awaited, the bound and the last value seen, so a failure reads on its own.
 *
 * Waits for things that announce themselves (a mock-model request, a process exit, a stdout line)
 * keep their own event-driven waiters; this is for conditions that can only be looked at.
 */

export interface WaitOptions<T> {
  timeoutMs: number;
  /** What is awaited, for the timeout message ("the run to settle"). */
  label: string;
  /**
   * When given, the predicate is a reading and `until` decides on it; the reading is handed back.
   * Without it, the first truthy result is handed back.
   */
  until?: (value: T) => boolean;
  /** How a reading is shown in the timeout message, as given (default: JSON, cut to 500 characters). */
  show?: (value: T) => unknown;
  /** Default 20 ms: small against the bounds, large enough not to hog the two CI cores. */
  intervalMs?: number;
}

/** Thrown when the wait ran out: tests that turn a timeout into `false` catch exactly this. */
export class WaitTimeoutError extends Error {
  override readonly name = "WaitTimeoutError";
  constructor(
    readonly label: string,
    readonly timeoutMs: number,
    readonly last: unknown,
  ) {
    super(`not within ${timeoutMs} ms: ${label}${last === NOTHING_SEEN ? "" : `; last seen: ${last}`}`);
  }
}

type Truthy<T> = Exclude<T, false | 0 | "" | null | undefined>;

const NOTHING_SEEN = "(nothing)";
const SHOW_CHARS = 500;

export function waitFor<T>(predicate: () => T | Promise<T>, o: WaitOptions<T> & { until: (value: T) => boolean }): Promise<T>;
export function waitFor<T>(predicate: () => T | Promise<T>, o: WaitOptions<T>): Promise<Truthy<T>>;
export async function waitFor<T>(predicate: () => T | Promise<T>, o: WaitOptions<T>): Promise<T> {
  const deadline = performance.now() + o.timeoutMs;
  const done = o.until ?? ((value: T) => Boolean(value));
  let last: { value: T } | null = null;
  for (;;) {
    const reading = await withinDeadline(predicate(), deadline);
    if (reading !== TIMED_OUT) {
      if (done(reading.value)) return reading.value;
      last = reading;
    }
    const left = deadline - performance.now();
    if (left <= 0) throw new WaitTimeoutError(o.label, o.timeoutMs, last === null ? NOTHING_SEEN : render(last.value, o.show));
    await Bun.sleep(Math.min(o.intervalMs ?? 20, left));
  }
}

const TIMED_OUT = Symbol("timed out");

async function withinDeadline<T>(value: T | Promise<T>, deadline: number): Promise<{ value: T } | typeof TIMED_OUT> {
  if (!(value instanceof Promise)) return { value };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cut = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - performance.now()))));
  try {
    return await Promise.race([value.then((v) => ({ value: v })), cut]);
  } finally {
    clearTimeout(timer);
  }
}

function render<T>(value: T, show: ((value: T) => unknown) | undefined): string {
  if (show) return asText(show(value));
  const text = asText(value);
  return text.length > SHOW_CHARS ? `${text.slice(0, SHOW_CHARS)}…` : text;
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
