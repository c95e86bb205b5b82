/**
 * Push delivery for one subscription (serve.md §6 item 3): one `events/stream` at a time,
 * reconnected from the stored cursor whenever it ends.
 *
 * - Notifications are handled in runs (whatever is queued); each run is committed before the
 *   cursor moves past it, so a push cursor is saved only after the records of its events.
 * - `active` (ready; `truncated` → gap), `event` (checked once, rules/occurrence.ts: deliver, or
 *   an `invalid_event` gap, or an `oversized` one when it would not fit a frame; an over-cap
 *   stand-in → `oversized` gap; no reconnect either way, and
 *   the event's cursor, when it is one we can store, moves past it), `heartbeat` (cursor), `error` (status frame, the stream stays), `terminated`
 *   (thrown as EventsTerminated: the caller decides what ending means).
 * - Silence watchdog (rules/heartbeat-watch.ts): no notification for 2 × the stream's measured
 *   heartbeat interval (at least 1 s), or for VIGIL_EVENTS_STREAM_IDLE_MS until two heartbeats
 *   were seen → cancel and reconnect from the cursor, saying why. The request gets no timeout of
 *   its own (wire/server-events.ts): liveness is judged here, from what the stream delivers.
 * - A full queue or an overflowing stream buffer → drain what arrived before it, cancel, reconnect
 *   at once; a stream the server closed → reconnect with backoff (2^n s, cap 30 s). That wait
 *   ends early when the server is connected again (serve.md §6 item 10: the pool's `connected`
 *   wakes the subscription's slot, `waits.wake`), so a push subscription whose server was down
 *   resumes from its cursor at once instead of after the rest of its backoff.
 */
import { doublingBackoffMs } from "../../shared/backoff.ts";
import { errorMessage } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import type { Scheduler } from "../../shared/time.ts";
import { describeSilence } from "../rules/heartbeat-watch.ts";
import { EventsRpcError } from "../rules/errors.ts";
import { checkOccurrence, isStorableCursor, reportableEventId, seenKeyOf } from "../rules/occurrence.ts";
import { adoptCursor } from "../rules/poll-rules.ts";
import type { PushStream, StreamNotification } from "../wire/push-stream.ts";
import type { HostedSubscription, SubscriptionHost } from "./host.ts";
import { type WakeSlot, abortableSleep } from "./sleep.ts";

const RECONNECT_CAP_MS = 30_000;

/** The server ended the subscription (`notifications/events/terminated`). */
export class EventsTerminated extends EventsRpcError {
  readonly terminated = true;
}

type Next = "now" | "later";

/** How the loop waits: the subscription's wake slot (its server connected again) and the clock (tests inject a fake one). */
export interface PushWaits {
  wake?: WakeSlot;
  scheduler?: Scheduler;
}

export async function runPush(host: SubscriptionHost, sub: HostedSubscription, signal: AbortSignal, waits: PushWaits = {}): Promise<void> {
  const wire = host.wire(sub.spec.server);
  let reconnects = 0;
  while (!signal.aborted) {
    const params: Record<string, unknown> = { name: sub.spec.name, arguments: sub.spec.arguments, cursor: sub.cursor };
    if (sub.spec.max_age_ms !== undefined) params.maxAgeMs = sub.spec.max_age_ms;
    const stream = wire.openStream(params, host.tuning.streamBuffer);
    const cancel = () => stream.close();
    signal.addEventListener("abort", cancel, { once: true });
    let next: Next;
    let progressed = false;
    try {
      next = await consume(host, sub, stream, signal, waits.scheduler, () => (progressed = true));
    } finally {
      signal.removeEventListener("abort", cancel);
      stream.close();
    }
    if (signal.aborted) return;
    if (progressed) reconnects = 0;
    if (next === "later") await abortableSleep(doublingBackoffMs(reconnects++, RECONNECT_CAP_MS), signal, waits.wake, waits.scheduler);
  }
}

async function consume(
  host: SubscriptionHost,
  sub: HostedSubscription,
  stream: PushStream,
  signal: AbortSignal,
  scheduler: Scheduler | undefined,
  progress: () => void,
): Promise<Next> {
  const idleMs = host.tuning.streamIdleMs;
  for (;;) {
    const item = await stream.next(idleMs);
    if (signal.aborted) return "later";
    if (item === "idle") {
      const reason = describeSilence(stream.silence(idleMs));
      logLine(`serve: events: ${sub.spec.server}/${sub.spec.name}: ${reason}`, { level: "warn", server: sub.spec.server, event: sub.spec.name, code: "stream_silent" });
      host.status(sub, { kind: "error", error: reason, retry_in_ms: 0 });
      return "now";
    }
    if (item.kind === "end") {
      const end = item.end;
      if (end.kind === "rpc_error") throw new EventsRpcError(end.code, end.message, end.data);
      if (end.kind === "overflow") {
        host.status(sub, { kind: "error", error: "the event stream overflowed its buffer; reconnecting from the cursor", retry_in_ms: 0 });
        return "now";
      }
      if (!sub.up) throw new EventsRpcError(0, end.kind === "closed" ? `the event stream closed: ${end.reason}` : "the server ended the event stream before it was active");
      return "later";
    }
    progress();
    const run = [item.notification, ...stream.drainQueued()];
    const outcome = await handleRunInSlices(host, sub, run);
    // The run's cursor is stored by the same write as its events, after them.
    const next = outcome.cursor.set ? adoptCursor(sub.cursor, outcome.cursor.value) : sub.cursor;
    try {
      await host.commit(next !== sub.cursor ? { sub, cursor: next } : undefined);
    } catch (e) {
      host.status(sub, { kind: "error", error: `could not store events (reconnecting from the stored cursor): ${errorMessage(e)}`, retry_in_ms: 1000 });
      // Closed before the wait: a stream left open would fill and hold its connection's read gate.
      stream.close();
      await abortableSleep(1000, signal, undefined, scheduler);
      return "now";
    }
    sub.cursor = next;
    await sub.stored();
    if (outcome.terminated) throw outcome.terminated;
    if (outcome.full) {
      host.status(sub, { kind: "error", error: "the pending queue is full; reconnecting from the cursor when there is room", retry_in_ms: 1000 });
      stream.close();
      await abortableSleep(1000, signal, undefined, scheduler);
      return "now";
    }
  }
}

export interface RunOutcome {
  /** The newest non-null cursor among what was accepted (set = something carried one). */
  cursor: { set: boolean; value: string | null };
  full: boolean;
  terminated: EventsTerminated | null;
}

/** A slice of a run is handled synchronously for at most this many notifications… */
export const SLICE_EVENTS = 64;
/** …or this long, then the loop yields a macrotask (timers, I/O, other subscriptions) before the next. */
export const SLICE_MS = 8;

const nextMacrotask = () => new Promise<void>((resolve) => setImmediate(resolve));
const noRelease = () => {};

/**
 * Handles a run of notifications in order, stopping at a full queue or a termination, in slices
 * that yield to the event loop: a run of hundreds must not block the daemon for its whole length.
 * Nothing is committed or acknowledged in between (the caller commits once, then moves the cursor).
 */
export async function handleRunInSlices(host: SubscriptionHost, sub: HostedSubscription, run: StreamNotification[]): Promise<RunOutcome> {
  const out: RunOutcome = { cursor: { set: false, value: null }, full: false, terminated: null };
  let sliceStart = performance.now();
  let inSlice = 0;
  // A slice's frames go to the transcript in one write, released before each yield.
  let release = host.holdFrames?.() ?? noRelease;
  try {
    for (let i = 0; i < run.length; i++) {
      if (handleOne(host, sub, run[i]!, out)) return out;
      if (i + 1 < run.length && (++inSlice >= SLICE_EVENTS || performance.now() - sliceStart >= SLICE_MS)) {
        release();
        await nextMacrotask();
        release = host.holdFrames?.() ?? noRelease;
        sliceStart = performance.now();
        inSlice = 0;
      }
    }
    return out;
  } finally {
    release();
  }
}

/** One notification into `out`; true when the run stops here (full queue, termination). */
function handleOne(host: SubscriptionHost, sub: HostedSubscription, { method, params, receivedMs }: StreamNotification, out: RunOutcome): boolean {
  const take = (cursor: unknown) => {
    if (isStorableCursor(cursor)) out.cursor = { set: true, value: cursor };
  };
  const full = () => {
    out.full = true;
    return true;
  };
  switch (method) {
    case "notifications/events/active":
      sub.markUp("push");
      if (params.truncated === true) {
        if (!host.gap(sub, { gap: true, cursor: cursorOrNull(params.cursor), reason: "truncated", eventId: null })) return full();
      }
      take(params.cursor);
      break;
    case "notifications/events/event": {
      sub.markUp("push");
      if (params.$oversized === true) {
        const seenKey = seenKeyOf(params.eventId);
        const notice = {
          gap: true as const,
          cursor: cursorOrNull(params.cursor),
          reason: "oversized",
          eventId: reportableEventId(params.eventId),
          ...(params.$ambiguous === true ? { possibly_not_an_event: true } : {}),
          ...(typeof params.$dropped_id === "string" ? { dropped_id: params.$dropped_id } : {}),
          ...(seenKey !== null ? { seen_key: seenKey } : {}),
        };
        if (!host.gap(sub, notice)) return full();
        take(params.cursor);
        break;
      }
      const { _meta: _ignored, ...occurrence } = params;
      const check = checkOccurrence(occurrence);
      if (check.ok) {
        if (host.accept(sub, check.occurrence, "push", receivedMs) === "full") return full();
      } else {
        const notice = { gap: true as const, cursor: cursorOrNull(params.cursor), reason: check.reason, eventId: check.eventId, problem: check.problem };
        if (!host.gap(sub, { ...notice, ...(check.seenKey !== null ? { seen_key: check.seenKey } : {}) })) return full();
      }
      take(params.cursor);
      break;
    }
    case "notifications/events/heartbeat":
      sub.markUp("push");
      take(params.cursor);
      break;
    case "notifications/events/error": {
      const e = (params.error ?? {}) as { code?: unknown; message?: unknown };
      host.status(sub, { kind: "error", error: `the server reported: ${String(e.message ?? "an error")} (${String(e.code ?? "?")})` });
      break;
    }
    case "notifications/events/terminated": {
      const e = (params.error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
      const code = typeof e.code === "number" ? e.code : -32603;
      out.terminated = new EventsTerminated(code, typeof e.message === "string" ? e.message : "terminated", e.data);
      return true;
    }
    default:
      break;
  }
  return false;
}

function cursorOrNull(v: unknown): string | null {
  return isStorableCursor(v) ? v : null;
}
