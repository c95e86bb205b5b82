/**
 * `GET /metrics` (issue 15 item 1, serve.md "Operations"): the process's one registry in the
 * Prometheus text exposition format 0.0.4, rendered only here, on a scrape. Served on the daemon's
 * listener, or — with `--metrics-listen HOST:PORT` — on a second, loopback-only listener that
 * answers nothing else (then the main listener answers 404 on /metrics, so the public front door
 * shows no metrics). With `VIGIL_METRICS=off` there is no route at all.
 */
import type { Server } from "bun";
import { METRICS } from "../../shared/metrics/catalog.ts";
import { EXPOSITION_CONTENT_TYPE, renderMetrics } from "../../shared/metrics/render.ts";
import { jsonError } from "./http.ts";
import { type ListenAddress, bindRefusal, listenUrl } from "./listen.ts";

export const METRICS_PATH = "/metrics";

/** The answer to a request on `/metrics`: the scrape for GET and HEAD, 405 otherwise. */
export function metricsResponse(req: Request): Response {
  if (req.method !== "GET" && req.method !== "HEAD") return jsonError(405, "method_not_allowed", "use GET", { allow: "GET" });
  return new Response(renderMetrics(METRICS), { headers: { "content-type": EXPOSITION_CONTENT_TYPE, "cache-control": "no-store" } });
}

export interface MetricsListener {
  /** `http://host:port`, the port actually bound. */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts the `--metrics-listen` listener. Requests carry no body worth reading (a scrape is a
 * GET), so the body cap is tiny; a bind failure is a usage error naming the flag (exit 2).
 */
export function startMetricsListener(address: ListenAddress): MetricsListener {
  let server: Server<undefined>;
  try {
    server = Bun.serve({
      hostname: address.hostname,
      port: address.port,
      development: false,
      reusePort: false,
      maxRequestBodySize: 1024,
      idleTimeout: 30,
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        if (path === METRICS_PATH) return metricsResponse(req);
        return jsonError(404, "not_found", `no such endpoint: ${req.method} ${path.slice(0, 200)} (this listener serves ${METRICS_PATH} only)`);
      },
      error: () => jsonError(500, "internal", "internal error"),
    });
  } catch (e) {
    throw bindRefusal("--metrics-listen", address, e);
  }
  return {
    url: listenUrl(address.hostname, server.port ?? address.port),
    stop: () => server.stop(true),
  };
}
