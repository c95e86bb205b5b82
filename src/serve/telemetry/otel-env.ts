/**
 * The standard OpenTelemetry environment variables, as `vigil serve` reads them for traces (issue 15
 * item 2; the OTLP exporter and SDK environment specifications). Pure: it reads the given
 * environment and either says what to export where, says traces are off (null), or refuses with
 * one usage error (exit 2) listing every problem — at start, before anything runs.
 *
 * - Off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
 *   (`/v1/traces` appended to its path) is set; off as well with `OTEL_SDK_DISABLED=true` or
 *   `OTEL_TRACES_EXPORTER=none`. When off, nothing else is read, so a leftover variable of another
 *   program never refuses serve.
 * - `OTEL_TRACES_EXPORTER`: `otlp` (the default) or `none`; anything else (`console`, `zipkin`) is
 *   refused: vigil has only the OTLP exporter.
 * - `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`: `http/json` or `http/protobuf` (both are served by
 *   OTLP/HTTP receivers, which take either encoding; vigil sends JSON); `grpc` is refused.
 * - `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS`: `key=value` pairs separated by commas, values
 *   percent-decoded; the traces variable wins per key. The values are credentials: the problems
 *   name the variable and the position (and a key), never a value, and the caller registers every
 *   value with the scrubber.
 * - `OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT`: milliseconds per export (default 10000, at most 60000).
 * - `OTEL_SERVICE_NAME`: the resource's `service.name` (default `vigil`).
 * - An endpoint is an http(s) URL without user info (credentials belong in the headers, where they
 *   are scrubbed) or fragment; its query, if any, is treated as a secret too.
 */
import { VigilError } from "../../shared/errors.ts";
import type { Env } from "../config/env.ts";

export interface TracingSettings {
  /** Where spans are POSTed (the traces endpoint, `/v1/traces` already appended when it applies). */
  url: string;
  /** Header name (as given) → value (percent-decoded). Secrets. */
  headers: Record<string, string>;
  serviceName: string;
  timeoutMs: number;
  /** The endpoint as a log line may show it: origin and path, never the query. */
  shown: string;
  /** Secret parts of the endpoint (its query), to register with the scrubber. */
  urlSecrets: string[];
}

export const OTEL_LIMITS = {
  urlChars: 2048,
  headersChars: 8192,
  headers: 64,
  headerKeyChars: 256,
  serviceNameChars: 256,
  maxTimeoutMs: 60_000,
} as const;

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_SERVICE_NAME = "vigil";
/** RFC 9110 token: what a header name may be made of. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v.trim() === "" ? undefined : v.trim());
const quote = (s: string, max = 64) => JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);

/** The traces settings, null when traces are off; throws VigilError("usage") listing every problem. */
export function tracingSettings(env: Env): TracingSettings | null {
  if (nonEmpty(env.OTEL_SDK_DISABLED)?.toLowerCase() === "true") return null;
  const problems: string[] = [];
  const exporters = (nonEmpty(env.OTEL_TRACES_EXPORTER) ?? "otlp").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
  if (exporters.includes("none")) return null;
  const unsupported = exporters.filter((e) => e !== "otlp");
  if (unsupported.length > 0) problems.push(`OTEL_TRACES_EXPORTER: ${quote(unsupported.join(","))} is not supported: vigil exports traces over OTLP/HTTP only (use "otlp" or "none")`);

  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (tracesEndpoint === undefined && endpoint === undefined) return null;
  const target = tracesEndpoint !== undefined
    ? parseEndpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint, false, problems)
    : parseEndpoint("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint!, true, problems);

  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = nonEmpty(env[name]);
    if (protocol !== undefined && protocol !== "http/json" && protocol !== "http/protobuf") {
      problems.push(`${name}: ${quote(protocol)} is not supported: vigil exports over OTLP/HTTP (use "http/json" or "http/protobuf")`);
    }
  }
  const headers = {
    ...parseHeaders("OTEL_EXPORTER_OTLP_HEADERS", env.OTEL_EXPORTER_OTLP_HEADERS, problems),
    ...parseHeaders("OTEL_EXPORTER_OTLP_TRACES_HEADERS", env.OTEL_EXPORTER_OTLP_TRACES_HEADERS, problems),
  };
  const timeoutMs = parseTimeout("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, problems)
    ?? parseTimeout("OTEL_EXPORTER_OTLP_TIMEOUT", env.OTEL_EXPORTER_OTLP_TIMEOUT, problems)
    ?? DEFAULT_TIMEOUT_MS;
  const serviceName = nonEmpty(env.OTEL_SERVICE_NAME) ?? DEFAULT_SERVICE_NAME;
  if (serviceName.length > OTEL_LIMITS.serviceNameChars) problems.push(`OTEL_SERVICE_NAME: longer than ${OTEL_LIMITS.serviceNameChars} characters`);

  if (problems.length > 0 || target === null) {
    throw new VigilError("usage", problems.join("\n"), { hint: "fix or unset the OTEL_* variables named above (traces are off when no OTLP endpoint is set)" });
  }
  return { ...target, headers, serviceName, timeoutMs };
}

function parseEndpoint(name: string, raw: string, appendPath: boolean, problems: string[]): Pick<TracingSettings, "url" | "shown" | "urlSecrets"> | null {
  if (raw.length > OTEL_LIMITS.urlChars) {
    problems.push(`${name}: longer than ${OTEL_LIMITS.urlChars} characters`);
    return null;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`${name}: not a URL (expected http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:4318)`);
    return null;
  }
  const before = problems.length;
  if (url.protocol !== "http:" && url.protocol !== "https:") problems.push(`${name}: expected an http:// or https:// URL (got ${quote(url.protocol)})`);
  if (url.username !== "" || url.password !== "") problems.push(`${name}: the URL carries credentials; put them in OTEL_EXPORTER_OTLP_HEADERS (e.g. authorization=Basic%20…), where they are kept out of every log line`);
  if (url.hash !== "") problems.push(`${name}: the URL has a fragment (#…)`);
  if (problems.length > before) return null;
  // The generic endpoint is a base: the signal's path goes after whatever path it has.
  if (appendPath) url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`;
  return { url: url.href, shown: `${url.origin}${url.pathname}`, urlSecrets: url.search === "" ? [] : [url.search.slice(1), ...[...url.searchParams.values()]] };
}

/**
 * `key=value,key2=value2` (the OTLP exporter spec: W3C Baggage without properties). Members are
 * trimmed, empty members skipped; a member without `=`, with a key that is not a header name, or
 * with a value that does not percent-decode (or decodes to a control character) is a problem.
 */
export function parseHeaders(name: string, raw: string | undefined, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined || raw.trim() === "") return out;
  if (raw.length > OTEL_LIMITS.headersChars) {
    problems.push(`${name}: longer than ${OTEL_LIMITS.headersChars} characters`);
    return out;
  }
  const members = raw.split(",");
  let count = 0;
  members.forEach((member, i) => {
    if (member.trim() === "") return;
    const where = `${name}: entry ${i + 1}`;
    if (++count > OTEL_LIMITS.headers) {
      if (count === OTEL_LIMITS.headers + 1) problems.push(`${name}: more than ${OTEL_LIMITS.headers} headers`);
      return;
    }
    const eq = member.indexOf("=");
    if (eq < 0) {
      // No key can be told apart from the value here: name the position only.
      problems.push(`${where}: expected key=value`);
      return;
    }
    const key = member.slice(0, eq).trim();
    if (key.length === 0 || key.length > OTEL_LIMITS.headerKeyChars || !HEADER_NAME.test(key)) {
      problems.push(`${where}: the key is not a valid header name`);
      return;
    }
    let value: string;
    try {
      value = decodeURIComponent(member.slice(eq + 1).trim());
    } catch {
      problems.push(`${where} (${quote(key)}): the value is not valid percent-encoding`);
      return;
    }
    // Control characters (a tab aside) would split or forge a header line: refused.
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) {
      problems.push(`${where} (${quote(key)}): the value holds a control character`);
      return;
    }
    out[key] = value;
  });
  return out;
}

function parseTimeout(name: string, raw: string | undefined, problems: string[]): number | undefined {
  const v = nonEmpty(raw);
  if (v === undefined) return undefined;
  const n = /^\d{1,9}$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= 1 && n <= OTEL_LIMITS.maxTimeoutMs)) {
    problems.push(`${name}: expected milliseconds from 1 to ${OTEL_LIMITS.maxTimeoutMs} (got ${quote(v, 16)})`);
    return undefined;
  }
  return n;
}
