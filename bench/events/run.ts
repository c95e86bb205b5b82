/**
 * Performance harness for MCP Events in `vigil serve` (serve.md §6, §8): one run measures
 *
 *   (a) ingestion — events per second from the events fixture into the session's durable pending
 *       log (`sessions/<s>/mcp-events.log`), for poll and push, over streamable HTTP and over stdio,
 *       with the model stalled so that nothing but ingestion runs;
 *   (b) delivery to the model — events per second until the (mock) model has received every event
 *       id, batches of ≤ 50, for poll and push over HTTP;
 *   (c) memory — the daemon's VmRSS with 1,000 idle runtime subscriptions (poll, and push with the
 *       knob that push needs at that count), against the same daemon with the session open and no
 *       subscription; plus a probe of push at Bun's default fetch limit (256 streams);
 *
 * against baselines in the same run (`bench/events/baseline.ts`): a bare SDK client reading the
 * same fixture the same way (no session, store, transcript or model); that client plus an append
 * and an fdatasync per page (what durability alone costs); and that client sending each page to the
 * same mock model, one request per page without history (the floor of (b)).
 *
 *   bun bench/events/run.ts [--write] [--rounds N] [--events N] [--steady W] [--model-events N] [--subs K] [--phases log,model,memory] [--quick] [--profile DIR] [--only A,B]
 *
 *   --write      add or replace the `<!-- bench:events … -->` section of bench/RESULTS.md
 *   --rounds N   rounds of the throughput setups (default 3, at most 5); setups interleaved, rotating order
 *   --events N   events per run into the pending log (default 5000)
 *   --steady W   the setups the targets read into the log (poll over HTTP: vigil, the bare client, + fdatasync,
 *                the floor; push over stdio: vigil, the bare client) are run a second time per round, on
 *                fresh processes that first take an untimed burst of W events, then the timed N: the
 *                steady state of a process whose JIT has compiled its hot path (JSC tiers a function up
 *                to its optimizing compiler only after many calls: a fresh vigil still spends ~10–20 µs
 *                per event compiling through its first ~20,000 events; the CPU by thread shows it).
 *                Default 40000; 0 skips these runs
 *   --model-events N  events per run to the model (default 20000): enough batches (400 of 50) that a
 *                per-batch request size growing with the session's age shows against a flat one
 *   --subs K     idle subscriptions for the memory phase (default 1000)
 *   --phases     log (a), model (b), memory (c), flow (= log,model); default all
 *   --quick      one round, 1,000 events (both kinds), 100 subscriptions: a smoke test (not written)
 *   --profile D  throughput runs start vigil from source (bun --cpu-prof-md src/cli.ts) and write one
 *                CPU profile per run into D (figures not comparable, never written); with
 *                BENCH_PROF_JSON=1 a .cpuprofile (JSON, for scripts) instead of markdown, and
 *                BENCH_PROF_INTERVAL_US=N samples every N µs (default 1000)
 *   --only A,B   only the throughput setups whose id contains A or B (e.g. "poll http": vigil and both
 *                baselines), for a quick before/after with VIGIL_BIN (never written)
 *
 * How a throughput run goes: a fresh fixture (HTTP: started here; stdio: started by vigil, or by the
 * baseline), a fresh in-process mock model (test/fixtures/mock-model.ts) and a fresh
 * `dist/vigil serve --session bench` in stdio mode whose config has one configured `follow_up`
 * subscription to `ticket.updated` (delivery forced to poll or push). Once the `subscribed` status
 * frame arrived (poll: the bootstrapping first page positioned the cursor at the log's end; push:
 * the stream is `active`), the harness POSTs `emit_burst {count: N}` to the fixture (t0) and waits:
 * (a) until the pending log holds N `add` records (read incrementally; the harness sees a record
 * once it is written, and vigil fdatasyncs it right after, before it moves the cursor and asks for
 * the next page, so only the last page's sync, ~2 ms, may fall outside the time), or (b) until the
 * mock model has seen N distinct `event_id`s in the last user message of its requests. Knobs: VIGIL_EVENTS_POLL_FLOOR_MS=1,
 * VIGIL_EVENTS_COALESCE_MS=0, VIGIL_EVENTS_MAX_PENDING=1000000 and _BYTES=1 GiB (nothing
 * back-pressures), the push stream buffer left at its default (its overflows are counted); the
 * fixture answers polls with nextPollMs=20 (the idle poll interval of vigil and the baseline alike).
 *
 * What metrics cost this ingestion (daemon mode, VIGIL_METRICS=off against a /metrics scrape every
 * second) is bench/events/metrics-overhead.ts; the fixture helpers both use are ./fixture.ts.
 *
 * The binary under test is dist/vigil, or $VIGIL_BIN (e.g. a build of another tree, for a before/after
 * comparison; the report names it).
 *
 * Every child leads its own process group (stdio fixtures started by vigil are found through their
 * control API and killed by group too); every wait is bounded; everything is killed on every way out
 * (errors, SIGINT/SIGTERM/SIGHUP, an overall deadline: 290 s plus each to-the-model run's bound) and
 * the temporary directory is removed.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type MockModel, type RecordedRequest, startMockModel } from "../../test/fixtures/mock-model.ts";
import { publishResults } from "../results-file.ts";
import { fmt, median, mib, runBench, table, targetsMarkdown, targetsText } from "../report.ts";
import { VIGIL, machine, vigilPresent } from "../vigil-under-test.ts";
import { type Memory, cpuMsOf, memoryOf, selfCpuMs, threadCpuDelta, threadCpuMsOf } from "../proc.ts";
import { type Child, exitUnlessDoneWithin, type LineHandler, spawnChild, stop, until, waitLine, waitStderr } from "../children.ts";
import { type StealCount, quietRun, stealCount, stealNote } from "../steal.ts";
import { inFlight } from "../in-flight.ts";
import { type Control, type FixtureState, FIXTURE, LogTail, THROUGHPUT_KNOBS, control, startHttpFixture } from "./fixture.ts";
import { eventsTargets } from "./targets.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
const BASELINE = join(import.meta.dir, "baseline.ts");

const DEADLINE_MS = 290_000;
const START_MS = 20_000;
const RUN_MS = 60_000;
/** A to-the-model run of N events is bounded by max(RUN_MS, N × this): whole-history requests grow with N². */
const MODEL_RUN_MS_PER_EVENT = 6;
const modelRunMs = (n: number) => Math.max(RUN_MS, n * MODEL_RUN_MS_PER_EVENT);
const SETTLE_MS = 2_000;
const NEXT_POLL_MS = 20;
const IDLE_NEXT_POLL_MS = 600_000;
const SUBSCRIBE_WINDOW = 8;
/** Bun's fetch runs at most this many requests at once unless BUN_CONFIG_MAX_HTTP_REQUESTS says otherwise. */
const BUN_DEFAULT_MAX_HTTP = 256;
const PUSH_MAX_HTTP = 4096;
const PROBE_MS = 5_000;
/** A push stream buffer that a burst never overflows (the A/B of the default's overflow cost). */
const BIG_BUFFER = 100_000;
/**
 * The history the floor of "to the model" sends with each page (baseline.ts --history): text of the
 * earlier pages and answers, sized so that its median request matches vigil's (~65 KiB in the
 * 2026-12-02 runs: the bounded context of the long-running issue).
 */
const HISTORY_TEXT_BYTES = 56 * 1024;


// ---------------------------------------------------------------------------------------------
// Options

type Phase = "log" | "model" | "memory";

interface Options {
  write: boolean;
  quick: boolean;
  rounds: number;
  events: number;
  /** The steady-state runs' untimed first burst (0: no steady-state runs). */
  steady: number;
  /** Events per to-the-model run. */
  modelEvents: number;
  subs: number;
  phases: Set<Phase>;
  /** --profile DIR: the throughput runs' vigil from source with a CPU profile (markdown) each, into DIR. */
  profile: string | null;
  /** --only A,B: only the throughput setups whose id contains one of these (a before/after probe; not written). */
  only: string[] | null;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { write: false, quick: false, rounds: 3, events: 5000, steady: 40_000, modelEvents: 20_000, subs: 1000, phases: new Set<Phase>(["log", "model", "memory"]), profile: null, only: null };
  const num = (flag: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min || n > max) usage(`${flag}: expected an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") o.write = true;
    else if (a === "--quick") Object.assign(o, { quick: true, rounds: 1, events: 1000, steady: 0, modelEvents: 1000, subs: 100 });
    else if (a === "--rounds") o.rounds = num(a, argv[++i], 1, 5);
    else if (a === "--events") o.events = num(a, argv[++i], 100, 20_000);
    else if (a === "--steady") o.steady = num(a, argv[++i], 0, 100_000);
    else if (a === "--model-events") o.modelEvents = num(a, argv[++i], 100, 100_000);
    else if (a === "--subs") o.subs = num(a, argv[++i], 2, 2000);
    else if (a === "--phases") {
      const list = (argv[++i] ?? "").split(",").filter(Boolean);
      if (list.length === 0 || list.some((p) => !["flow", "log", "model", "memory"].includes(p))) usage("--phases: a comma-separated list of log, model, memory, flow (= log,model)");
      o.phases = new Set(list.flatMap((p) => (p === "flow" ? ["log", "model"] : [p])) as Phase[]);
    } else if (a === "--profile") {
      const dir = argv[++i];
      if (dir === undefined || dir === "") usage("--profile: a directory is required");
      o.profile = resolve(dir);
    } else if (a === "--only") {
      const list = (argv[++i] ?? "").split(",").map((x) => x.trim()).filter(Boolean);
      if (list.length === 0 || !list.every((x) => SETUPS.some((st) => st.id.includes(x)))) usage(`--only: a comma-separated list of parts of setup ids (${SETUPS.map((st) => st.id).join("; ")})`);
      o.only = list;
    } else if (a === "--help" || a === "-h") usage();
    else usage(`unknown argument ${a}`);
  }
  if (o.quick && o.write) usage("--quick results are a smoke test and are not written");
  if (o.profile !== null && o.write) usage("--profile runs vigil from source under the profiler: its figures are not written");
  if (o.only !== null && o.write) usage("--only runs a part of the setups: its figures are not written");
  return o;
}

function usage(error?: string): never {
  if (error) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write("usage: bun bench/events/run.ts [--write] [--rounds N] [--events N] [--steady W] [--model-events N] [--subs K] [--phases log,model,memory] [--quick] [--profile DIR] [--only A,B]\n");
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------
// The temporary directory, the stdio fixtures and the mock models: cleaned up on every way out
// (after the process groups, see ../children.ts).

/** --profile DIR (see Options). */
let profileDir: string | null = null;
/** stdio fixtures started by vigil or by the baseline (they lead their own group, or share the baseline's). */
const liveFixtures = new Set<number>();
const liveModels = new Set<MockModel>();
let tempRoot: string | null = null;

/** A fixture started by someone else (vigil, the baseline): killed by group, if it still is the fixture. */
function killFixture(pid: number | null): void {
  if (pid === null) return;
  liveFixtures.delete(pid);
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("events-fixture")) return;
    const pgid = Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]);
    process.kill(pgid === pid ? -pid : pid, "SIGKILL");
  } catch {
    // gone
  }
}

process.on("exit", () => {
  for (const pid of [...liveFixtures]) killFixture(pid);
  for (const m of liveModels) void m.close();
  if (tempRoot !== null) rmSync(tempRoot, { recursive: true, force: true });
  tempRoot = null;
});

async function newModel(): Promise<MockModel> {
  const m = await startMockModel();
  liveModels.add(m);
  return m;
}

async function closeModel(m: MockModel): Promise<void> {
  liveModels.delete(m);
  await m.close();
}

// ---------------------------------------------------------------------------------------------
// The fixture (the rest of it: ./fixture.ts)

async function waitControlFile(file: string, ms: number, alive: () => boolean): Promise<Control> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (existsSync(file)) {
      const url = readFileSync(file, "utf8").trim();
      if (url !== "") return control(url);
    }
    if (!alive()) throw new Error("the process that starts the stdio fixture is gone");
    if (performance.now() > deadline) throw new Error(`no control file ${file} within ${ms} ms`);
    await Bun.sleep(10);
  }
}

// ---------------------------------------------------------------------------------------------
// Reading vigil: its frames (stdout, stdio mode) and its pending log

interface FrameCounts {
  events: number;
  subscribed: boolean;
  errors: string[];
  kinds: Map<string, number>;
  runEnds: Map<string, number>;
}

function frameCounter(): { counts: FrameCounts; onLine: LineHandler } {
  const counts: FrameCounts = { events: 0, subscribed: false, errors: [], kinds: new Map(), runEnds: new Map() };
  const onLine: LineHandler = (line) => {
    // Frames are `{"seq":…,"time":"…","type":…`: the type is within the first 80 characters.
    const head = line.slice(0, 100);
    if (head.includes('"type":"mcp_event"')) {
      counts.events++;
      return;
    }
    if (!head.includes('"type":"mcp_event_status"') && !head.includes('"type":"run_end"')) return;
    const f = JSON.parse(line) as { type: string; kind?: string; error?: unknown; status?: string };
    if (f.type === "run_end") {
      counts.runEnds.set(String(f.status), (counts.runEnds.get(String(f.status)) ?? 0) + 1);
      return;
    }
    const kind = String(f.kind);
    counts.kinds.set(kind, (counts.kinds.get(kind) ?? 0) + 1);
    if (kind === "subscribed") counts.subscribed = true;
    if (kind === "error" && counts.errors.length < 5) counts.errors.push(typeof f.error === "string" ? f.error : JSON.stringify(f.error));
  };
  return { counts, onLine };
}

// ---------------------------------------------------------------------------------------------
// The model: counts the event ids it was given (in the last user message of each request)

interface ModelTally {
  ids: Set<string>;
  /** (time, distinct ids so far), one per request that brought new ids. */
  progress: { at: number; n: number }[];
  requests: number;
  bytes: number;
  lastBytes: number;
  /** Body bytes of each request that brought new event ids (a batch), in arrival order. */
  batchBytes: number[];
}

function countingModel(model: MockModel): ModelTally {
  const tally: ModelTally = { ids: new Set(), progress: [], requests: 0, bytes: 0, lastBytes: 0, batchBytes: [] };
  const all = model.requests as RecordedRequest[];
  model.setDefaultReply((rec) => {
    tally.requests++;
    const size = Number(rec.headers["content-length"] ?? 0);
    tally.bytes += size;
    tally.lastBytes = size;
    const messages = (rec.body as { messages?: { role: string; content: unknown }[] } | undefined)?.messages ?? [];
    const user = messages.filter((m) => m.role === "user").at(-1)?.content;
    const before = tally.ids.size;
    for (const m of String(typeof user === "string" ? user : JSON.stringify(user ?? "")).matchAll(/event_id="([^"]+)"/g)) tally.ids.add(m[1]!);
    if (tally.ids.size > before) {
      tally.progress.push({ at: performance.now(), n: tally.ids.size });
      tally.batchBytes.push(size);
    }
    // The mock keeps every request (bodies included); a long run would hold hundreds of MiB.
    setTimeout(() => all.splice(0), 0);
    return { text: "ok" };
  });
  return tally;
}

// ---------------------------------------------------------------------------------------------
// (a) and (b): the throughput setups

type Transport = "http" | "stdio";
type Delivery = "poll" | "push";
type Target = "log" | "model";

interface Setup {
  id: string;
  who: "vigil" | "baseline";
  delivery: Delivery;
  transport: Transport;
  target: Target;
  /** Baseline variant: bare, fdatasync per page, the floor of a durable page (baseline.ts --floor), or one model request per page. */
  variant: "bare" | "fsync" | "floor" | "model" | "model-history";
  /** vigil: VIGIL_EVENTS_STREAM_BUFFER (default: the knob's default, 256). */
  buffer?: number;
}

/** The setups whose steady state is measured too (`--steady`): those the ingestion targets read. */
const STEADY_SETUPS = ["vigil poll http → log", "baseline poll http", "baseline poll http + fdatasync", "baseline poll http, floor", "vigil push stdio → log", "baseline push stdio"];

const SETUPS: Setup[] = [
  { id: "vigil poll http → log", who: "vigil", delivery: "poll", transport: "http", target: "log", variant: "bare" },
  { id: "vigil push http → log", who: "vigil", delivery: "push", transport: "http", target: "log", variant: "bare" },
  { id: "vigil poll stdio → log", who: "vigil", delivery: "poll", transport: "stdio", target: "log", variant: "bare" },
  { id: "vigil push stdio → log", who: "vigil", delivery: "push", transport: "stdio", target: "log", variant: "bare" },
  { id: "vigil push http → log, buffer 100k", who: "vigil", delivery: "push", transport: "http", target: "log", variant: "bare", buffer: BIG_BUFFER },
  { id: "vigil push stdio → log, buffer 100k", who: "vigil", delivery: "push", transport: "stdio", target: "log", variant: "bare", buffer: BIG_BUFFER },
  { id: "vigil poll http → model", who: "vigil", delivery: "poll", transport: "http", target: "model", variant: "bare" },
  { id: "vigil push http → model", who: "vigil", delivery: "push", transport: "http", target: "model", variant: "bare" },
  { id: "baseline poll http", who: "baseline", delivery: "poll", transport: "http", target: "log", variant: "bare" },
  { id: "baseline push http", who: "baseline", delivery: "push", transport: "http", target: "log", variant: "bare" },
  { id: "baseline poll stdio", who: "baseline", delivery: "poll", transport: "stdio", target: "log", variant: "bare" },
  { id: "baseline push stdio", who: "baseline", delivery: "push", transport: "stdio", target: "log", variant: "bare" },
  { id: "baseline poll http + fdatasync", who: "baseline", delivery: "poll", transport: "http", target: "log", variant: "fsync" },
  { id: "baseline poll http, floor", who: "baseline", delivery: "poll", transport: "http", target: "log", variant: "floor" },
  { id: "baseline poll http → model", who: "baseline", delivery: "poll", transport: "http", target: "model", variant: "model" },
  { id: "baseline poll http → model, history", who: "baseline", delivery: "poll", transport: "http", target: "model", variant: "model-history" },
];

interface ModelStats {
  requests: number;
  mb: number;
  lastKiB: number;
  /** Requests that brought new event ids (batches), and the size of the first, the median, the largest and the last of them. */
  batches: number;
  firstBatchKiB: number;
  medianBatchKiB: number;
  maxBatchKiB: number;
  lastBatchKiB: number;
  /** vigil: t0 → all N accepted (their \`mcp_event\` frames out; each page is committed right after). */
  ingestedMs: number | null;
  /** Events/s reaching the model from t0 until ingestion was done, and from then on. */
  whileIngesting: number;
  afterIngesting: number;
}

function modelStats(tally: ModelTally, t0: number, tIngested: number | null): ModelStats {
  const end = tally.progress.at(-1)!;
  let whileIngesting = Number.NaN;
  let afterIngesting = Number.NaN;
  if (tIngested !== null) {
    const at = tally.progress.filter((p) => p.at <= tIngested).at(-1) ?? { at: t0, n: 0 };
    whileIngesting = at.n / ((tIngested - t0) / 1000);
    if (end.at > tIngested) afterIngesting = (end.n - at.n) / ((end.at - tIngested) / 1000);
  }
  const b = tally.batchBytes;
  return {
    requests: tally.requests,
    mb: tally.bytes / 1e6,
    lastKiB: tally.lastBytes / 1024,
    batches: b.length,
    firstBatchKiB: (b[0] ?? Number.NaN) / 1024,
    medianBatchKiB: median(b) / 1024,
    maxBatchKiB: b.length > 0 ? b.reduce((x, y) => Math.max(x, y)) / 1024 : Number.NaN,
    lastBatchKiB: (b.at(-1) ?? Number.NaN) / 1024,
    ingestedMs: tIngested === null ? null : tIngested - t0,
    whileIngesting,
    afterIngesting,
  };
}

interface FlowRun {
  setup: Setup;
  round: number;
  events: number;
  /** t0 (emit_burst sent) → the target reached (all N in the log / at the model / taken by the baseline). */
  ms: number;
  rate: number;
  /** CPU ms during the run: the client under test (vigil or baseline), the fixture, this process. */
  clientCpuMs: number;
  /** The client's CPU µs per event by thread, largest first ("name=µs …"; schedstat, so finer than clientCpuMs). */
  clientThreads: string;
  fixtureCpuMs: number;
  benchCpuMs: number;
  /** Fixture-side: polls answered, streams opened during the run. */
  polls: number;
  streams: number;
  /** vigil status frames during the run (error: stream overflow and the like). */
  statusErrors: number;
  errorSample: string | null;
  /**
   * vigil's worst event-loop block during the run (ms): the largest lateness of a 10 ms timer
   * (VIGIL_DEBUG_LOOP_BLOCK_MS, shared/loop-block-probe.ts), counted only while vigil's JS thread
   * was on CPU (min(lateness, thread CPU in the interval): a shared machine's descheduling is not
   * vigil's block), over the report windows from t0 to the first report after the end; null for
   * baselines and runs to the model. `maxLoopLagMs`: the same, wall-clock lateness.
   */
  maxLoopBlockMs: number | null;
  maxLoopLagMs: number | null;
  model: ModelStats | null;
  exit: number | null;
}

/** CPU ms so far: the client under test (vigil or baseline), the fixture, this process. */
interface CpuReading {
  client: number;
  fixture: number;
  self: number;
  /** The client's on-CPU time by thread name (its JS thread, the JIT, the pool, the collector), ms. */
  clientThreads: Map<string, number>;
}

const cpuNow = (clientPid: number, fixturePid: number): CpuReading => ({
  client: cpuMsOf(clientPid),
  fixture: cpuMsOf(fixturePid),
  self: selfCpuMs(),
  clientThreads: threadCpuMsOf(clientPid),
});

/** A run's figures from the readings at t0 and at the end, vigil's or the baseline's; `exit` is set once it is stopped. */
function flowRun(
  setup: Setup,
  round: number,
  n: number,
  ms: number,
  [cpu0, cpu1]: [CpuReading, CpuReading],
  [s0, s1]: [FixtureState, FixtureState],
  own: Pick<FlowRun, "statusErrors" | "errorSample" | "model"> & { maxLoopBlockMs?: number | null; maxLoopLagMs?: number | null },
): FlowRun {
  return {
    setup,
    round,
    events: n,
    ms,
    rate: n / (ms / 1000),
    clientCpuMs: cpu1.client - cpu0.client,
    clientThreads: threadCpuDelta(cpu0.clientThreads, cpu1.clientThreads, n),
    fixtureCpuMs: cpu1.fixture - cpu0.fixture,
    benchCpuMs: cpu1.self - cpu0.self,
    polls: s1.polls - s0.polls,
    streams: s1.streams_total - s0.streams_total,
    maxLoopBlockMs: null,
    maxLoopLagMs: null,
    ...own,
    exit: null,
  };
}

function vigilConfig(dir: string, modelUrl: string, server: Record<string, unknown>): string {
  const file = join(dir, "vigil.json");
  writeFileSync(file, JSON.stringify({ model: { provider: "openai", base_url: modelUrl, model: "mock-model", timeout_ms: 120_000 }, mcp_servers: [server] }));
  return file;
}

/** One run: `warm` > 0 first lets the fresh processes take an untimed burst of that many events (the steady state). */
async function vigilRun(setup: Setup, round: number, n: number, warm: number): Promise<FlowRun> {
  // Its own directory each time: a run done again (host steal) must not find the last one's files.
  const dir = mkdtempSync(join(tempRoot!, `run-${round}-${setup.id.replace(/[^a-z]+/g, "-")}-`));
  const model = await newModel();
  const tally = setup.target === "model" ? countingModel(model) : null;
  if (setup.target === "log") model.setDefaultReply({ stall: true });
  let httpFixture: Awaited<ReturnType<typeof startHttpFixture>> | null = null;
  let stdioFixturePid: number | null = null;
  let vigil: Child | null = null;
  try {
    const events = [{ name: "ticket.updated", delivery: setup.delivery, action: "follow_up" }];
    let server: Record<string, unknown>;
    const controlFile = join(dir, "control-url");
    if (setup.transport === "http") {
      httpFixture = await startHttpFixture({ MCP_FIXTURE_NEXT_POLL_MS: String(NEXT_POLL_MS) });
      server = { name: "tickets", transport: "http", url: httpFixture.mcpUrl, events };
    } else {
      server = {
        name: "tickets",
        transport: "stdio",
        command: BUN,
        args: [FIXTURE, "--stdio"],
        env: { MCP_FIXTURE_CONTROL_FILE: controlFile, MCP_FIXTURE_NEXT_POLL_MS: String(NEXT_POLL_MS) },
        events,
      };
    }
    const config = vigilConfig(dir, model.url, server);
    const { counts, onLine } = frameCounter();
    const buffered = setup.buffer === undefined ? THROUGHPUT_KNOBS : { ...THROUGHPUT_KNOBS, VIGIL_EVENTS_STREAM_BUFFER: String(setup.buffer) };
    // Into the log: vigil reports its worst event-loop block per 250 ms window (a 10 ms timer's lateness).
    const knobs = setup.target === "log" ? { ...buffered, VIGIL_DEBUG_LOOP_BLOCK_MS: String(LOOP_BLOCK_TIMER_MS) } : buffered;
    const bin = profileDir === null ? [VIGIL] : [BUN, process.env.BENCH_PROF_JSON ? "--cpu-prof" : "--cpu-prof-md", "--cpu-prof-interval", process.env.BENCH_PROF_INTERVAL_US ?? "1000", `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${setup.id.replace(/[^a-z0-9]+/g, "-")}-r${round}.${process.env.BENCH_PROF_JSON ? "cpuprofile" : "md"}`, join(ROOT, "src/cli.ts")];
    vigil = spawnChild("vigil serve", [...bin, "serve", "--config", config, "--state-dir", join(dir, "state"), "--session", "bench"], { env: knobs, onLine });
    const v = vigil;
    const fixture = httpFixture?.control ?? (await waitControlFile(controlFile, START_MS, () => v.proc.exitCode === null));
    if (httpFixture === null) liveFixtures.add((stdioFixturePid = fixture.pid));
    if (!(await until(() => counts.subscribed || v.proc.exitCode !== null, START_MS, 5)) || !counts.subscribed) {
      throw new Error(`${setup.id}: no subscribed status within ${START_MS} ms: ${v.stderr.slice(-1500)}`);
    }
    const tail = new LogTail(join(dir, "state/sessions/bench/mcp-events.log"));
    if (warm > 0) {
      await fixture.post("emit_burst", { count: warm, name: "ticket.updated" });
      if (!(await until(() => tail.poll() >= warm || v.proc.exitCode !== null, RUN_MS, 2)) || tail.adds < warm) {
        throw new Error(`${setup.id}: ${tail.adds} of ${warm} warm-up events in the pending log after ${RUN_MS} ms: ${v.stderr.slice(-1500)}`);
      }
    }
    const s0 = await fixture.state();
    const errors0 = counts.kinds.get("error") ?? 0;
    const events0 = counts.events;
    const cpu0 = cpuNow(v.pid, fixture.pid);
    const stderr0 = v.stderr.length;
    const t0 = performance.now();
    await fixture.post("emit_burst", { count: n, name: "ticket.updated" });
    let done: boolean;
    let tEnd: number;
    let tIngested: number | null = null;
    if (tally === null) {
      done = await until(() => tail.poll() >= warm + n || v.proc.exitCode !== null, RUN_MS, 2);
      tEnd = performance.now();
    } else {
      done = await until(
        () => {
          // Not the log: delivered entries get compacted out of it while the burst is still coming in.
          if (tIngested === null && counts.events - events0 >= n) tIngested = performance.now();
          return tally.ids.size >= n || v.proc.exitCode !== null;
        },
        modelRunMs(n),
        2,
      );
      tEnd = tally.progress.at(-1)?.at ?? performance.now();
    }
    const cpu1 = cpuNow(v.pid, fixture.pid);
    tail.close();
    if (!done) {
      throw new Error(`${setup.id}: ${tally === null ? `${tail.adds - warm} of ${n} events in the pending log` : `${tally.ids.size} of ${n} events at the model`} after ${tally === null ? RUN_MS : modelRunMs(n)} ms: ${v.stderr.slice(-1500)}`);
    }
    const s1 = await fixture.state();
    const loop = tally === null ? await loopBlockSince(v, stderr0) : null;
    const run = flowRun(setup, round, n, tEnd - t0, [cpu0, cpu1], [s0, s1], {
      maxLoopBlockMs: loop?.block ?? null,
      maxLoopLagMs: loop?.lag ?? null,
      statusErrors: (counts.kinds.get("error") ?? 0) - errors0,
      errorSample: counts.errors[0] ?? null,
      model: tally === null ? null : modelStats(tally, t0, tIngested),
    });
    run.exit = await stop(v);
    vigil = null;
    return run;
  } finally {
    if (vigil !== null) await stop(vigil);
    killFixture(stdioFixturePid);
    if (httpFixture !== null) await stop(httpFixture.child, "eof");
    await closeModel(model);
  }
}

/** The period of vigil's loop-block probe timer in the runs into the log. */
const LOOP_BLOCK_TIMER_MS = 10;
const LOOP_BLOCK_LINE = /worst block ([0-9.]+) ms on CPU, worst timer lateness ([0-9.]+) ms in the last/g;

/**
 * The worst loop block vigil reported since stderr offset `from`: waits (≤ 1 s) for one report
 * window that began after the run's end, so the window holding the end is counted too.
 */
async function loopBlockSince(v: Child, from: number): Promise<{ block: number; lag: number }> {
  const at = v.stderr.length;
  await until(() => v.stderr.includes("worst timer lateness", at) || v.proc.exitCode !== null, 1000, 10);
  let block = Number.NaN;
  let lag = Number.NaN;
  for (const m of v.stderr.slice(from).matchAll(LOOP_BLOCK_LINE)) {
    block = Number.isNaN(block) ? Number(m[1]) : Math.max(block, Number(m[1]));
    lag = Number.isNaN(lag) ? Number(m[2]) : Math.max(lag, Number(m[2]));
  }
  return { block, lag };
}

async function baselineRun(setup: Setup, round: number, n: number, warm: number): Promise<FlowRun> {
  // Its own directory each time: a run done again (host steal) must not find the last one's files.
  const dir = mkdtempSync(join(tempRoot!, `run-${round}-${setup.id.replace(/[^a-z]+/g, "-")}-`));
  const model = setup.target === "model" ? await newModel() : null;
  const tally = model !== null ? countingModel(model) : null;
  let httpFixture: Awaited<ReturnType<typeof startHttpFixture>> | null = null;
  let stdioFixturePid: number | null = null;
  let client: Child | null = null;
  try {
    const args = [BUN, BASELINE, "--mode", setup.delivery, "--events", String(n)];
    if (setup.transport === "http") {
      httpFixture = await startHttpFixture({ MCP_FIXTURE_NEXT_POLL_MS: String(NEXT_POLL_MS) });
      args.push("--url", httpFixture.mcpUrl);
    } else {
      args.push("--stdio", FIXTURE, "--stdio", join(dir, "control-url"));
    }
    if (setup.variant === "fsync") args.push("--fsync", join(dir, "pages.log"));
    if (setup.variant === "floor") args.push("--floor", dir);
    if (model !== null) args.push("--model", model.url);
    if (setup.variant === "model-history") args.push("--history", String(HISTORY_TEXT_BYTES));
    if (warm > 0) args.push("--warm", String(warm));
    client = spawnChild(setup.id, args, { env: { MCP_FIXTURE_NEXT_POLL_MS: String(NEXT_POLL_MS) } });
    const c = client;
    const ready = JSON.parse((await waitLine(c, /^(\{"ready".*\})$/, START_MS))[1]!) as { control: string | null; pid: number | null };
    const fixture = httpFixture?.control ?? (await control(ready.control!));
    if (httpFixture === null) liveFixtures.add((stdioFixturePid = fixture.pid));
    if (warm > 0) {
      await fixture.post("emit_burst", { count: warm, name: "ticket.updated" });
      await waitLine(c, /^(\{"warmed".*\})$/, RUN_MS);
    }
    const s0 = await fixture.state();
    const cpu0 = cpuNow(c.pid, fixture.pid);
    const t0 = performance.now();
    await fixture.post("emit_burst", { count: n, name: "ticket.updated" });
    const doneLine = () => c.lines.some((l) => l.startsWith('{"done"'));
    const done = await until(() => (tally !== null ? tally.ids.size >= n : doneLine()) || c.proc.exitCode !== null, tally !== null ? modelRunMs(n) : RUN_MS, 1);
    const tEnd = tally !== null ? (tally.progress.at(-1)?.at ?? performance.now()) : performance.now();
    const cpu1 = cpuNow(c.pid, fixture.pid);
    if (!done) throw new Error(`${setup.id}: not done within ${RUN_MS} ms: ${c.stderr.slice(-1500)}`);
    const s1 = await fixture.state();
    return flowRun(setup, round, n, tEnd - t0, [cpu0, cpu1], [s0, s1], { statusErrors: 0, errorSample: null, model: tally === null ? null : modelStats(tally, t0, null) });
  } finally {
    if (client !== null) await stop(client, "eof");
    killFixture(stdioFixturePid);
    if (httpFixture !== null) await stop(httpFixture.child, "eof");
    if (model !== null) await closeModel(model);
  }
}

// ---------------------------------------------------------------------------------------------
// (c) memory with idle subscriptions

interface MemRow {
  label: string;
  m: Memory;
  fixture: Memory;
}

interface MemResult {
  delivery: Delivery;
  knob: string | null;
  rows: MemRow[];
  subs: number;
  subscribeMs: number;
  failures: number;
  failureSample: string | null;
  /** Fixture-side view once all are up: open streams (push) or polls answered (poll). */
  streamsOpen: number;
  polls: number;
  /** Daemon CPU over 5 s with every subscription idle. */
  idleCpuMsPer5s: number;
  /** A prompt sent after the subscriptions: did its model request go out (and how fast)? */
  promptMs: number | null;
  exit: number | null;
}

interface Daemon {
  child: Child;
  base: string;
}

async function startDaemon(dir: string, config: string, env: Record<string, string>): Promise<Daemon> {
  const child = spawnChild("vigil serve --listen", [VIGIL, "serve", "--config", config, "--state-dir", join(dir, "state"), "--listen", "127.0.0.1:0", "--session-idle-timeout", "0"], { env });
  const m = await waitStderr(child, /vigil serve listening (http:\/\/\S+)\n/, START_MS);
  return { child, base: m[1]! };
}

async function command(d: Daemon, session: string, cmd: Record<string, unknown>, ms = 30_000): Promise<{ success: boolean; error?: { message?: string } }> {
  const res = await fetch(`${d.base}/v1/sessions/${session}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(cmd),
    signal: AbortSignal.timeout(ms),
  });
  return (await res.json()) as { success: boolean; error?: { message?: string } };
}

/** Makes `from..to-1` runtime subscriptions, SUBSCRIBE_WINDOW in flight; returns failures. */
function subscribeMany(d: Daemon, delivery: Delivery, from: number, to: number): Promise<{ failures: number; sample: string | null }> {
  return inFlight(from, to, SUBSCRIBE_WINDOW, async (i) => {
    const r = await command(d, "bench", { type: "mcp_events_subscribe", id: `sub-${i}`, server: "tickets", name: "ticket.updated", delivery, arguments: { project: `p${i}` } });
    return r.success ? null : (r.error?.message ?? "failed");
  });
}

async function settled(d: Daemon, fixturePid: number, label: string): Promise<MemRow> {
  await Bun.sleep(SETTLE_MS);
  return { label, m: memoryOf(d.child.pid), fixture: memoryOf(fixturePid) };
}

async function promptGoesOut(d: Daemon, model: MockModel, ms: number): Promise<number | null> {
  const before = model.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
  const t0 = performance.now();
  const r = await command(d, "bench", { type: "prompt", id: `probe-${Math.random().toString(36).slice(2)}`, message: "hello" });
  if (!r.success) throw new Error(`prompt refused: ${r.error?.message}`);
  const ok = await until(() => model.requests.filter((q) => q.path.endsWith("/chat/completions")).length > before, ms, 5);
  return ok ? performance.now() - t0 : null;
}

async function idleMemory(delivery: Delivery, k: number, knob: string | null): Promise<MemResult> {
  const dir = join(tempRoot!, `mem-${delivery}`);
  mkdirSync(dir, { recursive: true });
  const model = await newModel();
  let fixture: Awaited<ReturnType<typeof startHttpFixture>> | null = null;
  let d: Daemon | null = null;
  try {
    fixture = await startHttpFixture({ MCP_FIXTURE_NEXT_POLL_MS: String(IDLE_NEXT_POLL_MS) });
    const config = vigilConfig(dir, model.url, { name: "tickets", transport: "http", url: fixture.mcpUrl, events: [] });
    // Raising Bun's fetch limit also needs vigil's own push-stream budget raised (default 128).
    d = await startDaemon(dir, config, knob === null ? {} : { BUN_CONFIG_MAX_HTTP_REQUESTS: knob, VIGIL_EVENTS_MAX_HTTP_STREAMS: knob });
    const fx = fixture.control.pid;
    const rows: MemRow[] = [];
    await fetch(`${d.base}/v1/health`);
    rows.push(await settled(d, fx, "started (one health request)"));
    const listed = await command(d, "bench", { type: "mcp_events_list", id: "list" });
    if (!listed.success) throw new Error(`mcp_events_list: ${listed.error?.message}`);
    rows.push(await settled(d, fx, "session open, 0 subscriptions (one mcp_events_list)"));
    const first = await subscribeMany(d, delivery, 0, 1);
    if (first.failures > 0) throw new Error(`the first ${delivery} subscription failed: ${first.sample}`);
    rows.push(await settled(d, fx, "1 subscription"));
    const t0 = performance.now();
    const rest = await subscribeMany(d, delivery, 1, k);
    const subscribeMs = performance.now() - t0;
    rows.push(await settled(d, fx, `${fmt(k)} idle subscriptions`));
    const st = await fixture.control.state();
    const c0 = cpuMsOf(d.child.pid);
    await Bun.sleep(5000);
    const idleCpuMsPer5s = cpuMsOf(d.child.pid) - c0;
    rows.push({ label: `${fmt(k)} idle subscriptions, 5 s later`, m: memoryOf(d.child.pid), fixture: memoryOf(fx) });
    const promptMs = await promptGoesOut(d, model, PROBE_MS);
    const exit = await stop(d.child);
    d = null;
    return {
      delivery,
      knob,
      rows,
      subs: k,
      subscribeMs,
      failures: rest.failures,
      failureSample: rest.sample,
      streamsOpen: st.streams_open,
      polls: st.polls,
      idleCpuMsPer5s,
      promptMs,
      exit,
    };
  } finally {
    if (d !== null) await stop(d.child);
    if (fixture !== null) await stop(fixture.child, "eof");
    await closeModel(model);
  }
}

interface ProbeResult {
  streams: number;
  failures: number;
  /** Subscription number BUN_DEFAULT_MAX_HTTP + 1: answered within PROBE_MS? */
  nextAnswered: boolean;
  /** A prompt's model request: sent within PROBE_MS (ms), or not (null). */
  promptMs: number | null;
}

/** Push at Bun's default fetch limit: 256 streams, then one more subscription and a prompt. */
async function pushProbe(): Promise<ProbeResult> {
  const dir = join(tempRoot!, "mem-probe");
  mkdirSync(dir, { recursive: true });
  const model = await newModel();
  let fixture: Awaited<ReturnType<typeof startHttpFixture>> | null = null;
  let d: Daemon | null = null;
  try {
    fixture = await startHttpFixture({ MCP_FIXTURE_NEXT_POLL_MS: String(IDLE_NEXT_POLL_MS) });
    const config = vigilConfig(dir, model.url, { name: "tickets", transport: "http", url: fixture.mcpUrl, events: [] });
    d = await startDaemon(dir, config, {});
    const made = await subscribeMany(d, "push", 0, BUN_DEFAULT_MAX_HTTP);
    const streams = (await fixture.control.state()).streams_open;
    const dd = d;
    let nextAnswered = false;
    const next = command(dd, "bench", { type: "mcp_events_subscribe", id: "sub-next", server: "tickets", name: "ticket.updated", delivery: "push", arguments: { project: "p-next" } }, PROBE_MS + 1000)
      .then(() => (nextAnswered = true))
      .catch(() => {});
    const promptMs = await promptGoesOut(dd, model, PROBE_MS);
    await next;
    await stop(d.child);
    d = null;
    return { streams, failures: made.failures, nextAnswered, promptMs };
  } finally {
    if (d !== null) await stop(d.child);
    if (fixture !== null) await stop(fixture.child, "eof");
    await closeModel(model);
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const pct = (x: number) => (Number.isFinite(x) ? `${fmt(x * 100)} %` : "—");


interface Results {
  date: string;
  machine: string;
  o: Options;
  runs: FlowRun[];
  /** The same setups' steady-state runs (`--steady`): after an untimed burst in the same processes. */
  steadyRuns: FlowRun[];
  mem: MemResult[];
  probe: ProbeResult | null;
  seconds: number;
  load: [string, string];
  /** Throughput runs done again for the host's steal (bench/steal.ts). */
  steal: StealCount;
}

const runsOf = (r: Results, id: string) => r.runs.filter((x) => x.setup.id === id);
const rateOf = (r: Results, id: string) => median(runsOf(r, id).map((x) => x.rate));
const med = (r: Results, id: string, f: (x: FlowRun) => number) => median(runsOf(r, id).map(f));
const rangeOf = (xs: number[]) => (xs.length > 1 ? ` (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})` : "");
const cpuPerEvent = (x: FlowRun) => (x.clientCpuMs * 1000) / x.events;
const busy = (x: FlowRun) => x.clientCpuMs / x.ms;

/** The bare-client baseline a vigil setup is compared with. */
function baselineFor(s: Setup): string {
  if (s.target === "model") return "baseline poll http → model";
  return `baseline ${s.delivery} ${s.transport}`;
}

function label(s: Setup): string {
  if (s.who === "vigil") {
    return `\`vigil serve\` ${s.delivery} over ${s.transport}${s.buffer !== undefined ? `, stream buffer ${fmt(s.buffer)}` : ""}${s.target === "model" ? " → model" : ""}`;
  }
  if (s.variant === "model") return "baseline: bare SDK client, poll over http, one model request per page (no history)";
  if (s.variant === "model-history") return `floor: the same, each request also carrying the earlier pages and answers (≤ ${fmt(HISTORY_TEXT_BYTES / 1024)} KiB of their text)`;
  if (s.variant === "floor") return "floor: the bare SDK client doing the least a durable page needs (bench/events/baseline.ts --floor: add lines, frames, a position line, log fdatasync per page; atomic snapshot at most once a second)";
  return `baseline: bare SDK client, ${s.delivery} over ${s.transport}${s.variant === "fsync" ? " + append & fdatasync per page" : ""}`;
}

function ingestionTable(r: Results): string[] {
  const rows = SETUPS.filter((s) => s.target === "log").flatMap((s) => {
    const runs = runsOf(r, s.id);
    if (runs.length === 0) return [];
    const rates = runs.map((x) => x.rate);
    const vigil = s.who === "vigil";
    return [[
      label(s),
      `${fmt(median(rates))}${rangeOf(rates)}`,
      vigil ? pct(median(rates) / rateOf(r, baselineFor(s))) : "—",
      (vigil || s.variant === "floor") && s.delivery === "poll" && s.transport === "http" ? pct(median(rates) / rateOf(r, "baseline poll http + fdatasync")) : "—",
      fmt(median(runs.map((x) => x.ms))),
      fmt(median(runs.map(cpuPerEvent))),
      pct(median(runs.map(busy))),
      fmt(median(runs.map((x) => (x.fixtureCpuMs * 1000) / x.events))),
      s.delivery === "poll" ? `${fmt(median(runs.map((x) => x.polls)))} polls` : `${fmt(median(runs.map((x) => x.streams)))} opened`,
      vigil ? fmt(median(runs.map((x) => x.statusErrors))) : "—",
      vigil ? `${fmt(Math.max(...runs.map((x) => x.maxLoopBlockMs ?? Number.NaN)), 1)} (${fmt(Math.max(...runs.map((x) => x.maxLoopLagMs ?? Number.NaN)), 1)})` : "—",
    ]];
  });
  return table(
    ["setup", "events/s", "vs bare client", "vs bare + fdatasync", "ms to all N", "client CPU µs / event", "client CPU busy", "fixture CPU µs / event", "polls / streams during the run", "error statuses", "worst loop block on CPU (wall lateness), ms, max over runs"],
    rows,
    ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
  );
}

function steadyTable(r: Results): string[] {
  const of = (id: string) => r.steadyRuns.filter((x) => x.setup.id === id);
  const rate = (id: string) => median(of(id).map((x) => x.rate));
  const rows = SETUPS.filter((s) => STEADY_SETUPS.includes(s.id)).flatMap((s) => {
    const runs = of(s.id);
    if (runs.length === 0) return [];
    const rates = runs.map((x) => x.rate);
    const byCpu = [...runs].sort((a, b) => cpuPerEvent(a) - cpuPerEvent(b));
    const mid = byCpu[(byCpu.length - 1) >> 1]!;
    const vigil = s.who === "vigil";
    return [[
      label(s),
      `${fmt(median(rates))}${rangeOf(rates)}`,
      vigil ? pct(median(rates) / rate(baselineFor(s))) : "—",
      (vigil || s.variant === "floor") && s.delivery === "poll" ? pct(median(rates) / rate("baseline poll http + fdatasync")) : "—",
      fmt(median(runs.map(cpuPerEvent))),
      mid.clientThreads || "—",
    ]];
  });
  return table(["setup", "events/s", "vs bare client", "vs bare + fdatasync", "client CPU µs / event", "client CPU µs / event by thread (run of median CPU)"], rows, ["l", "r", "r", "r", "r", "l"]);
}

function modelTable(r: Results): string[] {
  const rows = SETUPS.filter((s) => s.target === "model").flatMap((s) => {
    const runs = runsOf(r, s.id);
    if (runs.length === 0) return [];
    const rates = runs.map((x) => x.rate);
    const m = (f: (x: ModelStats) => number | null) => median(runs.map((x) => f(x.model!) ?? Number.NaN));
    const vigil = s.who === "vigil";
    return [[
      label(s),
      `${fmt(median(rates))}${rangeOf(rates)}`,
      vigil || s.variant === "model-history" ? pct(median(rates) / rateOf(r, baselineFor(s))) : "—",
      vigil ? fmt(m((x) => x.ingestedMs)) : "—",
      vigil ? fmt(m((x) => x.whileIngesting)) : "—",
      vigil ? fmt(m((x) => x.afterIngesting)) : "—",
      `${fmt(m((x) => x.requests))} (${fmt(m((x) => x.batches))})`,
      fmt(m((x) => x.mb), 1),
      fmt(m((x) => x.firstBatchKiB), 1),
      fmt(m((x) => x.medianBatchKiB), 1),
      fmt(m((x) => x.maxBatchKiB), 1),
      fmt(m((x) => x.lastBatchKiB), 1),
      fmt(median(runs.map(cpuPerEvent))),
      pct(median(runs.map((x) => x.benchCpuMs / x.ms))),
    ]];
  });
  return table(
    [
      "setup",
      "events/s to the model",
      "vs baseline",
      "all N accepted after (ms)",
      "events/s to the model until then",
      "events/s after",
      "model requests (of them batches)",
      "MB sent to the model",
      "first batch (KiB)",
      "median batch (KiB)",
      "largest batch (KiB)",
      "last batch (KiB)",
      "client CPU µs / event",
      "harness CPU busy (mock model)",
    ],
    rows,
    ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
  );
}

function memoryLines(r: Results): string[] {
  const L: string[] = [];
  for (const m of r.mem) {
    L.push(
      `*${m.delivery === "poll" ? "Poll" : "Push"}* (\`delivery: "${m.delivery}"\`${m.knob !== null ? `, daemon started with \`BUN_CONFIG_MAX_HTTP_REQUESTS=${m.knob}\` and \`VIGIL_EVENTS_MAX_HTTP_STREAMS=${m.knob}\`` : ""}): ${fmt(m.subs - 1)} subscriptions after the first made in ${fmt(m.subscribeMs)} ms (${SUBSCRIBE_WINDOW} in flight), ${m.failures} failed${m.failureSample ? ` (${m.failureSample})` : ""}; the fixture then had ${m.delivery === "push" ? `${fmt(m.streamsOpen)} streams open` : `answered ${fmt(m.polls)} polls in all`}.`,
      "",
      ...table(
        ["daemon state", "VmRSS (MiB)", "VmHWM (MiB)", "RssAnon (MiB)", "open fds", "threads", "fixture VmRSS (MiB)"],
        m.rows.map((x) => [x.label, mib(x.m.rssKiB), mib(x.m.hwmKiB), mib(x.m.anonKiB), String(x.m.fds), String(x.m.threads), mib(x.fixture.rssKiB)]),
        ["l", "r", "r", "r", "r", "r", "r"],
      ),
      "",
    );
  }
  return L;
}

/** rows: [0] started, [1] session open with 0 subscriptions, [2] 1 subscription, [3] K, [4] K after 5 s. */
function perSub(m: MemResult): { rss: number; anon: number; totalMiB: number; fds: [number, number]; fixtureMiB: number } {
  const zero = m.rows[1]!;
  const one = m.rows[2]!.m;
  const k = m.rows[3]!;
  return {
    rss: (k.m.rssKiB - one.rssKiB) / (m.subs - 1),
    anon: (k.m.anonKiB - one.anonKiB) / (m.subs - 1),
    totalMiB: (k.m.rssKiB - zero.m.rssKiB) / 1024,
    fds: [zero.m.fds, k.m.fds],
    fixtureMiB: (k.fixture.rssKiB - zero.fixture.rssKiB) / 1024,
  };
}

/** Flat: neither the last nor the largest batch request is more than 1.5 × the median one. */
function batchTrend(medianKiB: number, lastKiB: number, maxKiB: number): string {
  if (![medianKiB, lastKiB, maxKiB].every(Number.isFinite)) return "not measured";
  const worst = Math.max(lastKiB, maxKiB) / medianKiB;
  return worst <= 1.5
    ? `flat (the largest is ${fmt(worst, 2)} × the median): what a batch costs does not grow with the session's age`
    : `growing with the session's age (the ${maxKiB > lastKiB ? "largest" : "last"} is ${fmt(worst, 1)} × the median)`;
}

function render(r: Results): string {
  const L: string[] = [];
  const n = r.o.events;
  const nm = r.o.modelEvents;
  const logRuns = r.runs.some((x) => x.setup.target === "log");
  const modelRuns = r.runs.some((x) => x.setup.target === "model");
  const setupCount = new Set(r.runs.map((x) => x.setup.id)).size;
  L.push("<!-- bench:events start (generated by bun bench/events/run.ts --write; replaced on the next run) -->");
  L.push(`## events — ${r.date}`, "");
  L.push(`Machine: ${r.machine}.`);
  L.push(
    `Run: \`bun bench/events/run.ts --write${r.o.steady !== 40_000 ? ` --steady ${r.o.steady}` : ""}\`, ${r.o.rounds} round${r.o.rounds === 1 ? "" : "s"} of ${setupCount} throughput setups interleaved in a rotating order, every run on fresh processes, medians over rounds (range in parentheses); ${fmt(r.seconds)} s in all; 1-min load average ${r.load[0]} at start, ${r.load[1]} at end. ${stealNote(r.steal, "throughput runs")}`,
    "",
  );
  if (logRuns) {
    L.push(
      `**Into the pending log**: one configured \`follow_up\` subscription to \`ticket.updated\` (delivery forced to poll or push) in \`vigil serve --session bench\` (stdio mode), model stalled (the first batch's run waits on it, so the rest is only ingested). Once the \`subscribed\` status frame is out, the fixture emits ${fmt(n)} events at once (\`emit_burst\`); timed until the session's \`mcp-events.log\` holds ${fmt(n)} \`add\` records (vigil appends and fdatasyncs each poll page, or each run of pushed notifications, before it moves the cursor). Knobs: poll floor 1 ms, coalesce 0, max pending 1,000,000 / 1 GiB; the push stream buffer at its default (256: once it is 7/8 full vigil stops reading the stream — the stdio pipe or the SSE body — until the durable append has drained it; only a stream held that way for 5 s ends with an overflow and reconnects from the stored cursor, shown as an \`error\` status) and, as an A/B, at ${fmt(BIG_BUFFER)}; the worst event-loop block comes from \`VIGIL_DEBUG_LOOP_BLOCK_MS=10\` (a 10 ms timer's lateness, counted only while vigil's JS thread was on CPU). The fixture answers polls with \`nextPollMs: ${NEXT_POLL_MS}\`, so the first page after the burst comes up to ${NEXT_POLL_MS} ms after it, for vigil and the baselines alike. Baselines: \`bench/events/baseline.ts\`, the SDK \`Client\` reading the same fixture the same way (poll: \`maxEvents: 50\`, at once again on \`hasMore\`; push: one \`events/stream\`), timed until it holds ${fmt(n)} distinct event ids; "+ fdatasync" also appends each page to a file and fdatasyncs it before the next poll. CPU: \`/proc/<pid>/stat\` over the run (client = vigil, or the baseline process; "busy" above 100 % means more than one thread).`,
      "",
      ...ingestionTable(r),
      "",
    );
  }
  if (r.steadyRuns.length > 0) {
    L.push(
      `**Into the pending log, steady state** (\`--steady ${r.o.steady}\`): the setups the targets read, each run again per round on fresh processes that first take an untimed burst of ${fmt(r.o.steady)} events, then the timed burst of ${fmt(n)} as above. JSC compiles a function with its optimizing tiers only after many calls, on JIT threads of the same process: through its first ~20,000 events a fresh \`vigil serve\` spends ~10–20 µs of CPU per event compiling (the \`JITWorker\` threads below), a one-off a daemon that runs for months pays once. CPU by thread: \`/proc/<pid>/task/*/schedstat\` over the timed burst, the run of median CPU, by thread name (the client's JS thread is \`vigil\` or \`bun.exe\`).`,
      "",
      ...steadyTable(r),
      "",
    );
  }
  if (modelRuns) {
    L.push(
      `**To the model**: the same setup (a fresh daemon and fixture per run) with the mock model answering at once (\`ok\`) and the coalesce window 0; the fixture emits ${fmt(nm)} events at once; timed until the model has received all ${fmt(nm)} event ids (counted in the last user message of its requests; batches of ≤ 50, so ≥ ${fmt(Math.ceil(nm / 50))} batches). Each vigil run sends the session's history with the new batch; the request body sizes of the batches (the requests that brought new event ids: the first, the median, the largest and the last) show whether what one batch costs grows with the session's age or stays flat; other requests (a summary, a retry) count in the requests and the MB, not in the batch sizes. The baseline sends each poll page as one request without history and polls again after the answer. The mock model runs in the harness process. "Until then / after": the model's rate before and after vigil had accepted all ${fmt(nm)} events (their \`mcp_event\` frames out; the pending log is not the clock here, since delivered entries are compacted out of it while the burst still comes in).`,
      "",
      ...modelTable(r),
      "",
    );
  }
  if (r.mem.length > 0) {
    L.push(
      `**Memory with ${fmt(r.o.subs)} idle subscriptions**: a fresh daemon (\`vigil serve --listen 127.0.0.1:0 --session-idle-timeout 0\`, the HTTP fixture as its one MCP server with \`events: []\`) and one session \`bench\` making runtime subscriptions (\`mcp_events_subscribe\` to \`ticket.updated\` with \`arguments: {project: "p<i>"}\`, distinct, so none matches another's events). The fixture answers polls with \`nextPollMs: ${fmt(IDLE_NEXT_POLL_MS)}\`, so pollers sleep; push streams get a heartbeat every 30 s. Readings from \`/proc/<pid>/status\` ${SETTLE_MS / 1000} s after each step, the fixture's separately. After the readings, a prompt checks that the daemon still reaches its model.`,
      "",
      ...memoryLines(r),
    );
  }
  L.push(...targetsMarkdown("Targets (issue 16)", eventsTargets(r.runs, r.o, r.steadyRuns)));
  L.push("Reading the numbers:", "");
  const v = (id: string) => rateOf(r, id);
  if (logRuns) {
    const ratio = (a: string, b: string) => pct(v(a) / v(b));
    const pollBusy = med(r, "vigil poll http → log", busy);
    const syncCost = med(r, "baseline poll http + fdatasync", (x) => x.ms) - med(r, "baseline poll http", (x) => x.ms);
    L.push(
      `- Ingestion into the durable log: poll ${fmt(v("vigil poll http → log"))} events/s over HTTP (${ratio("vigil poll http → log", "baseline poll http")} of the bare client's ${fmt(v("baseline poll http"))}/s; ${ratio("vigil poll http → log", "baseline poll http + fdatasync")} of its ${fmt(v("baseline poll http + fdatasync"))}/s with an fdatasync per page) and ${fmt(v("vigil poll stdio → log"))}/s over stdio; push ${fmt(v("vigil push http → log"))}/s over HTTP (${ratio("vigil push http → log", "baseline push http")} of the bare client) and ${fmt(v("vigil push stdio → log"))}/s over stdio (${ratio("vigil push stdio → log", "baseline push stdio")}).`,
      `- Where the time goes: vigil spends ${fmt(med(r, "vigil poll http → log", cpuPerEvent))} µs of CPU per polled event (the bare client ${fmt(med(r, "baseline poll http", cpuPerEvent))} µs) and is on CPU ${pct(pollBusy)} of the run: ${pollBusy > 0.75 ? "ingestion is CPU-bound, not bound by its syncs" : "it also waits"} — an fdatasync per page costs the bare client ${fmt(syncCost)} ms over ${fmt(med(r, "baseline poll http", (x) => x.polls))} pages.`,
    );
    const overflowHttp = med(r, "vigil push http → log", (x) => x.statusErrors);
    const overflowStdio = med(r, "vigil push stdio → log", (x) => x.statusErrors);
    if (overflowHttp > 0 || overflowStdio > 0) {
      L.push(
        `- A burst overflows vigil's push buffer (256 notifications): ${fmt(overflowHttp)} (HTTP) and ${fmt(overflowStdio)} (stdio) overflow → reconnect-from-cursor cycles per ${fmt(n)}-event burst, each replaying everything after the cursor; every event still reaches the log once. With a ${fmt(BIG_BUFFER)} buffer: ${fmt(v("vigil push http → log, buffer 100k"))}/s over HTTP (${ratio("vigil push http → log, buffer 100k", "vigil push http → log")} of the default's rate) and ${fmt(v("vigil push stdio → log, buffer 100k"))}/s over stdio (${ratio("vigil push stdio → log, buffer 100k", "vigil push stdio → log")}): over stdio the replays of the cancelled streams still cross the pipe and are parsed.`,
      );
    }
  }
  if (modelRuns) {
    const mp = (f: (x: ModelStats) => number | null) => med(r, "vigil poll http → model", (x) => f(x.model!) ?? Number.NaN);
    const mq = (f: (x: ModelStats) => number | null) => med(r, "vigil push http → model", (x) => f(x.model!) ?? Number.NaN);
    L.push(
      `- To the model: ${fmt(v("vigil poll http → model"))} events/s (poll) and ${fmt(v("vigil push http → model"))}/s (push), against ${fmt(v("baseline poll http → model"))}/s for the bare client's one history-less request per page. While the burst is still being ingested the model gets ${fmt(mp((x) => x.whileIngesting))}/s (poll) and ${fmt(mq((x) => x.whileIngesting))}/s (push): ingestion and delivery share the daemon's one JavaScript thread${mq((x) => x.whileIngesting) < mp((x) => x.whileIngesting) / 2 ? ", and a run of up to 256 pushed notifications is processed in one go, so push delays the model's batches more than poll's pages of 50 do" : ""}; afterwards ${fmt(mp((x) => x.afterIngesting))}/s and ${fmt(mq((x) => x.afterIngesting))}/s.`,
      `- What a batch costs (poll): ${fmt(mp((x) => x.requests))} requests (${fmt(mp((x) => x.batches))} batches) carried ${fmt(mp((x) => x.mb), 1)} MB for ${fmt(nm)} events (the baseline: ${fmt(med(r, "baseline poll http → model", (x) => x.model!.mb), 1)} MB); batch requests of ${fmt(mp((x) => x.firstBatchKiB), 1)} KiB first, ${fmt(mp((x) => x.medianBatchKiB), 1)} KiB median, ${fmt(mp((x) => x.maxBatchKiB), 1)} KiB largest, ${fmt(mp((x) => x.lastBatchKiB), 1)} KiB last: ${batchTrend(mp((x) => x.medianBatchKiB), mp((x) => x.lastBatchKiB), mp((x) => x.maxBatchKiB))}.`,
    );
  }
  for (const m of r.mem) {
    const p = perSub(m);
    L.push(
      `- Memory, ${m.delivery}: ${fmt(m.subs)} idle subscriptions add ${fmt(p.totalMiB, 1)} MiB of VmRSS to the open session, ~${fmt(p.rss, 1)} KiB of RSS (~${fmt(p.anon, 1)} KiB RssAnon) per subscription after the first; open fds ${p.fds[0]} → ${p.fds[1]}${m.delivery === "push" ? " (one HTTP connection per stream)" : " (no fd per subscription)"}; the fixture grew by ${fmt(p.fixtureMiB, 1)} MiB. Idle CPU ${fmt(m.idleCpuMsPer5s)} ms per 5 s. ${m.promptMs !== null ? `A prompt's model request went out ${fmt(m.promptMs)} ms after the prompt.` : `A prompt's model request was NOT sent within ${PROBE_MS / 1000} s.`}`,
    );
  }
  if (r.probe !== null) {
    const p = r.probe;
    L.push(
      `- Push at Bun's default fetch limit (no \`BUN_CONFIG_MAX_HTTP_REQUESTS\`): with ${fmt(p.streams)} push streams open (${p.failures} of ${BUN_DEFAULT_MAX_HTTP} subscriptions failed), subscription ${BUN_DEFAULT_MAX_HTTP + 1} was ${p.nextAnswered ? "answered" : "not answered"} within ${PROBE_MS / 1000} s and a prompt's model request ${p.promptMs === null ? `was not sent within ${PROBE_MS / 1000} s` : `went out after ${fmt(p.promptMs)} ms`}. Bun's fetch runs at most ${BUN_DEFAULT_MAX_HTTP} requests at once per process and each open \`events/stream\` over HTTP holds one for its lifetime; vigil opens at most \`VIGIL_EVENTS_MAX_HTTP_STREAMS\` (default 128) of them, so model calls, polls and tool calls keep a slot (a forced push past it is refused; a negotiated one polls). The ${fmt(r.o.subs)} push subscriptions above ran with both limits raised.`,
    );
  }
  const exits = [...r.runs.filter((x) => x.setup.who === "vigil").map((x) => x.exit), ...r.mem.map((m) => m.exit)];
  L.push(`- Every vigil stopped on SIGTERM with exit ${[...new Set(exits.map(String))].join(" or ")} (143 = 128+15 in stdio mode, 0 in daemon mode).`, "");
  L.push("<!-- bench:events end -->");
  return L.join("\n");
}

function textSummary(r: Results): string {
  const out = ["", `vigil serve events bench — ${r.machine}; ${fmt(r.seconds)} s`, ""];
  for (const x of r.runs) {
    const m = x.model;
    const model = m
      ? `  model ${m.requests} req (${m.batches} batches) ${fmt(m.mb, 1)} MB, batch KiB first ${fmt(m.firstBatchKiB, 1)} median ${fmt(m.medianBatchKiB, 1)} max ${fmt(m.maxBatchKiB, 1)} last ${fmt(m.lastBatchKiB, 1)}, ${fmt(m.whileIngesting)}/s while ingesting (${fmt(m.ingestedMs ?? Number.NaN)} ms), ${fmt(m.afterIngesting)}/s after`
      : "";
    out.push(
      `  round ${x.round} ${x.setup.id.padEnd(36)} ${fmt(x.rate).padStart(7)} ev/s  ${fmt(x.ms).padStart(6)} ms  cpu ${fmt(cpuPerEvent(x)).padStart(4)} µs/ev  polls ${x.polls} streams ${x.streams} errors ${x.statusErrors}${x.maxLoopBlockMs === null ? "" : ` block ${fmt(x.maxLoopBlockMs, 1)} ms (lag ${fmt(x.maxLoopLagMs ?? Number.NaN, 1)})`}${model}`,
      `      CPU µs/event by thread: ${x.clientThreads || "—"}`,
    );
  }
  for (const x of r.steadyRuns) {
    out.push(`  round ${x.round} ${`${x.setup.id}, steady`.padEnd(36)} ${fmt(x.rate).padStart(7)} ev/s  ${fmt(x.ms).padStart(6)} ms  cpu ${fmt(cpuPerEvent(x)).padStart(4)} µs/ev  by thread: ${x.clientThreads || "—"}`);
  }
  for (const m of r.mem) for (const row of m.rows) out.push(`  memory ${m.delivery} ${row.label.padEnd(52)} VmRSS ${mib(row.m.rssKiB)} MiB  RssAnon ${mib(row.m.anonKiB)} MiB  fds ${row.m.fds}  fixture ${mib(row.fixture.rssKiB)} MiB`);
  if (r.probe) out.push(`  push probe: ${r.probe.streams} streams, next subscription answered: ${r.probe.nextAnswered}, prompt: ${r.probe.promptMs === null ? "not sent" : `${fmt(r.probe.promptMs)} ms`}`);
  out.push(...targetsText("Targets (issue 16)", eventsTargets(r.runs, r.o, r.steadyRuns)));
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  profileDir = o.profile;
  if (profileDir !== null) mkdirSync(profileDir, { recursive: true });
  if (!vigilPresent()) return 2;
  const modelRuns = o.phases.has("model") ? o.rounds * SETUPS.filter((s) => s.target === "model").length : 0;
  // Twice the bound of a quiet run: throughput runs done again for the host's steal take their time too.
  // A steady-state run: its untimed burst and the timed one, at ≥ 5,000 events/s, plus start and stop.
  const steadyCount = o.phases.has("log") && o.steady > 0 ? o.rounds * STEADY_SETUPS.length : 0;
  const steadyRunMs = 10_000 + ((o.steady + o.events) / 5000) * 1000;
  const deadlineMs = 2 * (DEADLINE_MS + modelRuns * modelRunMs(o.modelEvents) + steadyCount * steadyRunMs);
  const runDone = exitUnlessDoneWithin(deadlineMs);
  const began = performance.now();
  const loadStart = loadavg()[0]!.toFixed(2);
  tempRoot = mkdtempSync(join(tmpdir(), "vigil-bench-events-"));

  // (c) first, on fresh daemons and a quiet machine.
  const mem: MemResult[] = [];
  let probe: ProbeResult | null = null;
  if (o.phases.has("memory")) {
    process.stderr.write(`memory: ${o.subs} idle poll subscriptions…\n`);
    mem.push(await idleMemory("poll", o.subs, null));
    process.stderr.write(`memory: ${o.subs} idle push subscriptions (BUN_CONFIG_MAX_HTTP_REQUESTS=${PUSH_MAX_HTTP})…\n`);
    mem.push(await idleMemory("push", o.subs, String(PUSH_MAX_HTTP)));
    if (!o.quick) {
      process.stderr.write(`memory: push at Bun's default fetch limit (${BUN_DEFAULT_MAX_HTTP} streams)…\n`);
      probe = await pushProbe();
    }
  }

  // (a), (b)
  const runs: FlowRun[] = [];
  const steadyRuns: FlowRun[] = [];
  const steal = stealCount();
  const setups = SETUPS.filter((s) => o.phases.has(s.target) && (o.only === null || o.only.some((x) => s.id.includes(x))));
  if (setups.length > 0) {
    for (let round = 1; round <= o.rounds; round++) {
      for (let i = 0; i < setups.length; i++) {
        const s = setups[(i + round - 1) % setups.length]!;
        const n = s.target === "model" ? o.modelEvents : o.events;
        const x = await quietRun(s.id, steal, () => (s.who === "vigil" ? vigilRun(s, round, n, 0) : baselineRun(s, round, n, 0)));
        runs.push(x);
        if (o.steady > 0 && STEADY_SETUPS.includes(s.id)) {
          const w = await quietRun(`${s.id}, steady state`, steal, () => (s.who === "vigil" ? vigilRun(s, round, n, o.steady) : baselineRun(s, round, n, o.steady)));
          steadyRuns.push(w);
          process.stderr.write(`  round ${round}/${o.rounds} ${`${s.id}, steady`.padEnd(32)} ${fmt(w.rate).padStart(7)} events/s (${fmt(w.ms)} ms), CPU µs/event by thread: ${w.clientThreads}\n`);
        }
        process.stderr.write(`  round ${round}/${o.rounds} ${s.id.padEnd(32)} ${fmt(x.rate).padStart(7)} events/s (${fmt(x.ms)} ms)${x.statusErrors ? `, ${x.statusErrors} error statuses` : ""}${x.maxLoopBlockMs === null ? "" : `, loop block ${fmt(x.maxLoopBlockMs, 1)} ms on CPU (lag ${fmt(x.maxLoopLagMs ?? Number.NaN, 1)} ms)`}\n`);
      }
    }
  }
  runDone();

  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    machine: machine(),
    o,
    runs,
    steadyRuns,
    mem,
    probe,
    seconds: (performance.now() - began) / 1000,
    load: [loadStart, loadavg()[0]!.toFixed(2)],
    steal,
  };
  const section = render(results);
  publishResults("events", textSummary(results), section, o.write);
  return 0;
}

runBench(main);
