// The OTEL_* variables as `vigil serve` reads them for traces (issue 15 item 2): off unless an OTLP
// endpoint is set, the standard switches honoured, malformed values refused with messages that
// never show a header value.
import { describe, expect, test } from "bun:test";
import { parseHeaders, tracingSettings } from "../../../src/serve/telemetry/otel-env.ts";
import { exportFailure } from "../../../src/serve/telemetry/tracing.ts";
import { refusalOf } from "../../helpers/refusal.ts";

const SECRET = "Bearer s3cr3t-token-value";

const refusal = (env: Record<string, string>) => refusalOf(() => tracingSettings(env));

describe("OTEL_* for traces", () => {
  test("off without an endpoint, whatever else is set", () => {
    expect(tracingSettings({})).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_HEADERS: "not a header", OTEL_SERVICE_NAME: "x" })).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBeNull();
  });

  test("off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, even with a bad endpoint", () => {
    expect(tracingSettings({ OTEL_SDK_DISABLED: "TRUE", OTEL_EXPORTER_OTLP_ENDPOINT: "::bad::" })).toBeNull();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "::bad::" })).toBeNull();
    // Any other value of OTEL_SDK_DISABLED is false (the SDK environment spec).
    expect(tracingSettings({ OTEL_SDK_DISABLED: "yes", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).not.toBeNull();
  });

  test("the generic endpoint gets /v1/traces appended to its path; the traces endpoint is used as it is", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toMatchObject({ url: "http://127.0.0.1:4318/v1/traces", serviceName: "vigil", timeoutMs: 10_000, headers: {} });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example/base/" })!.url).toBe("https://otel.example/base/v1/traces");
    const both = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:2/custom" })!;
    expect(both.url).toBe("http://b:2/custom");
    expect(both.shown).toBe("http://b:2/custom");
  });

  test("an endpoint's query is kept out of what is shown and registered as secret", () => {
    const s = tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://ingest.example/v1/traces?api_key=abcdef123456" })!;
    expect(s.url).toBe("https://ingest.example/v1/traces?api_key=abcdef123456");
    expect(s.shown).toBe("https://ingest.example/v1/traces");
    expect(s.urlSecrets).toContain("abcdef123456");
  });

  test("service name, timeout, and headers (the traces variable wins per key, values percent-decoded)", () => {
    const s = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_SERVICE_NAME: "gateway-1",
      OTEL_EXPORTER_OTLP_TIMEOUT: "5000",
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "3000",
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=${encodeURIComponent(SECRET)}, x-tenant = acme ,,`,
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=traces-tenant",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    })!;
    expect(s).toMatchObject({ serviceName: "gateway-1", timeoutMs: 3000, headers: { authorization: SECRET, "x-tenant": "traces-tenant" } });
  });

  test("malformed values are refused at once, every problem listed, no header value shown", () => {
    const e = refusal({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=${SECRET}%zz,${SECRET},bad key=${SECRET}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: "soon",
      OTEL_TRACES_EXPORTER: "console",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    });
    expect(e.exitCode).toBe(2);
    const lines = e.message.split("\n");
    expect(lines).toHaveLength(6);
    expect(e.message).toContain('OTEL_EXPORTER_OTLP_HEADERS: entry 1 ("authorization"): the value is not valid percent-encoding');
    expect(e.message).toContain("OTEL_EXPORTER_OTLP_HEADERS: entry 2: expected key=value");
    expect(e.message).toContain("OTEL_EXPORTER_OTLP_HEADERS: entry 3: the key is not a valid header name");
    expect(e.message).toContain("OTEL_EXPORTER_OTLP_TIMEOUT: expected milliseconds");
    expect(e.message).toContain('OTEL_TRACES_EXPORTER: "console" is not supported');
    expect(e.message).toContain('OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported');
    expect(e.message).not.toContain("s3cr3t");
    expect(e.hint ?? "").not.toContain("s3cr3t");
  });

  test("endpoints that are not http(s) URLs, carry credentials or a fragment are refused", () => {
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" }).message).toContain("expected an http:// or https:// URL");
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }).message).toContain("OTEL_EXPORTER_OTLP_ENDPOINT: not a URL");
    const creds = refusal({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://user:hunter2-password@otel.example/v1/traces" });
    expect(creds.message).toContain("the URL carries credentials");
    expect(creds.message).not.toContain("hunter2");
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1/#x" }).message).toContain("fragment");
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://a/${"x".repeat(3000)}` }).message).toContain("longer than");
  });

  test("header strings are bounded", () => {
    const problems: string[] = [];
    parseHeaders("H", Array.from({ length: 70 }, (_, i) => `k${i}=v`).join(","), problems);
    expect(problems).toEqual(["H: more than 64 headers"]);
    const long: string[] = [];
    expect(parseHeaders("H", `a=${"x".repeat(9000)}`, long)).toEqual({});
    expect(long).toEqual(["H: longer than 8192 characters"]);
    const control: string[] = [];
    parseHeaders("H", "a=line%0Abreak", control);
    expect(control).toEqual(['H: entry 1 ("a"): the value holds a control character']);
  });
});

describe("export failures, in a word", () => {
  test("an HTTP status, an errno, a timeout, never the error's text", () => {
    expect(exportFailure(Object.assign(new Error("body echoes s3cr3t"), { code: 401 }))).toBe("HTTP 401");
    expect(exportFailure(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1 s3cr3t"), { code: "ECONNREFUSED" }))).toBe("ECONNREFUSED");
    expect(exportFailure(Object.assign(new Error("x"), { name: "TimeoutError" }))).toBe("timeout");
    expect(exportFailure(new Error("s3cr3t"))).toBe("Error");
    expect(exportFailure("s3cr3t")).toBe("unknown error");
  });
});
