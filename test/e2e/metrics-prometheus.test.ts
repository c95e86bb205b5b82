/**
 * A real Prometheus scrapes `vigil serve` during an events run (issue 15, "Tests (real parts)"):
 * Debian's prometheus binary (`make debian-tools` puts it in .tools/debian), its own config and
 * data dir in a temp dir, on a free loopback port, scraping the daemon's `/metrics` every second.
 * The daemon polls the events fixture for a configured subscription and hands the events to the
 * mock model; the test then asks Prometheus's HTTP API for what it scraped: every emitted event
 * delivered, received and acknowledged series labelled by server, event and mode, the queue back
 * at 0, and an acknowledgement latency observed per event.
 *
 * Where the binary is missing the test skips with a printed reason — except under CI, where it
 * fails: CI must have it (scripts/ci-debian-tools.sh).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { debianTool, skipWithout } from "../helpers/debian-tools.ts";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { EVENTS_SESSION, eventsEnvironment, httpServer, inBatch, startEventsDaemon, waitRuns } from "../helpers/events-serve.ts";
import { LineClient, tmpDir } from "../helpers/fixture.ts";
import { freePort } from "../helpers/webhook-serve.ts";
import { waitFor } from "../helpers/wait.ts";

const cleanups = e2eSuite();

const PROMETHEUS = debianTool("prometheus");
const SKIP = skipWithout("metrics-prometheus", PROMETHEUS === null ? "no prometheus binary in .tools/debian/usr/bin or on PATH" : null);

/** Prometheus answers its API and scrapes within these (it scrapes every second). */
const PROMETHEUS_WAIT_MS = 30_000;
const N = 5;
const SERVER = "tickets";
const EVENT = "build.finished";

interface Prometheus {
  base: string;
  /** The instant vector of a PromQL query. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** The scrape target's health as last read by `query` (for a failure message). */
  lastTargets(): unknown;
  stderr(): string;
}

async function startPrometheus(target: string): Promise<Prometheus> {
  if (PROMETHEUS === null) throw new Error("no prometheus binary: run `make debian-tools` (CI must have it)");
  const tmp = tmpDir("vigil-prometheus-e2e");
  cleanups.add(() => tmp.cleanup());
  const data = tmp.file("data");
  mkdirSync(data);
  const config = tmp.file("prometheus.yml");
  writeFileSync(
    config,
    [
      "global:",
      "  scrape_interval: 1s",
      "  scrape_timeout: 900ms",
      "  evaluation_interval: 1s",
      "scrape_configs:",
      "  - job_name: vigil",
      "    metrics_path: /metrics",
      "    static_configs:",
      `      - targets: ["${target}"]`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Its own process group (LineClient's default): the end signals the group, never anything else.
  const proc = new LineClient(
    [PROMETHEUS, `--config.file=${config}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { cwd: tmp.path },
  );
  cleanups.add(async () => {
    proc.killGroup("SIGTERM");
    if ((await proc.exited(10_000).catch(() => null)) === null) await proc.dispose();
  });
  const fetchJson = async (path: string) => {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000) });
    return (await res.json()) as { status: string; data: any };
  };
  let targets: unknown = null;
  await waitFor(
    async () => {
      try {
        return (await fetch(`${base}/-/ready`, { signal: AbortSignal.timeout(2000) })).status === 200;
      } catch {
        return false;
      }
    },
    { timeoutMs: PROMETHEUS_WAIT_MS, label: "prometheus ready", intervalMs: 100, show: () => proc.stderrText().slice(-2000) },
  );
  return {
    base,
    async query(promql) {
      const body = await fetchJson(`/api/v1/query?query=${encodeURIComponent(promql)}`);
      if (body.status !== "success") throw new Error(`prometheus: query ${promql} failed: ${JSON.stringify(body)}`);
      targets = (await fetchJson("/api/v1/targets")).data?.activeTargets?.map((t: any) => ({ health: t.health, lastError: t.lastError, url: t.scrapeUrl }));
      return body.data.result;
    },
    lastTargets: () => targets,
    stderr: () => proc.stderrText(),
  };
}

/** The one value of a query's result (NaN when it has none yet). */
const scalar = (r: { value: [number, string] }[]): number => (r.length === 1 ? Number(r[0]!.value[1]) : Number.NaN);

describe("a real Prometheus scrapes vigil serve", () => {
  test.skipIf(SKIP)(`during an events run: ${N} events delivered, received and acknowledged by server, event and mode, the queue back at 0`, async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, SERVER, [{ name: EVENT, delivery: "poll" }])],
    });
    const d = await startEventsDaemon(cleanups, env);
    const target = new URL(d.base).host;
    // The route answers before Prometheus is asked (a clearer failure than an empty query).
    const direct = await fetch(`${d.base}/metrics`, { signal: AbortSignal.timeout(5000) });
    expect(direct.status).toBe(200);
    expect(direct.headers.get("content-type")).toContain("text/plain; version=0.0.4");

    const prom = await startPrometheus(target);
    const ids = Array.from({ length: N }, (_, i) => `prom-${i + 1}`);
    for (const id of ids) await env.fixture!.control("emit", { name: EVENT, event_id: id });
    for (const id of ids) await waitRuns(env.model, inBatch(id), 1, E2E_WAIT_MS);

    const until = async (promql: string, done: (v: number) => boolean, label: string) =>
      waitFor(async () => scalar(await prom.query(promql)), {
        until: done,
        timeoutMs: PROMETHEUS_WAIT_MS,
        intervalMs: 250,
        label: `prometheus: ${label} (${promql})`,
        show: (v) => `${v}; targets ${JSON.stringify(prom.lastTargets())}; prometheus stderr: ${prom.stderr().slice(-1000)}`,
      });
    expect(await until("sum(vigil_events_delivered_total)", (v) => v === N, `${N} events delivered`)).toBe(N);

    const labels = { server: SERVER, event: EVENT, mode: "poll" };
    const selector = `{server="${SERVER}",event="${EVENT}",mode="poll"}`;
    expect(await until(`vigil_events_received_total${selector}`, (v) => v >= N, "received by server, event and mode")).toBeGreaterThanOrEqual(N);
    expect(await until(`vigil_events_acknowledged_total${selector}`, (v) => v === N, "acknowledged by server, event and mode")).toBe(N);
    const delivered = await prom.query("vigil_events_delivered_total");
    expect(delivered.map((r) => ({ server: r.metric.server, event: r.metric.event, mode: r.metric.mode, value: r.value[1] }))).toEqual([{ ...labels, value: String(N) }]);
    expect(await until(`vigil_events_pending{session="${EVENTS_SESSION}"}`, (v) => v === 0, "the events session's queue empty")).toBe(0);
    expect(await until(`vigil_events_pending_bytes{session="${EVENTS_SESSION}"}`, (v) => v === 0, "no pending bytes")).toBe(0);
    expect(await until('sum(vigil_events_ack_latency_seconds_count{mode="poll"})', (v) => v >= N, "an ack latency per event")).toBeGreaterThanOrEqual(N);
    expect(await until('sum(vigil_events_delivery_latency_seconds_count{mode="poll"})', (v) => v === N, "a delivery latency per event")).toBe(N);
    expect(await until(`vigil_events_subscriptions{server="${SERVER}",mode="poll",state="active"}`, (v) => v === 1, "the subscription active")).toBe(1);
    expect(await until('up{job="vigil"}', (v) => v === 1, "the target up")).toBe(1);
    expect(prom.stderr()).not.toContain("level=error");
  }, 120_000);
});
