// The tracing façade (shared/tracing.ts) and the spans built on it that need no process: the no-op
// default, kept spans, a backend that throws, the event batch spans (events/delivery-span.ts) and
// the model error types (serve/run/run-tracing.ts).
import { afterEach, describe, expect, test } from "bun:test";
import { DeliverySpans } from "../../../src/events/delivery-span.ts";
import type { PendingEntry } from "../../../src/events/types.ts";
import { modelErrorType } from "../../../src/serve/run/run-tracing.ts";
import { ModelError } from "../../../src/serve/models/types.ts";
import { type Attributes, type SpanOptions, type TraceSpan, installTracing, keepSpan, keptSpan, startSpan, tracingEnabled } from "../../../src/shared/tracing.ts";

interface Recorded {
  name: string;
  options: SpanOptions;
  attributes: Record<string, unknown>;
  error: string | null;
  ended: boolean;
}

function recordingBackend(): Recorded[] {
  const spans: Recorded[] = [];
  installTracing({
    startSpan(name, options) {
      const r: Recorded = { name, options, attributes: { ...(options.attributes ?? {}) }, error: null, ended: false };
      spans.push(r);
      const span: TraceSpan & { r: Recorded } = {
        r,
        recording: true,
        set: (a: Attributes) => void Object.assign(r.attributes, a),
        fail: (t) => void (r.error = t),
        end: () => void (r.ended = true),
      };
      return span;
    },
  });
  return spans;
}

const entry = (seq: number, server: string, name: string): PendingEntry =>
  ({ seq, server, name, arguments: {}, action: "follow_up", event: { eventId: `e-${seq}`, data: { secret: "PAYLOAD" } } }) as unknown as PendingEntry;

afterEach(() => installTracing(null));

describe("the tracing façade", () => {
  test("without a backend every span is the one no-op span and nothing is kept", () => {
    expect(tracingEnabled()).toBe(false);
    const span = startSpan("x", { attributes: { a: 1 } });
    expect(span.recording).toBe(false);
    span.set({ b: 2 });
    span.fail("e");
    span.end();
    keepSpan("run-1", span);
    expect(keptSpan("run-1")).toBeNull();
  });

  test("a backend that throws yields the no-op span: tracing never fails the work", () => {
    installTracing({ startSpan: () => { throw new Error("broken exporter"); } });
    expect(startSpan("x").recording).toBe(false);
  });

  test("kept spans are bounded: the oldest keys go first", () => {
    recordingBackend();
    const first = startSpan("run");
    keepSpan("run-0", first);
    for (let i = 1; i <= 1024; i++) keepSpan(`run-${i}`, startSpan("run"));
    expect(keptSpan("run-0")).toBeNull();
    expect(keptSpan("run-1024")).not.toBeNull();
  });
});

describe("event batch spans", () => {
  test("a delivered batch is a span under the run that carried it, from its injection, names and counts only", () => {
    const spans = recordingBackend();
    const run = startSpan("invoke_agent vigil");
    keepSpan("run-7", run);
    const d = new DeliverySpans("mcp-events");
    d.opened("mcp_events:1", [entry(1, "tickets", "ticket.updated"), entry(2, "tickets", "ticket.updated"), entry(3, "ci", "build.failed")], "follow_up");
    expect(spans).toHaveLength(1); // nothing until it is reported
    d.settled(["mcp_events:1", "mcp_events:unknown"], "run-7", "delivered");
    const batch = spans[1]!;
    expect(batch.name).toBe("vigil.events.deliver");
    expect((batch.options.parent as unknown as { r: Recorded }).r).toBe(spans[0]!);
    expect(typeof batch.options.startTime).toBe("number");
    expect(batch.attributes).toEqual({
      "vigil.session": "mcp-events",
      "vigil.events.batch.tag": "mcp_events:1",
      "vigil.events.batch.size": 3,
      "vigil.events.behavior": "follow_up",
      "vigil.events.servers": ["tickets", "ci"],
      "vigil.events.names": ["tickets/ticket.updated", "ci/build.failed"],
      "vigil.run.id": "run-7",
      "vigil.events.outcome": "delivered",
    });
    expect(JSON.stringify(batch.attributes)).not.toContain("PAYLOAD");
    expect(batch.error).toBeNull();
    expect(batch.ended).toBe(true);
    // Reported once: a second report of the same tag makes no second span.
    d.settled(["mcp_events:1"], "run-7", "delivered");
    expect(spans).toHaveLength(2);
  });

  test("a returned batch fails with the run's code; one no run is known for is a root span; names are bounded", () => {
    const spans = recordingBackend();
    const d = new DeliverySpans(undefined);
    d.opened("t", Array.from({ length: 40 }, (_, i) => entry(i, `s${i}`, "e")), "steer");
    d.settled(["t"], "run-gone", "returned", "model_unavailable");
    expect(spans[0]!.options.parent).toBeNull();
    expect(spans[0]!.error).toBe("model_unavailable");
    expect(spans[0]!.attributes["vigil.events.servers"]).toHaveLength(16);
    expect(spans[0]!.attributes["vigil.session"]).toBeUndefined();
  });

  test("with tracing off nothing is kept", () => {
    const d = new DeliverySpans("s");
    d.opened("t", [entry(1, "a", "b")], "follow_up");
    const spans = recordingBackend();
    d.settled(["t"], "r", "delivered");
    expect(spans).toEqual([]);
  });
});

describe("model request error types", () => {
  test("the HTTP status, else the ModelError kind, else _OTHER", () => {
    expect(modelErrorType(new ModelError("http", "model HTTP 429", { status: 429 }))).toBe("429");
    expect(modelErrorType(new ModelError("timeout", "t"))).toBe("timeout");
    expect(modelErrorType(new ModelError("connect", "c"))).toBe("connect");
    expect(modelErrorType(new Error("x"))).toBe("_OTHER");
  });
});
