/**
 * The tracing façade (issue 15 item 2): the run loop, the tool gateway and the events coalescer
 * start spans through these few functions and never see OpenTelemetry. Until a backend is
 * installed (serve/telemetry/tracing.ts does it when the `OTEL_*` variables ask for traces) every
 * span is the one no-op span, so instrumented code costs a function call and nothing is kept.
 *
 * What goes in attributes is the caller's promise: names, ids, counts, codes — never tool
 * arguments, payloads, prompts or message text (the spans leave the process). Errors carry
 * `error.type` (a low-cardinality code), never a message, for the same reason.
 */

export type AttributeValue = string | number | boolean | readonly string[];
/** Undefined members are left out (so callers can write optional attributes inline). */
export type Attributes = Readonly<Record<string, AttributeValue | undefined>>;

export interface TraceSpan {
  /** False for the no-op span: callers may skip work that only feeds attributes. */
  readonly recording: boolean;
  set(attributes: Attributes): void;
  /** Status ERROR with `error.type` = `errorType` (a stable code; never a message). */
  fail(errorType: string): void;
  end(): void;
}

export interface SpanOptions {
  /** "internal" (default) or "client" (a request to another process: the model). */
  kind?: "internal" | "client";
  /** The parent span; absent or null: a new trace (a root span), never an ambient one. */
  parent?: TraceSpan | null;
  attributes?: Attributes;
  /** When the span began, epoch milliseconds (default: now). */
  startTime?: number;
}

/** What a backend provides: the one way spans are made. */
export interface TracingBackend {
  startSpan(name: string, options: SpanOptions): TraceSpan;
}

const NOOP_SPAN: TraceSpan = Object.freeze({
  recording: false,
  set: () => {},
  fail: () => {},
  end: () => {},
});

let backend: TracingBackend | null = null;

/** Installs the backend (once, at start); null uninstalls it (tests). */
export function installTracing(b: TracingBackend | null): void {
  backend = b;
  kept.clear();
}

export function tracingEnabled(): boolean {
  return backend !== null;
}

export function startSpan(name: string, options: SpanOptions = {}): TraceSpan {
  if (backend === null) return NOOP_SPAN;
  try {
    return backend.startSpan(name, options);
  } catch {
    // Tracing must never fail the work it watches.
    return NOOP_SPAN;
  }
}

/**
 * Spans kept by a key (a run id) for a later child whose work learns of its parent only by that
 * key, after the parent ended: an event batch is reported delivered by the run that carried it.
 * Bounded: the oldest keys go first, so a lookup long after the fact finds nothing (the child is
 * then a root span).
 */
const MAX_KEPT = 1024;
const kept = new Map<string, TraceSpan>();

export function keepSpan(key: string, span: TraceSpan): void {
  if (!span.recording) return;
  kept.delete(key);
  kept.set(key, span);
  if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
}

export function keptSpan(key: string): TraceSpan | null {
  return kept.get(key) ?? null;
}

/**
 * The conventions the spans follow (named in each span module): the OpenTelemetry GenAI semantic
 * conventions (spans, agent spans, MCP) of semantic-conventions-genai v0.1.0 — Development status,
 * the conventions that left the main repository after semantic conventions v1.45.0 — and
 * semantic conventions v1.45.0 for `service.*` and `error.type`.
 */
export const GENAI_SEMCONV = "semantic-conventions-genai v0.1.0 (on semantic conventions v1.45.0)";
/** The schema URL of the tracer's scope (the semantic conventions version the spans use). */
export const SEMCONV_SCHEMA_URL = "https://opentelemetry.io/schemas/1.45.0";
