/**
 * One span per event batch handed to a session's model (issue 15 item 2), `vigil.events.deliver`:
 * it begins when the coalescer injects the batch and ends when the session reports it — delivered
 * (status OK) or returned (status ERROR, `error.type` = the run's code or status:
 * `model_unavailable`, `failed`, `aborted`). Its parent is the span of the run that carried the
 * batch (the run's span is kept by run id: serve/run/run-tracing.ts), so a trace shows which run
 * read which events; a batch reported by no known run is a root span. The GenAI conventions have no
 * span for this (GENAI_SEMCONV, shared/tracing.ts), so its name and attributes are vigil's own.
 *
 * Attributes are names and counts only — the session, the batch size and tag, the behavior, the
 * servers and the `server/event` names (distinct, at most MAX_NAMES each) — never an event id, an
 * argument or a payload. With tracing off nothing is kept.
 */
import { type TraceSpan, keptSpan, startSpan, tracingEnabled } from "../shared/tracing.ts";
import type { PendingEntry } from "./types.ts";

const MAX_NAMES = 16;
const MAX_NAME_CHARS = 128;

interface Opened {
  startTime: number;
  attributes: Record<string, string | number | string[]>;
}

export type BatchOutcome = "delivered" | "returned";

/** The open batch spans of one session's coalescer, by batch tag. */
export class DeliverySpans {
  private readonly open = new Map<string, Opened>();

  constructor(private readonly session: string | undefined) {}

  /** The batch `tag` was injected (a no-op with tracing off). */
  opened(tag: string, batch: readonly PendingEntry[], behavior: string): void {
    if (!tracingEnabled()) return;
    const servers = distinct(batch.map((e) => e.server));
    const names = distinct(batch.map((e) => `${e.server}/${e.name}`));
    this.open.set(tag, {
      startTime: Date.now(),
      attributes: {
        ...(this.session === undefined ? {} : { "vigil.session": this.session }),
        "vigil.events.batch.tag": tag,
        "vigil.events.batch.size": batch.length,
        "vigil.events.behavior": behavior,
        "vigil.events.servers": servers,
        "vigil.events.names": names,
      },
    });
  }

  /** The batches `tags` came back from the run `runId` (tags this coalescer never opened are ignored). */
  settled(tags: readonly string[], runId: string, outcome: BatchOutcome, errorType?: string): void {
    if (this.open.size === 0) return;
    for (const tag of tags) {
      const o = this.open.get(tag);
      if (o === undefined) continue;
      this.open.delete(tag);
      const span: TraceSpan = startSpan("vigil.events.deliver", {
        parent: keptSpan(runId),
        startTime: o.startTime,
        attributes: { ...o.attributes, "vigil.run.id": runId, "vigil.events.outcome": outcome },
      });
      if (outcome === "returned") span.fail(errorType ?? "returned");
      span.end();
    }
  }

  clear(): void {
    this.open.clear();
  }
}

function distinct(values: string[]): string[] {
  const out = [...new Set(values)];
  return out.slice(0, MAX_NAMES).map((v) => (v.length > MAX_NAME_CHARS ? `${v.slice(0, MAX_NAME_CHARS)}…` : v));
}
