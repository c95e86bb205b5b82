/**
 * What the metrics cost MCP Events ingestion (issue 15: "`bench/events`: ingestion with metrics
 * enabled and a scrape every second vs without, same run: ≤ 3 % slower").
 *
 * The ingestion of bench/events/run.ts (a) — one configured `follow_up` subscription to the events
 * fixture over HTTP, model stalled, a burst of N events timed until the pending log holds N `add`
 * records — but in daemon mode, where the metrics live: `vigil serve --listen 127.0.0.1:0`, the
 * subscription owned by the daemon's events session (`mcp-events`, started at boot), in two setups:
 *
 *   off      `VIGIL_METRICS=off`: the registry disabled (no label sets kept, no collectors, no
 *            lag sampler), no `/metrics` route (checked: 404);
 *   scraped  metrics on (`VIGIL_METRICS=on`), and a scraper in the harness GETting `/metrics` every
 *            1 s from the daemon's start to the end of the run, reading each whole body (like a
 *            Prometheus at a 1 s interval, whose phase against the burst is arbitrary). After the
 *            run one more scrape must show vigil_events_acknowledged_total = N for the run's mode.
 *
 * for poll and for push (push with VIGIL_EVENTS_STREAM_BUFFER=100000, so a burst never overflows
 * the stream buffer and the reconnect cycles of the default 256 do not drown the difference),
 * interleaved over rounds in a rotating order, fresh processes every run; medians over rounds.
 *
 *   bun bench/events/metrics-overhead.ts [--write] [--rounds N] [--events N] [--phases poll,push] [--quick] [--profile DIR]
 *
 *   --write      add or replace the `<!-- bench:events-metrics … -->` section of bench/RESULTS.md
 *   --rounds N   rounds (default 7, at most 15)
 *   --events N   events per run (default 20000)
 *   --phases     poll, push (default both)
 *   --quick      one round of 2,000 events: a smoke test (not written)
 *   --profile D  vigil from source (bun --cpu-prof-md src/cli.ts), one CPU profile per run into D
 *                (figures not comparable, never written)
 *
 * Knobs as in run.ts: VIGIL_EVENTS_POLL_FLOOR_MS=1, VIGIL_EVENTS_COALESCE_MS=0, max pending
 * 1,000,000 / 1 GiB; the fixture answers polls with nextPollMs 20. Every child leads its own process
 * group, every wait is bounded, everything is killed on every way out (../children.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type MockModel, startMockModel } from "../../test/fixtures/mock-model.ts";
import { type Child, exitUnlessDoneWithin, spawnChild, stop, until, waitStderr } from "../children.ts";
import { cpuMsOf } from "../proc.ts";
import { fmt, median, quantile, runBench, table } from "../report.ts";
import { publishResults } from "../results-file.ts";
import { VIGIL, machine, vigilPresent } from "../vigil-under-test.ts";
import { LogTail, startHttpFixture } from "./fixture.ts";
import { SCRAPE_EVERY_MS, SCRAPE_TIMEOUT_MS, Scraper, counterSum, scrape } from "../metrics-scrape.ts";

const ROOT = resolve(import.meta.dir, "../..");
const SESSION = "mcp-events";
const START_MS = 20_000;
const RUN_MS = 60_000;
const NEXT_POLL_MS = 20;
const PUSH_BUFFER = 100_000;
const TARGET = 0.97;
const KNOBS: Record<string, string> = {
  VIGIL_EVENTS_POLL_FLOOR_MS: "1",
  VIGIL_EVENTS_COALESCE_MS: "0",
  VIGIL_EVENTS_MAX_PENDING: "1000000",
  VIGIL_EVENTS_MAX_PENDING_BYTES: String(1024 * 1024 * 1024),
};

type Delivery = "poll" | "push";
type Metrics = "off" | "scraped";
interface Setup {
  id: string;
  delivery: Delivery;
  metrics: Metrics;
}
const SETUPS: Setup[] = (["poll", "push"] as const).flatMap((delivery) =>
  (["off", "scraped"] as const).map((metrics) => ({ id: `${delivery}, metrics ${metrics === "off" ? "off" : "on + scrape every 1 s"}`, delivery, metrics })),
);

interface Options {
  write: boolean;
  quick: boolean;
  rounds: number;
  events: number;
  phases: Set<Delivery>;
  profile: string | null;
}

function usage(error?: string): never {
  if (error) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write("usage: bun bench/events/metrics-overhead.ts [--write] [--rounds N] [--events N] [--phases poll,push] [--quick] [--profile DIR]\n");
  process.exit(error ? 2 : 0);
}

function parseOptions(argv: string[]): Options {
  const o: Options = { write: false, quick: false, rounds: 7, events: 20_000, phases: new Set(["poll", "push"]), profile: null };
  const num = (flag: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min || n > max) usage(`${flag}: expected an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") o.write = true;
    else if (a === "--quick") Object.assign(o, { quick: true, rounds: 1, events: 2000 });
    else if (a === "--rounds") o.rounds = num(a, argv[++i], 1, 15);
    else if (a === "--events") o.events = num(a, argv[++i], 1000, 100_000);
    else if (a === "--phases") {
      const list = (argv[++i] ?? "").split(",").filter(Boolean);
      if (list.length === 0 || list.some((p) => p !== "poll" && p !== "push")) usage("--phases: a comma-separated list of poll, push");
      o.phases = new Set(list as Delivery[]);
    } else if (a === "--profile") {
      const dir = argv[++i];
      if (dir === undefined || dir === "") usage("--profile: a directory is required");
      o.profile = resolve(dir);
    } else if (a === "--help" || a === "-h") usage();
    else usage(`unknown argument ${a}`);
  }
  if (o.quick && o.write) usage("--quick results are a smoke test and are not written");
  if (o.profile !== null && o.write) usage("--profile runs vigil from source under the profiler: its figures are not written");
  return o;
}

// ---------------------------------------------------------------------------------------------
// One run

interface Run {
  setup: Setup;
  round: number;
  events: number;
  ms: number;
  rate: number;
  cpuMs: number;
  /** Scrapes that began during the timed window; every scrape's body size; the durations of those during the run and of those before it (idle). */
  scrapesInRun: number;
  scrapeBytes: number[];
  scrapeMs: number[];
  idleScrapeMs: number[];
  /** vigil_event_loop_lag_seconds in the scrape after the run (the worst lag of the last 5 s), ms. */
  lagMs: number;
  skipped: number;
  exit: number | null;
}

let tempRoot: string | null = null;
let profileDir: string | null = null;
const liveModels = new Set<MockModel>();
process.on("exit", () => {
  for (const m of liveModels) void m.close();
  if (tempRoot !== null) rmSync(tempRoot, { recursive: true, force: true });
});

async function command(base: string, cmd: Record<string, unknown>): Promise<{ success: boolean; data?: { subscriptions?: unknown[] }; error?: { message?: string } }> {
  const res = await fetch(`${base}/v1/sessions/${SESSION}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(cmd),
    signal: AbortSignal.timeout(15_000),
  });
  return (await res.json()) as { success: boolean; data?: { subscriptions?: unknown[] }; error?: { message?: string } };
}

async function oneRun(setup: Setup, round: number, n: number): Promise<Run> {
  const dir = join(tempRoot!, `run-${round}-${setup.id.replace(/[^a-z]+/g, "-")}`);
  mkdirSync(dir, { recursive: true });
  const model = await startMockModel();
  liveModels.add(model);
  model.setDefaultReply({ stall: true });
  let fixture: Awaited<ReturnType<typeof startHttpFixture>> | null = null;
  let vigil: Child | null = null;
  let scraper: Scraper | null = null;
  try {
    fixture = await startHttpFixture({ MCP_FIXTURE_NEXT_POLL_MS: String(NEXT_POLL_MS) });
    const config = join(dir, "vigil.json");
    const events = [{ name: "ticket.updated", delivery: setup.delivery, action: "follow_up" }];
    writeFileSync(
      config,
      JSON.stringify({
        model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 120_000 },
        mcp_servers: [{ name: "tickets", transport: "http", url: fixture.mcpUrl, events }],
      }),
    );
    const env = { ...KNOBS, VIGIL_METRICS: setup.metrics === "off" ? "off" : "on", ...(setup.delivery === "push" ? { VIGIL_EVENTS_STREAM_BUFFER: String(PUSH_BUFFER) } : {}) };
    const name = `${setup.id.replace(/[^a-z0-9]+/g, "-")}-r${round}.md`;
    const bin = profileDir === null ? [VIGIL] : [process.execPath, "--cpu-prof-md", `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}`, join(ROOT, "src/cli.ts")];
    const args = ["serve", "--config", config, "--state-dir", join(dir, "state"), "--listen", "127.0.0.1:0", "--session-idle-timeout", "0"];
    vigil = spawnChild("vigil serve --listen", [...bin, ...args], { env });
    const v = vigil;
    const base = (await waitStderr(v, /vigil serve listening (http:\/\/\S+)\n/, START_MS))[1]!;
    const metricsUrl = `${base}/metrics`;
    if (setup.metrics === "scraped") {
      await scrape(metricsUrl); // fails the run unless /metrics answers 200
      scraper = new Scraper(metricsUrl);
    } else {
      const status = (await fetch(metricsUrl, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) })).status;
      if (status !== 404) throw new Error(`${setup.id}: GET /metrics answered ${status} with VIGIL_METRICS=off (expected 404)`);
    }
    // Up: the poll bootstrap page positioned the cursor, or the stream is active.
    let up = false;
    const deadline = performance.now() + START_MS;
    while (!up) {
      const r = await command(base, { type: "mcp_events_list", id: `list-${Math.random().toString(36).slice(2)}` });
      up = r.success && (r.data?.subscriptions?.length ?? 0) > 0;
      if (!up && (performance.now() > deadline || v.proc.exitCode !== null)) throw new Error(`${setup.id}: the configured subscription was not up within ${START_MS} ms: ${v.stderr.slice(-1500)}`);
      if (!up) await Bun.sleep(20);
    }
    const tail = new LogTail(join(dir, `state/sessions/${SESSION}/mcp-events.log`));
    const cpu0 = cpuMsOf(v.pid);
    const t0 = performance.now();
    await fixture.control.post("emit_burst", { count: n, name: "ticket.updated" });
    const done = await until(() => tail.poll() >= n || v.proc.exitCode !== null, RUN_MS, 2);
    const tEnd = performance.now();
    const cpuMs = cpuMsOf(v.pid) - cpu0;
    tail.close();
    if (!done) throw new Error(`${setup.id}: ${tail.adds} of ${n} events in the pending log after ${RUN_MS} ms: ${v.stderr.slice(-1500)}`);
    const scrapes = scraper === null ? [] : (await scraper.stop(), scraper.done);
    if (scraper?.failure) throw new Error(`${setup.id}: a scrape failed: ${scraper.failure}`);
    let lagMs = Number.NaN;
    if (setup.metrics === "scraped") {
      // The log holds a record once written; it is acknowledged once the fdatasync after it returned.
      let last = await scrape(metricsUrl);
      const acked = () => counterSum(last.text, "vigil_events_acknowledged_total", [`mode="${setup.delivery}"`]);
      const settleBy = performance.now() + 5_000;
      while (acked() !== n && performance.now() < settleBy) {
        await Bun.sleep(50);
        last = await scrape(metricsUrl);
      }
      if (acked() !== n) {
        const lines = last.text.split("\n").filter((l) => l.startsWith("vigil_events_")).join("\n");
        throw new Error(`${setup.id}: vigil_events_acknowledged_total{mode="${setup.delivery}"} = ${acked()} after the run, expected ${n}:\n${lines}`);
      }
      lagMs = 1000 * Number(/^vigil_event_loop_lag_seconds (\S+)$/m.exec(last.text)?.[1] ?? Number.NaN);
    }
    const run: Run = {
      setup,
      round,
      events: n,
      ms: tEnd - t0,
      rate: n / ((tEnd - t0) / 1000),
      cpuMs,
      scrapesInRun: scrapes.filter((s) => s.start >= t0 && s.start <= tEnd).length,
      scrapeBytes: scrapes.map((s) => s.bytes),
      scrapeMs: scrapes.filter((s) => s.start >= t0 && s.start <= tEnd).map((s) => s.end - s.start),
      idleScrapeMs: scrapes.filter((s) => s.start < t0).map((s) => s.end - s.start),
      lagMs,
      skipped: scraper?.skipped ?? 0,
      exit: null,
    };
    scraper = null;
    run.exit = await stop(v);
    vigil = null;
    return run;
  } finally {
    await scraper?.stop();
    if (vigil !== null) await stop(vigil);
    if (fixture !== null) await stop(fixture.child, "eof");
    liveModels.delete(model);
    await model.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const pct = (x: number, digits = 1) => (Number.isFinite(x) ? `${fmt(x * 100, digits)} %` : "—");
const cpuPerEvent = (x: Run) => (x.cpuMs * 1000) / x.events;
const rangeOf = (xs: number[], digits = 0) => (xs.length > 1 ? ` (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})` : "");
const verdict = (met: boolean) => (met ? "met" : "**missed**");

interface Results {
  date: string;
  machine: string;
  o: Options;
  runs: Run[];
  seconds: number;
  load: [string, string];
}

interface Comparison {
  delivery: Delivery;
  off: Run[];
  on: Run[];
  /** median(rate on) / median(rate off). */
  ratio: number;
  /** Per round, on/off of the same round (adjacent runs). */
  paired: number[];
  cpuRatio: number;
}

function compare(r: Results, delivery: Delivery): Comparison | null {
  const off = r.runs.filter((x) => x.setup.delivery === delivery && x.setup.metrics === "off");
  const on = r.runs.filter((x) => x.setup.delivery === delivery && x.setup.metrics === "scraped");
  if (off.length === 0 || on.length === 0) return null;
  const paired = on.flatMap((b) => off.filter((a) => a.round === b.round).map((a) => b.rate / a.rate));
  return { delivery, off, on, ratio: median(on.map((x) => x.rate)) / median(off.map((x) => x.rate)), paired, cpuRatio: median(on.map(cpuPerEvent)) / median(off.map(cpuPerEvent)) };
}

function setupRows(r: Results): string[][] {
  return SETUPS.flatMap((s) => {
    const runs = r.runs.filter((x) => x.setup.id === s.id);
    if (runs.length === 0) return [];
    const rates = runs.map((x) => x.rate);
    const scraped = s.metrics === "scraped";
    const bytes = runs.flatMap((x) => x.scrapeBytes);
    const ms = runs.flatMap((x) => x.scrapeMs);
    const idle = runs.flatMap((x) => x.idleScrapeMs);
    return [[
      s.id,
      `${fmt(median(rates))}${rangeOf(rates)}`,
      fmt(median(runs.map((x) => x.ms))),
      `${fmt(median(runs.map(cpuPerEvent)))}${rangeOf(runs.map(cpuPerEvent))}`,
      pct(median(runs.map((x) => x.cpuMs / x.ms)), 0),
      scraped ? `${fmt(median(runs.map((x) => x.scrapesInRun)), 1)} (${fmt(runs.reduce((a, x) => a + x.scrapesInRun, 0))} in all)` : "—",
      scraped ? `${fmt(median(bytes) / 1024, 1)} (${fmt(Math.max(...bytes) / 1024, 1)})` : "—",
      scraped ? `${fmt(median(ms), 1)} / ${fmt(quantile(ms, 0.9), 1)} / ${fmt(Math.max(...ms), 1)}` : "—",
      scraped ? fmt(median(idle), 1) : "—",
      scraped ? fmt(median(runs.map((x) => x.lagMs))) : "—",
    ]];
  });
}

const HEADERS = ["setup", "events/s", "ms to all N", "vigil CPU µs / event", "vigil CPU busy", "scrapes during the run, median per run", "scrape body KiB, median (max)", "scrape ms during the run, p50 / p90 / max", "scrape ms before the run, p50", "event-loop lag gauge after the run (ms)"];

function render(r: Results): string {
  const L: string[] = [];
  const comps = (["poll", "push"] as const).map((d) => compare(r, d)).filter((c) => c !== null);
  L.push("<!-- bench:events-metrics start (generated by bun bench/events/metrics-overhead.ts --write; replaced on the next run) -->");
  L.push(`## events: what metrics cost ingestion — ${r.date}`, "");
  L.push(`Machine: ${r.machine}.`);
  L.push(
    `Run: \`bun bench/events/metrics-overhead.ts --write\`, ${r.o.rounds} rounds of ${new Set(r.runs.map((x) => x.setup.id)).size} setups interleaved in a rotating order, every run on fresh processes, medians over rounds (range in parentheses); ${fmt(r.seconds)} s in all; 1-min load average ${r.load[0]} at start, ${r.load[1]} at end.`,
    "",
    `**Setup**: \`vigil serve --listen 127.0.0.1:0\` (daemon mode) with the HTTP events fixture as its one MCP server and one configured \`follow_up\` subscription to \`ticket.updated\` (delivery forced to poll or push; push with \`VIGIL_EVENTS_STREAM_BUFFER=${fmt(PUSH_BUFFER)}\`, so a burst never overflows the stream), owned by the daemon's events session \`${SESSION}\`; model stalled, so the rest of the burst is only ingested. Once \`mcp_events_list\` shows the subscription up, the fixture emits ${fmt(r.o.events)} events at once; timed until \`sessions/${SESSION}/mcp-events.log\` holds ${fmt(r.o.events)} \`add\` records. Knobs as in \`bench/events/run.ts\` (poll floor 1 ms, coalesce 0, max pending 1,000,000 / 1 GiB; \`nextPollMs: ${NEXT_POLL_MS}\`). *Metrics off*: \`VIGIL_METRICS=off\` (registry disabled, no collectors, no lag sampler; \`GET /metrics\` checked to answer 404). *Metrics on + scrape*: \`VIGIL_METRICS=on\`, and the harness GETs \`/metrics\` every ${SCRAPE_EVERY_MS / 1000} s from the daemon's start to the end of the run, reading the whole body (scrape time is the harness's, request to last byte); after the run a last scrape must show \`vigil_events_acknowledged_total\` = ${fmt(r.o.events)} for the run's mode. CPU: \`/proc/<pid>/stat\` of vigil over the timed window.`,
    "",
    ...table(HEADERS, setupRows(r), ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r"]),
    "",
  );
  const targets = comps.map((c) => [
    `ingestion (${c.delivery} over HTTP) with metrics on and a scrape every 1 s ≤ 3 % slower than with metrics off`,
    `${pct(c.ratio)} of the rate (${c.ratio <= 1 ? `${pct(1 - c.ratio)} slower` : `${pct(c.ratio - 1)} faster`}); on/off per round ${c.paired.map((x) => pct(x, 0)).join(", ")}`,
    verdict(c.ratio >= TARGET),
  ]);
  L.push("**Target (issue 15)**", "", ...table(["target", "measured", "result"], targets, ["l", "r", "l"]), "");
  L.push("Reading the numbers:", "");
  for (const c of comps) {
    const med = (xs: Run[], f: (x: Run) => number) => median(xs.map(f));
    L.push(
      `- ${c.delivery}: ${fmt(med(c.off, (x) => x.rate))} events/s with metrics off, ${fmt(med(c.on, (x) => x.rate))}/s with metrics on and scraped (${pct(c.ratio)}); vigil's CPU per event ${fmt(med(c.off, cpuPerEvent))} → ${fmt(med(c.on, cpuPerEvent))} µs (${pct(c.cpuRatio)}).`,
    );
  }
  const exits = [...new Set(r.runs.map((x) => String(x.exit)))];
  const skipped = r.runs.reduce((a, x) => a + x.skipped, 0);
  L.push(`- Every vigil stopped on SIGTERM with exit ${exits.join(" or ")} (0 expected); ${skipped} scrape ticks skipped because the previous scrape was still running.`, "");
  L.push("<!-- bench:events-metrics end -->");
  return L.join("\n");
}

function textSummary(r: Results): string {
  const out = ["", `vigil serve events: metrics overhead — ${r.machine}; ${fmt(r.seconds)} s`, ""];
  for (const x of r.runs) {
    out.push(`  round ${x.round} ${x.setup.id.padEnd(36)} ${fmt(x.rate).padStart(7)} ev/s  ${fmt(x.ms).padStart(6)} ms  cpu ${fmt(cpuPerEvent(x)).padStart(4)} µs/ev  scrapes in run ${x.scrapesInRun}`);
  }
  return out.join("\n");
}

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  profileDir = o.profile;
  if (profileDir !== null) mkdirSync(profileDir, { recursive: true });
  if (!vigilPresent()) return 2;
  const setups = SETUPS.filter((s) => o.phases.has(s.delivery));
  const runDone = exitUnlessDoneWithin(30_000 + o.rounds * setups.length * (2 * START_MS + RUN_MS));
  const began = performance.now();
  const loadStart = loadavg()[0]!.toFixed(2);
  tempRoot = mkdtempSync(join(tmpdir(), "vigil-bench-events-metrics-"));
  const runs: Run[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    for (let i = 0; i < setups.length; i++) {
      const s = setups[(i + round - 1) % setups.length]!;
      const x = await oneRun(s, round, o.events);
      runs.push(x);
      process.stderr.write(`  round ${round}/${o.rounds} ${s.id.padEnd(36)} ${fmt(x.rate).padStart(7)} events/s (${fmt(x.ms)} ms, ${fmt(cpuPerEvent(x))} µs CPU/event)\n`);
    }
  }
  runDone();
  const results: Results = { date: new Date().toISOString().slice(0, 10), machine: machine(), o, runs, seconds: (performance.now() - began) / 1000, load: [loadStart, loadavg()[0]!.toFixed(2)] };
  publishResults("events-metrics", textSummary(results), render(results), o.write);
  return 0;
}

runBench(main);
