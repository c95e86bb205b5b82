/**
 * OpenTelemetry traces of `vigil serve` (issue 15 item 2): the backend behind the tracing façade
 * (shared/tracing.ts), built from the official OpenTelemetry JS packages — the API, the SDK's
 * tracer provider and BatchSpanProcessor, the OTLP/HTTP trace exporter (JSON) and the resource. They
 * work unchanged inside the compiled binary (checked with `bun build --compile`;
 * test/e2e/otel-traces.test.ts runs against dist/vigil). The SDK is `@opentelemetry/sdk-trace`, SDK
 * 3's name for `sdk-trace-base`: the last `sdk-trace-base` (2.12.1) wants `@opentelemetry/api`
 * below 1.10 and the 0.2xx exporters, while the current exporter (0.301.0) depends on
 * `sdk-trace` 3.1.0 exactly — taking `sdk-trace-base` would bundle two SDKs. Loaded (a dynamic import in main.ts) only when the `OTEL_*` variables turn
 * traces on (otel-env.ts), so a serve without them never loads the SDK.
 *
 * - Bounded: the processor's queue holds at most MAX_QUEUE spans (more are dropped, never
 *   buffered without end), exports go out every EXPORT_DELAY_MS or per MAX_BATCH, each bounded by
 *   the export timeout; at shutdown the queue is flushed within FLUSH_MS, then serve exits anyway.
 * - An unreachable or refusing collector never blocks or fails serve: spans are dropped, and the
 *   failure is logged at most once per REPORT_EVERY_MS (what failed — an errno or HTTP status —
 *   never a response body), plus one line when exports work again. Spans still unconfirmed when the
 *   exit's flush ends (the processor's export timeout or FLUSH_MS came first: the exporter may be
 *   between retries, or the collector silent) are dropped with the process, and said so in the same
 *   rate-limited line — an exit never drops spans without a word.
 * - The header values (and the endpoint's query) are credentials: registered with the scrubber
 *   before anything else, so no log line can show them.
 * - Spans have explicit parents (the façade's): no context manager, no ambient context, so
 *   nothing else in the process (the MCP SDK, fetch) is traced by accident.
 */
import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { VERSION } from "../../shared/build-info.ts";
import { errnoCode } from "../../shared/errors.ts";
import { logLine } from "../../shared/log.ts";
import { registerSecrets } from "../../shared/scrub.ts";
import { within } from "../../shared/time.ts";
import { type Attributes, SEMCONV_SCHEMA_URL, type SpanOptions, type TraceSpan, type TracingBackend, installTracing } from "../../shared/tracing.ts";
import type { TracingSettings } from "./otel-env.ts";

const MAX_QUEUE = 2048;
const MAX_BATCH = 512;
const EXPORT_DELAY_MS = 2000;
/** The flush at shutdown: what is not out by then is dropped (serve does not wait on a collector). */
export const FLUSH_MS = 2000;
const REPORT_EVERY_MS = 60_000;
/** Attribute values are names and codes; anything longer is cut (a backstop, not a format). */
const MAX_ATTRIBUTE_CHARS = 1024;

export interface Tracing {
  /** Flushes what is queued (bounded by FLUSH_MS) and stops; never rejects. */
  shutdown(): Promise<void>;
}

/** Starts exporting and installs the backend behind the façade. */
export function startTracing(settings: TracingSettings): Tracing {
  registerSecrets([...Object.values(settings.headers), ...settings.urlSecrets]);
  const exporter = new ReportingExporter(
    new OTLPTraceExporter({ url: settings.url, headers: settings.headers, timeoutMillis: settings.timeoutMs }),
    settings.shown,
  );
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: VERSION }),
    spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_CHARS, attributeCountLimit: 64, eventCountLimit: 0, linkCountLimit: 0 },
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: MAX_QUEUE,
        maxExportBatchSize: MAX_BATCH,
        scheduledDelayMillis: EXPORT_DELAY_MS,
        exportTimeoutMillis: settings.timeoutMs,
      }),
    ],
  });
  const tracer = provider.getTracer("vigil", VERSION, { schemaUrl: SEMCONV_SCHEMA_URL });
  const backend: TracingBackend = {
    startSpan(name: string, options: SpanOptions): TraceSpan {
      const parent = options.parent instanceof OtelTraceSpan ? trace.setSpan(ROOT_CONTEXT, options.parent.span) : ROOT_CONTEXT;
      const span = tracer.startSpan(
        name,
        {
          kind: options.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
          ...(options.attributes === undefined ? {} : { attributes: defined(options.attributes) }),
          ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
        },
        parent,
      );
      return new OtelTraceSpan(span);
    },
  };
  installTracing(backend);
  logLine(`serve: traces: OTLP/HTTP (JSON) to ${settings.shown} as service ${JSON.stringify(settings.serviceName)}`, { code: "traces_on" });
  let stopping: Promise<void> | null = null;
  return {
    shutdown: () =>
      (stopping ??= (async () => {
        installTracing(null);
        exporter.exitStarts();
        await within(provider.shutdown().catch(() => {}), FLUSH_MS);
        exporter.closeAtExit();
      })()),
  };
}

class OtelTraceSpan implements TraceSpan {
  readonly recording = true;
  constructor(readonly span: Span) {}

  set(attributes: Attributes): void {
    this.span.setAttributes(defined(attributes));
  }

  fail(errorType: string): void {
    this.span.setAttribute(ATTR_ERROR_TYPE, errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR });
  }

  end(): void {
    this.span.end();
  }
}

function defined(attributes: Attributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = typeof v === "object" ? [...v] : v;
  return out;
}

/**
 * The exporter, watched: a failed export is reported (rate-limited), a recovery once, and at exit
 * the spans still out. The result codes are the SDK's ExportResultCode (0 success, 1 failed).
 */
class ReportingExporter implements SpanExporter {
  private failures = 0;
  private lastReport = Number.NEGATIVE_INFINITY;
  /** Spans handed to the collector whose export has not ended yet. */
  private unconfirmed = 0;
  /**
   * `flushing`: serve's exit is flushing, so a failure does not promise that serve goes on;
   * `closed`: the exit has said what it dropped, so a late outcome is not reported again.
   */
  private phase: "running" | "flushing" | "closed" = "running";

  constructor(
    private readonly inner: SpanExporter,
    private readonly shown: string,
  ) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter["export"]>[1]): void {
    this.unconfirmed += spans.length;
    this.inner.export(spans, (result) => {
      this.unconfirmed -= spans.length;
      try {
        if (this.phase === "closed") return;
        if (result.code === 0) this.succeeded();
        else this.failed(exportFailure(result.error), spans.length, this.phase === "flushing" ? "serve is exiting" : `serve goes on (next report in ${REPORT_EVERY_MS / 1000} s at the earliest)`);
      } finally {
        done(result);
      }
    });
  }

  /** Serve's exit starts its flush. */
  exitStarts(): void {
    if (this.phase === "running") this.phase = "flushing";
  }

  /** After the exit's flush: what is still out is dropped with the process, and said so. */
  closeAtExit(): void {
    if (this.phase === "closed") return;
    this.phase = "closed";
    if (this.unconfirmed > 0) this.failed("timeout", this.unconfirmed, "serve is exiting: they were unconfirmed when its flush ended");
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  private failed(reason: string, count: number, outcome: string): void {
    this.failures++;
    const now = performance.now();
    if (now - this.lastReport < REPORT_EVERY_MS) return;
    this.lastReport = now;
    logLine(
      `serve: traces: export to ${this.shown} failed (${reason}): ${count} span(s) dropped; ` +
        `${this.failures} failed export(s) so far; ${outcome}`,
      { level: "warn", code: "traces_export_failed" },
    );
  }

  private succeeded(): void {
    if (this.failures === 0) return;
    logLine(`serve: traces: exports to ${this.shown} work again (after ${this.failures} failed)`, { code: "traces_export_recovered" });
    this.failures = 0;
    this.lastReport = Number.NEGATIVE_INFINITY;
  }
}

/** What failed, in a word: an HTTP status, an errno, a timeout — never the error's text (a body may echo anything). */
export function exportFailure(error: unknown): string {
  if (typeof error !== "object" || error === null) return "unknown error";
  const code = (error as { code?: unknown }).code;
  if (typeof code === "number" && Number.isInteger(code) && code >= 100 && code <= 599) return `HTTP ${code}`;
  const errno = errnoCode(error) ?? errnoCode((error as { cause?: unknown }).cause);
  if (errno !== undefined && /^[A-Z][A-Z0-9_]{1,31}$/.test(errno)) return errno;
  const name = (error as { name?: unknown }).name;
  if (typeof name === "string" && /^[A-Za-z]{1,40}$/.test(name)) return /timeout/i.test(name) ? "timeout" : name;
  return "unknown error";
}
