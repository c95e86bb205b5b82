/**
 * An OTLP/HTTP trace receiver for the tests (issue 15 item 2): `Bun.serve` on 127.0.0.1 port 0,
 * recording every request (path, headers, raw body) and decoding the spans of the JSON encoding
 * (what vigil's exporter sends; a protobuf body is recorded, counted as `protobuf`, and not
 * decoded, so a test that expects spans fails on it). Answers 200 `{}` as a collector does.
 */
import type { Server } from "bun";
import type { Cleanups } from "./cleanups.ts";
import { waitFor } from "./wait.ts";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: OtlpValue[] } };

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 internal, 3 client (OTLP's SpanKind). */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: { key: string; value: OtlpValue }[];
  status?: { code?: number; message?: string };
  /** Added by the receiver: the resource's attributes. */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly requests: readonly ReceivedRequest[];
  /** Every span decoded so far, in arrival order. */
  spans(): OtlpSpan[];
  /** Waits (bounded) until `done(spans)` holds; returns the spans. */
  until(done: (spans: OtlpSpan[]) => boolean, label: string, timeoutMs?: number): Promise<OtlpSpan[]>;
}

export function value(v: OtlpValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

/** A span's attributes as a plain object. */
export function attrs(span: Pick<OtlpSpan, "attributes">): Record<string, unknown> {
  return Object.fromEntries((span.attributes ?? []).map((a) => [a.key, value(a.value)]));
}

export function startOtlpReceiver(cleanups: Cleanups): OtlpReceiver {
  const requests: ReceivedRequest[] = [];
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    reusePort: false,
    idleTimeout: 30,
    maxRequestBodySize: 16 * 1024 * 1024,
    async fetch(req) {
      requests.push({ method: req.method, path: new URL(req.url).pathname, headers: Object.fromEntries(req.headers), body: await req.text() });
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
  cleanups.add(() => server.stop(true));
  const spans = (): OtlpSpan[] => {
    const out: OtlpSpan[] = [];
    for (const r of requests) {
      if (!(r.headers["content-type"] ?? "").startsWith("application/json")) continue;
      const body = JSON.parse(r.body) as { resourceSpans?: { resource?: { attributes?: OtlpSpan["attributes"] }; scopeSpans?: { spans?: Omit<OtlpSpan, "resource">[] }[] }[] };
      for (const rs of body.resourceSpans ?? []) {
        const resource = attrs(rs.resource ?? {});
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) out.push({ ...s, resource });
      }
    }
    return out;
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    spans,
    until: (done, label, timeoutMs = 20_000) =>
      waitFor(spans, { until: done, timeoutMs, label: `OTLP receiver: ${label}`, show: (s) => s.map((x) => x.name) }),
  };
}
