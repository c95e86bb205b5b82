/**
 * Soak harness for `vigil serve` (issue 12: a daemon left running for months must not leak): one
 * daemon, one session, a long steady load, and the serve process's memory and descriptors read from
 * /proc along the way. The daemon has two MCP servers, an events fixture each (one per phase, so
 * that each phase's cancels are counted apart):
 *
 *   (a) poll — a runtime subscription (`mcp_events_subscribe`, `delivery: "poll"`, `action:
 *       "notify"`) to the first fixture, which answers every poll at once, empty, with
 *       `nextPollMs: 1`; vigil runs with `VIGIL_EVENTS_POLL_FLOOR_MS=1`, so it polls back to back, for
 *       N polls (default 100,000) as counted by the fixture; then the subscription is removed and the
 *       `notifications/cancelled` the fixture receives afterwards are counted, as the fixture
 *       classifies them (test/fixtures/servers/events-fixture/answers.ts): naming a request whose
 *       answer vigil had provably read (the defect: the base protocol allows a cancel only for a
 *       request still in progress) or one still in flight (allowed: the poll under way when the
 *       subscription stopped, its answer possibly already on the wire);
 *   (b) push — a second subscription in the same session, to the second fixture, `delivery: "push"`, `action: "notify"`, and
 *       N events (default 100,000) emitted in chunks of 100 with at most 200 not yet seen by the
 *       session's SSE client (`GET /v1/sessions/soak/frames`, one `mcp_event` frame per event), so
 *       the stream is steady and never overflows vigil's push buffer (256).
 *
 * Readings (VmRSS, VmHWM, RssAnon, Threads from /proc/<pid>/status, open fds from /proc/<pid>/fd)
 * of the serve process: once started, once the session is open, then at every tenth of N (polls done
 * or events received), and after each unsubscribe. Every reading is **settled** (./settle.ts), so
 * that it measures what the process retains, not how fast it allocates: at a checkpoint the load
 * pauses — push: no event is emitted past the mark and every emitted one has been received; poll:
 * the fixture holds its poll answers (`/control/pause_polls`, one poll waits in flight) — and RSS is
 * sampled every 250 ms until it made no new low for 2 s (at most 15 s); then the load resumes.
 * (Read while a 5 s burst runs, RSS is mostly garbage not yet collected: +25 MiB from 10,000 to
 * 100,000 pushed events, back down once idle.) The targets compare the settled reading at N/10 with
 * the one at N (10,000 and 100,000 by default): RSS growth under 10 MiB, fds flat (at most 2 more:
 * keep-alive connections come and go), and, per phase and at the stop, no cancel naming a request
 * already answered. Each is printed PASS or FAIL; in-flight cancels are reported next to them.
 *
 * Baseline, in the same run: `bench/soak/baseline.ts`, a bare SDK client doing the same load on a
 * fresh fixture (the same polls with the same 1 ms floor, one `events/stream` taking the same paced
 * events), read the same way (the same pauses, settled readings): the runtime's and the SDK's own
 * drift under that load, next to vigil's.
 *
 *   bun bench/soak/run.ts [--write] [--polls N] [--events N] [--phases poll,push] [--setups vigil,baseline] [--quick]
 *
 *   --write      add or replace the `<!-- bench:soak … -->` section of bench/RESULTS.md (full counts only)
 *   --polls N    polls in (a) (default 100000)
 *   --events N   events in (b) (default 100000)
 *   --phases     poll and/or push (default both)
 *   --setups     vigil and/or baseline (default both)
 *   --quick      10,000 polls and 10,000 events: a smoke test (not written)
 *
 * The binary under test is dist/vigil, or $VIGIL_BIN (a before/after comparison; the report names
 * it). Every child leads its own process group; every wait is bounded (each phase's load by a budget
 * that grows with N, each settling by 15 s, the whole run by their sum); everything is killed on every way out (errors,
 * SIGINT/SIGTERM/SIGHUP) and the temporary directory is removed.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type MockModel, startMockModel } from "../../test/fixtures/mock-model.ts";
import { RESULTS_FILE, writeResultsSection } from "../results-file.ts";
import { fmt, mib, table, runBench } from "../report.ts";
import { SseStream } from "../sse-stream.ts";
import { VIGIL, host, machine, vigilPresent } from "../vigil-under-test.ts";
import { Checkpoints, type Reading, SETTLE_MAX_MS, settledReading } from "./settle.ts";
import { type Child, exitUnlessDoneWithin, spawnChild, stop, until, waitLine, waitStderr } from "../children.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
const FIXTURE = join(ROOT, "test/fixtures/servers/events-fixture.ts");
const BASELINE = join(import.meta.dir, "baseline.ts");

const SESSION = "soak";
const EVENT_NAME = "ticket.updated";
const START_MS = 20_000;
/** How often the poll phase asks the fixture how many polls it answered (its state is ~1 MB of JSON). */
const STATE_EVERY_MS = 500;
/** Push pacing: chunks of this many events, at most two chunks not yet seen by the reader. */
const CHUNK = 100;
/** After an unsubscribe or a stop, cancels are counted until none came for this long (bounded by CANCELS_MS). */
const CANCELS_QUIET_MS = 1_000;
const CANCELS_MS = 10_000;
/** Phase budgets (load time, pauses for readings not counted): generous against the rates seen on a 2-CPU machine (~600 polls/s, ~15,000 events/s). */
const pollBudgetMs = (n: number) => Math.max(30_000, n * 3.5);
const pushBudgetMs = (n: number) => Math.max(30_000, n * 1);
/** What the readings of one phase may take at most (ten, each bounded by SETTLE_MAX_MS, plus the fixture's round trips). */
const PHASE_READINGS_MS = 10 * (SETTLE_MAX_MS + 2_000);
const RSS_TARGET_MIB = 10;
const FD_SLACK = 2;

// ---------------------------------------------------------------------------------------------
// Options

type Kind = "poll" | "push";
type Who = "vigil" | "baseline";

interface Options {
  write: boolean;
  quick: boolean;
  polls: number;
  events: number;
  phases: Set<Kind>;
  setups: Set<Who>;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { write: false, quick: false, polls: 100_000, events: 100_000, phases: new Set(["poll", "push"]), setups: new Set(["vigil", "baseline"]) };
  const num = (flag: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min || n > max) usage(`${flag}: expected an integer from ${min} to ${max}`);
    return n;
  };
  const list = <T extends string>(flag: string, v: string | undefined, allowed: readonly T[]): Set<T> => {
    const items = (v ?? "").split(",").filter(Boolean);
    if (items.length === 0 || items.some((x) => !(allowed as readonly string[]).includes(x))) usage(`${flag}: a comma-separated list of ${allowed.join(", ")}`);
    return new Set(items as T[]);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") o.write = true;
    else if (a === "--quick") Object.assign(o, { quick: true, polls: 10_000, events: 10_000 });
    else if (a === "--polls") o.polls = num(a, argv[++i], 100, 1_000_000);
    else if (a === "--events") o.events = num(a, argv[++i], 1_000, 1_000_000);
    else if (a === "--phases") o.phases = list(a, argv[++i], ["poll", "push"] as const);
    else if (a === "--setups") o.setups = list(a, argv[++i], ["vigil", "baseline"] as const);
    else if (a === "--help" || a === "-h") usage();
    else usage(`unknown argument ${a}`);
  }
  if (o.write && (o.quick || o.polls !== 100_000 || o.events !== 100_000 || o.phases.size < 2 || o.setups.size < 2)) {
    usage("--write records the full run only (100,000 polls and events, both phases, vigil and the baseline)");
  }
  return o;
}

function usage(error?: string): never {
  if (error) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write("usage: bun bench/soak/run.ts [--write] [--polls N] [--events N] [--phases poll,push] [--setups vigil,baseline] [--quick]\n");
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------
// Clean-up on every way out (after the process groups, see ../children.ts)

const liveModels = new Set<MockModel>();
let tempRoot: string | null = null;

process.on("exit", () => {
  for (const m of liveModels) void m.close();
  if (tempRoot !== null) rmSync(tempRoot, { recursive: true, force: true });
  tempRoot = null;
});

// ---------------------------------------------------------------------------------------------
// The events fixture (HTTP, a child of ours) and its control API

interface FixtureState {
  polls: number;
  streams_open: number;
  cancels: number;
  cancels_after_answer: number;
  cancels_in_flight: number;
  cancels_unmatched: number;
}

interface Fixture {
  child: Child;
  mcpUrl: string;
  post(route: string, body?: unknown): Promise<unknown>;
  state(): Promise<FixtureState>;
}

async function startFixture(): Promise<Fixture> {
  // nextPollMs 1: with vigil's floor at 1 ms, polls follow each other as fast as both sides go.
  const child = spawnChild("events fixture", [BUN, FIXTURE], { env: { MCP_FIXTURE_EXIT_ON_STDIN_EOF: "1", MCP_FIXTURE_NEXT_POLL_MS: "1" } });
  const urls = JSON.parse((await waitLine(child, /^(\{.*"mcp".*\})$/, START_MS))[1]!) as { mcp: string; control: string };
  const call = async (path: string, init: RequestInit) => {
    const res = await fetch(`${urls.control}/control/${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`fixture ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  };
  return {
    child,
    mcpUrl: urls.mcp,
    post: (route, body = {}) => call(route, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    state: async () => (await call("state", { method: "GET" })) as FixtureState,
  };
}

/**
 * The `notifications/cancelled` a fixture received since `before`, as it classified them
 * (events-fixture/answers.ts): naming a request it had already answered (the defect: the base
 * protocol allows a cancel only for a request still in progress), one not answered yet (allowed:
 * e.g. the poll in flight when a subscription stops), or one it never saw.
 */
interface CancelCount {
  all: number;
  afterAnswer: number;
  inFlight: number;
  unmatched: number;
}

const cancelsOf = (s: FixtureState): CancelCount => ({ all: s.cancels, afterAnswer: s.cancels_after_answer, inFlight: s.cancels_in_flight, unmatched: s.cancels_unmatched });

/** Cancels the fixture received since `before`, once none came for CANCELS_QUIET_MS (bounded). */
async function cancelsAfter(fixture: Fixture, before: FixtureState): Promise<CancelCount> {
  const deadline = performance.now() + CANCELS_MS;
  let last = await fixture.state();
  let since = performance.now();
  while (performance.now() < deadline) {
    await Bun.sleep(250);
    const now = await fixture.state();
    if (now.cancels !== last.cancels) since = performance.now();
    else if (performance.now() - since >= CANCELS_QUIET_MS) break;
    last = now;
  }
  const a = cancelsOf(before);
  const b = cancelsOf(last);
  return { all: b.all - a.all, afterAnswer: b.afterAnswer - a.afterAnswer, inFlight: b.inFlight - a.inFlight, unmatched: b.unmatched - a.unmatched };
}

const sumCancels = (cs: CancelCount[]): CancelCount => ({
  all: cs.reduce((a, c) => a + c.all, 0),
  afterAnswer: cs.reduce((a, c) => a + c.afterAnswer, 0),
  inFlight: cs.reduce((a, c) => a + c.inFlight, 0),
  unmatched: cs.reduce((a, c) => a + c.unmatched, 0),
});
const cancelText = (c: CancelCount) =>
  c.all === 0 ? "0" : `${fmt(c.all)} (${fmt(c.afterAnswer)} for answered requests, ${fmt(c.inFlight)} in flight${c.unmatched > 0 ? `, ${fmt(c.unmatched)} unmatched` : ""})`;

// ---------------------------------------------------------------------------------------------
// Readings (settled, see ./settle.ts)

interface PhaseResult {
  who: Who;
  kind: Kind;
  n: number;
  readings: Reading[];
  /** Wall ms of the load (start → N, pauses for readings excluded) and process CPU ms (pauses included). */
  ms: number;
  cpuMs: number;
  /** Cancels after the unsubscribe (vigil) or the client's exit (baseline). */
  cancels: CancelCount;
  /** vigil: `error` status frames during the phase (push: an overflow or a dead stream would show here); baseline: polls given up after 5 s. */
  errorStatuses: number;
}

/** Bounded load: the phase's budget counts load time only (each pause for a reading is bounded by SETTLE_MAX_MS). */
function checkLoad(cp: Checkpoints, budgetMs: number, alive: () => boolean, what: string, progress: string, stderr: () => string): void {
  if (!alive()) throw new Error(`${what}: the client exited after ${progress}: ${stderr().slice(-1500)}`);
  if (cp.loadMs > budgetMs) throw new Error(`${what}: ${progress} within ${budgetMs} ms: ${stderr().slice(-1500)}`);
}

/**
 * The poll phase's load: asks the fixture how many polls it answered; at each checkpoint the fixture
 * holds its poll answers (one poll waits in flight, nothing else moves) while the process settles.
 */
async function pollLoad(fixture: Fixture, n: number, cp: Checkpoints, alive: () => boolean, what: string, stderr: () => string): Promise<void> {
  const polls0 = (await fixture.state()).polls;
  for (let mark = cp.next; mark !== null; mark = cp.next) {
    const done = (await fixture.state()).polls - polls0;
    if (done >= mark) {
      await fixture.post("pause_polls", { paused: true });
      try {
        await cp.read((await fixture.state()).polls - polls0);
      } finally {
        await fixture.post("pause_polls", { paused: false });
      }
      continue;
    }
    checkLoad(cp, pollBudgetMs(n), alive, what, `${done} of ${n} polls`, stderr);
    await Bun.sleep(STATE_EVERY_MS);
  }
}

/**
 * The push phase's load: n events in chunks, at most two chunks ahead of what the reader has seen,
 * never past the next checkpoint; there, with every emitted event received, the process settles.
 */
async function pushLoad(fixture: Fixture, n: number, received: () => number, cp: Checkpoints, alive: () => boolean, what: string, stderr: () => string): Promise<void> {
  const base = received();
  const seen = () => received() - base;
  let emitted = 0;
  for (let mark = cp.next; mark !== null; mark = cp.next) {
    if (seen() >= mark) {
      await cp.read(seen());
      continue;
    }
    if (emitted < mark && emitted - seen() <= CHUNK) {
      const count = Math.min(CHUNK, mark - emitted);
      await fixture.post("emit_burst", { count, name: EVENT_NAME });
      emitted += count;
    } else {
      await Bun.sleep(1);
    }
    checkLoad(cp, pushBudgetMs(n), alive, what, `${seen()} of ${n} events`, stderr);
  }
}

// ---------------------------------------------------------------------------------------------
// vigil: the daemon, its session's commands and its frames

interface Daemon {
  child: Child;
  base: string;
}

async function command(d: Daemon, cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${d.base}/v1/sessions/${SESSION}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(cmd),
    signal: AbortSignal.timeout(30_000),
  });
  const r = (await res.json()) as { success: boolean; data?: Record<string, unknown>; error?: { message?: string } };
  if (!r.success) throw new Error(`${String(cmd.type)}: ${r.error?.message ?? `HTTP ${res.status}`}`);
  return r.data ?? {};
}

/**
 * The session's SSE stream, counted on the text: `mcp_event` frames, and the `subscribed` and
 * `error` status frames. Frames are `{"seq":…,"time":"…","type":…}`, so a frame's type is a fixed
 * substring of its data line.
 */
class FrameReader {
  events = 0;
  subscribed = 0;
  errors = 0;
  private carry = "";
  private readonly decoder = new TextDecoder();
  private readonly stream: SseStream;

  constructor(url: string) {
    this.stream = new SseStream(url, (chunk) => this.count(chunk));
  }

  get attached(): boolean {
    return this.stream.attached;
  }

  get closed(): boolean {
    return this.stream.closed;
  }

  close(): void {
    this.stream.close();
  }

  private count(chunk: Uint8Array): void {
    const text = this.carry + this.decoder.decode(chunk, { stream: true });
    const end = text.lastIndexOf("\n");
    this.carry = text.slice(end + 1);
    if (end === -1) return;
    for (const line of text.slice(0, end).split("\n")) {
      if (!line.startsWith("data: ")) continue;
      const head = line.slice(0, 120);
      if (head.includes('"type":"mcp_event",')) this.events++;
      else if (head.includes('"type":"mcp_event_status"')) {
        if (line.includes('"kind":"subscribed"')) this.subscribed++;
        else if (line.includes('"kind":"error"')) this.errors++;
      }
    }
  }
}

interface VigilResult {
  idle: Reading[];
  phases: PhaseResult[];
  /** Cancels the fixtures received while serve stopped (SIGTERM), both subscriptions already gone. */
  cancelsAtStop: CancelCount;
  exit: number | null;
}

async function vigilRun(o: Options): Promise<VigilResult> {
  const dir = join(tempRoot!, "vigil");
  mkdirSync(dir, { recursive: true });
  const model = await startMockModel();
  liveModels.add(model);
  // One fixture per phase, each vigil's MCP server of its own: each phase's cancels are counted
  // apart (and the push phase's not lost to a poll phase that filled the fixture's record).
  const fixtures: Record<Kind, Fixture> = { poll: await startFixture(), push: await startFixture() };
  const server = (k: Kind) => `tickets-${k}`;
  let d: Daemon | null = null;
  let frames: FrameReader | null = null;
  try {
    const config = join(dir, "vigil.json");
    writeFileSync(
      config,
      JSON.stringify({
        model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 120_000 },
        mcp_servers: (["poll", "push"] as const).map((k) => ({ name: server(k), transport: "http", url: fixtures[k].mcpUrl, events: [] })),
      }),
    );
    const child = spawnChild("vigil serve --listen", [VIGIL, "serve", "--config", config, "--state-dir", join(dir, "state"), "--listen", "127.0.0.1:0", "--session-idle-timeout", "0"], {
      env: { VIGIL_EVENTS_POLL_FLOOR_MS: "1" },
    });
    const base = (await waitStderr(child, /vigil serve listening (http:\/\/\S+)\n/, START_MS))[1]!;
    d = { child, base };
    const dd = d;
    const alive = () => dd.child.proc.exitCode === null && dd.child.proc.signalCode === null;
    await fetch(`${base}/v1/health`);
    const idle = [await settledReading(child.pid, "started (one /v1/health)")];
    await command(d, { type: "mcp_events_list", id: "list" });
    frames = new FrameReader(`${base}/v1/sessions/${SESSION}/frames`);
    const fr = frames;
    if (!(await until(() => fr.attached || fr.closed, START_MS, 5)) || fr.closed) throw new Error("the session's SSE stream did not attach");
    idle.push(await settledReading(child.pid, `session open, SSE client attached, no subscription`));
    const phases: PhaseResult[] = [];
    for (const kind of ["poll", "push"] as const) {
      if (!o.phases.has(kind)) continue;
      const n = kind === "poll" ? o.polls : o.events;
      process.stderr.write(`vigil ${kind}: ${fmt(n)} ${kind === "poll" ? "polls" : "events"}…\n`);
      const subscribed0 = fr.subscribed;
      const errors0 = fr.errors;
      const fixture = fixtures[kind];
      await command(d, { type: "mcp_events_subscribe", id: `sub-${kind}`, server: server(kind), name: EVENT_NAME, delivery: kind, action: "notify" });
      if (!(await until(() => fr.subscribed > subscribed0 || !alive(), START_MS, 5)) || !alive()) throw new Error(`vigil ${kind}: no subscribed status within ${START_MS} ms`);
      const cp = new Checkpoints(child.pid, n);
      const stderr = () => dd.child.stderr;
      if (kind === "poll") await pollLoad(fixture, n, cp, alive, "vigil poll", stderr);
      else await pushLoad(fixture, n, () => fr.events, cp, alive, "vigil push", stderr);
      const ms = cp.loadMs;
      const cpuMs = cp.cpuMs;
      const before = await fixture.state();
      await command(d, { type: "mcp_events_unsubscribe", id: `unsub-${kind}`, server: server(kind), name: EVENT_NAME });
      const cancels = await cancelsAfter(fixture, before);
      const readings = [...cp.readings, await settledReading(child.pid, "after the unsubscribe")];
      phases.push({ who: "vigil", kind, n, readings, ms, cpuMs, cancels, errorStatuses: fr.errors - errors0 });
    }
    frames.close();
    frames = null;
    const before = await Promise.all([fixtures.poll.state(), fixtures.push.state()]);
    const exit = await stop(d.child);
    d = null;
    const cancelsAtStop = sumCancels([await cancelsAfter(fixtures.poll, before[0]), await cancelsAfter(fixtures.push, before[1])]);
    return { idle, phases, cancelsAtStop, exit };
  } finally {
    frames?.close();
    if (d !== null) await stop(d.child);
    for (const f of Object.values(fixtures)) await stop(f.child, "eof");
    liveModels.delete(model);
    await model.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The baseline: the same load on a bare SDK client, one fresh fixture per phase

async function baselineRun(kind: Kind, n: number): Promise<PhaseResult> {
  const fixture = await startFixture();
  let client: Child | null = null;
  try {
    process.stderr.write(`baseline ${kind}: ${fmt(n)} ${kind === "poll" ? "polls" : "events"}…\n`);
    let received = 0;
    let ready = false;
    let timeouts = 0;
    const c = spawnChild(`soak baseline ${kind}`, [BUN, BASELINE, "--mode", kind, "--url", fixture.mcpUrl], {
      onLine: (line) => {
        if (line.startsWith('{"events"')) received = (JSON.parse(line) as { events: number }).events;
        else if (line.startsWith('{"timeouts"')) timeouts = (JSON.parse(line) as { timeouts: number }).timeouts;
        else if (line.startsWith('{"ready"')) ready = true;
      },
    });
    client = c;
    const alive = () => c.proc.exitCode === null && c.proc.signalCode === null;
    if (!(await until(() => ready || !alive(), START_MS, 5)) || !ready) throw new Error(`baseline ${kind}: not ready within ${START_MS} ms: ${c.stderr.slice(-1500)}`);
    const idle = await settledReading(c.pid, "ready (connected, subscribed)");
    const cp = new Checkpoints(c.pid, n);
    const stderr = () => c.stderr;
    if (kind === "poll") await pollLoad(fixture, n, cp, alive, "baseline poll", stderr);
    else await pushLoad(fixture, n, () => received, cp, alive, "baseline push", stderr);
    const ms = cp.loadMs;
    const cpuMs = cp.cpuMs;
    const before = await fixture.state();
    await stop(c, "eof");
    client = null;
    const cancels = await cancelsAfter(fixture, before);
    return { who: "baseline", kind, n, readings: [idle, ...cp.readings], ms, cpuMs, cancels, errorStatuses: timeouts };
  } finally {
    if (client !== null) await stop(client, "eof");
    await stop(fixture.child, "eof");
  }
}

// ---------------------------------------------------------------------------------------------
// Targets and report

interface Verdict {
  /** A few words for the one-line verdict. */
  short: string;
  target: string;
  measured: string;
  pass: boolean;
}

/** The settled load readings at n/10 and at n (the first and the last checkpoint). */
function ends(p: PhaseResult): [Reading, Reading] {
  const load = p.readings.filter((r) => r.done !== null && Number.isFinite(r.ms));
  return [load[0]!, load.at(-1)!];
}

const growthMiB = (p: PhaseResult) => {
  const [a, b] = ends(p);
  return (b.m.rssKiB - a.m.rssKiB) / 1024;
};

const unit = (k: Kind) => (k === "poll" ? "polls" : "events");

function verdicts(r: Results): Verdict[] {
  const out: Verdict[] = [];
  for (const p of r.vigil?.phases ?? []) {
    const [a, b] = ends(p);
    const base = r.baseline.find((x) => x.kind === p.kind);
    const g = growthMiB(p);
    out.push({
      short: `${p.kind} RSS`,
      target: `${p.kind}: settled VmRSS growth from ${fmt(p.n / 10)} to ${fmt(p.n)} ${unit(p.kind)} < ${RSS_TARGET_MIB} MiB`,
      measured: `${mib(a.m.rssKiB)} → ${mib(b.m.rssKiB)} MiB: ${g >= 0 ? "+" : ""}${fmt(g, 1)} MiB${base ? ` (baseline ${growthMiB(base) >= 0 ? "+" : ""}${fmt(growthMiB(base), 1)} MiB)` : ""}`,
      pass: g < RSS_TARGET_MIB,
    });
    out.push({
      short: `${p.kind} fds`,
      target: `${p.kind}: open fds flat from ${fmt(p.n / 10)} to ${fmt(p.n)} ${unit(p.kind)} (at most +${FD_SLACK})`,
      measured: `${a.m.fds} → ${b.m.fds}`,
      pass: b.m.fds - a.m.fds <= FD_SLACK,
    });
    out.push({
      short: `${p.kind} cancels`,
      target: `${p.kind}: no \`notifications/cancelled\` naming a request already answered, after unsubscribing (one for the ${p.kind === "poll" ? "poll" : "stream"} in flight is allowed)`,
      measured: cancelText(p.cancels),
      pass: p.cancels.afterAnswer === 0,
    });
  }
  if (r.vigil !== null) {
    out.push({
      short: "stop cancels",
      target: "stop (SIGTERM), no subscription left: no `notifications/cancelled` naming a request already answered",
      measured: cancelText(r.vigil.cancelsAtStop),
      pass: r.vigil.cancelsAtStop.afterAnswer === 0,
    });
  }
  return out;
}

interface Results {
  date: string;
  machine: string;
  o: Options;
  vigil: VigilResult | null;
  baseline: PhaseResult[];
  seconds: number;
  load: [string, string];
}

function readingRows(rows: Reading[], k: Kind | null): string[][] {
  return rows.map((x) => [
    x.done === null ? x.label : `${x.label} ${k === null ? "" : unit(k)} (${fmt(x.done)} when read)`,
    mib(x.m.rssKiB),
    mib(x.m.hwmKiB),
    mib(x.m.anonKiB),
    String(x.m.fds),
    String(x.m.threads),
    Number.isFinite(x.ms) ? fmt(x.ms / 1000, 1) : "",
    Number.isFinite(x.cpuMs) ? fmt(x.cpuMs) : "",
    fmt(x.settleMs / 1000, 1),
  ]);
}

const READING_HEADERS = ["reading (settled)", "VmRSS (MiB)", "VmHWM (MiB)", "RssAnon (MiB)", "open fds", "threads", "s of load", "CPU ms", "settled in (s)"];
const READING_ALIGN: ("l" | "r")[] = ["l", "r", "r", "r", "r", "r", "r", "r", "r"];

function rate(p: PhaseResult): string {
  return `${fmt(p.n / (p.ms / 1000))} ${unit(p.kind)}/s, ${fmt((p.cpuMs * 1000) / p.n)} µs of CPU per ${p.kind === "poll" ? "poll" : "event"}`;
}

const verdictLine = (v: Verdict[]) =>
  v.length === 0 ? "no targets measured (vigil not run)" : v.every((x) => x.pass) ? "PASS" : `FAIL (${v.filter((x) => !x.pass).map((x) => x.short).join(", ")})`;

function render(r: Results): string {
  const L: string[] = [];
  const v = verdicts(r);
  L.push("<!-- bench:soak start (generated by bun bench/soak/run.ts --write; replaced on the next run) -->");
  L.push(`## soak — ${r.date}`, "");
  L.push(`Machine: ${r.machine}.`);
  L.push(`Run: \`bun bench/soak/run.ts${r.o.write ? " --write" : ""}\`, ${fmt(r.o.polls)} polls and ${fmt(r.o.events)} events, one pass (a soak, not rounds); ${fmt(r.seconds)} s in all; 1-min load average ${r.load[0]} at start, ${r.load[1]} at end.`, "");
  L.push(
    `**Setup**: one \`vigil serve --listen 127.0.0.1:0 --session-idle-timeout 0\` (\`VIGIL_EVENTS_POLL_FLOOR_MS=1\`) with two MCP servers, an HTTP events fixture each (\`events: []\`; one per phase, so that each phase's cancels are counted apart), one session \`${SESSION}\` with an SSE client attached. *Poll*: a runtime subscription (\`mcp_events_subscribe\`, \`delivery: "poll"\`, \`action: "notify"\`); the fixture answers every poll at once, empty, with \`nextPollMs: 1\`; after ${fmt(r.o.polls)} polls (the fixture's count) the subscription is removed and the \`notifications/cancelled\` the fixture receives are counted until 1 s passes without one, each classified by the fixture as naming a request it had already answered (the defect) or one still in flight (allowed by the base protocol). *Push*: a second subscription in the same session (\`delivery: "push"\`, \`action: "notify"\`); ${fmt(r.o.events)} events emitted in chunks of ${CHUNK}, at most ${2 * CHUNK} ahead of the \`mcp_event\` frames the SSE client has seen (below the push buffer of 256). Readings: \`/proc/<pid>/status\` (VmRSS, VmHWM, RssAnon, Threads) and \`/proc/<pid>/fd\` of the serve process, settled (retention, not allocation rate): at every tenth of the load the load pauses (push: no more events emitted, all emitted ones received; poll: the fixture holds its answers, so "when read" may be a little past the mark) and RSS is sampled every 250 ms until it made no new low for 2 s (at most ${SETTLE_MAX_MS / 1000} s, "settled in"); the idle readings outside the load the same way. Rates and "s of load" leave the pauses out; CPU ms keeps them (collection is part of the cost). **Baseline**: \`bench/soak/baseline.ts\`, the SDK \`Client\` doing the same load on a fresh fixture (the same polls with the same 1 ms floor and no signal per request beyond its timeout; one \`events/stream\` taking the same paced events), read the same way.`,
    "",
  );
  if (r.vigil !== null) {
    L.push("**vigil serve**", "");
    const rows = [...readingRows(r.vigil.idle, null)];
    for (const p of r.vigil.phases) {
      rows.push([`*${p.kind}: ${rate(p)}*`, "", "", "", "", "", "", "", ""]);
      rows.push(...readingRows(p.readings, p.kind));
    }
    L.push(...table(READING_HEADERS, rows, READING_ALIGN), "");
  }
  if (r.baseline.length > 0) {
    L.push("**Baseline: bare SDK client, same load**", "");
    const rows: string[][] = [];
    for (const p of r.baseline) {
      rows.push([`*${p.kind}: ${rate(p)}*`, "", "", "", "", "", "", "", ""]);
      rows.push(...readingRows(p.readings, p.kind));
    }
    L.push(...table(READING_HEADERS, rows, READING_ALIGN), "");
  }
  if (v.length > 0) {
    L.push("**Targets (issue 12)**", "");
    L.push(...table(["target", "measured", "result"], v.map((x) => [x.target, x.measured, x.pass ? "PASS" : "**FAIL**"]), ["l", "r", "r"]), "");
  }
  L.push("Reading the numbers:", "");
  for (const p of r.vigil?.phases ?? []) {
    const base = r.baseline.find((x) => x.kind === p.kind);
    L.push(
      `- ${p.kind === "poll" ? "Poll" : "Push"}: vigil ${rate(p)}${base ? ` (the bare client: ${rate(base)})` : ""}; settled VmRSS ${growthMiB(p) >= 0 ? "+" : ""}${fmt(growthMiB(p), 1)} MiB from ${fmt(p.n / 10)} to ${fmt(p.n)} ${unit(p.kind)}${base ? `, the bare client's ${growthMiB(base) >= 0 ? "+" : ""}${fmt(growthMiB(base), 1)} MiB` : ""}; ${p.errorStatuses} \`error\` status frames${base && p.kind === "poll" ? ` (the bare client: ${base.errorStatuses} polls unanswered within 5 s)` : ""}; ${cancelText(p.cancels)} \`notifications/cancelled\` after the unsubscribe${base ? ` (the bare client: ${cancelText(base.cancels)} at its exit)` : ""}.`,
    );
  }
  if (r.vigil !== null) {
    L.push(
      `- Stopping serve (SIGTERM) with no subscription left sent ${cancelText(r.vigil.cancelsAtStop)} more cancels; it exited with ${r.vigil.exit ?? "no exit (killed)"}.`,
    );
  }
  L.push(`- Verdict: ${verdictLine(v)}.`, "");
  L.push("<!-- bench:soak end -->");
  return L.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  if (o.setups.has("vigil") && !vigilPresent()) return 2;
  const budget = (o.phases.has("poll") ? pollBudgetMs(o.polls) + PHASE_READINGS_MS : 0) + (o.phases.has("push") ? pushBudgetMs(o.events) + PHASE_READINGS_MS : 0);
  const deadlineMs = 60_000 + budget * o.setups.size;
  const runDone = exitUnlessDoneWithin(deadlineMs);
  const began = performance.now();
  const loadStart = loadavg()[0]!.toFixed(2);
  tempRoot = mkdtempSync(join(tmpdir(), "vigil-bench-soak-"));

  const vigil = o.setups.has("vigil") ? await vigilRun(o) : null;
  const baseline: PhaseResult[] = [];
  if (o.setups.has("baseline")) for (const kind of ["poll", "push"] as const) if (o.phases.has(kind)) baseline.push(await baselineRun(kind, kind === "poll" ? o.polls : o.events));
  runDone();

  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    machine: o.setups.has("vigil") || existsSync(VIGIL) ? machine() : host(),
    o,
    vigil,
    baseline,
    seconds: (performance.now() - began) / 1000,
    load: [loadStart, loadavg()[0]!.toFixed(2)],
  };
  const section = render(results);
  const v = verdicts(results);
  process.stdout.write(`${section}\n\nsoak: ${verdictLine(v)}\n`);
  if (o.write) {
    writeResultsSection("soak", section);
    process.stderr.write(`written: ${RESULTS_FILE} (bench:soak section)\n`);
  }
  return 0;
}

runBench(main);
