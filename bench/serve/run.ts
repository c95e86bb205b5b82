/**
 * Performance harness for `vigil serve --listen` (serve.md §1, §4): one run measures
 *
 *   (a) frame fan-out — frames per second delivered to 1 and to 50 SSE clients attached to one
 *       session (`GET /v1/sessions/<name>/frames`), per client and in total, against a floor in the
 *       same run: `bench/serve/baseline-sse.ts`, a minimal Bun.serve SSE broadcaster pushing the
 *       same frame JSON to 1 and 50 clients;
 *   (b) memory — the daemon's VmRSS / VmHWM (from /proc/<pid>/status) with 0 sessions, 1 session
 *       and 100 idle sessions, in one fresh daemon.
 *
 *   bun bench/serve/run.ts [--write] [--rounds N] [--seconds S] [--window W] [--clients 1,50] [--no-memory] [--vs BIN] [--profile DIR]
 *
 *   --write       add or replace the `<!-- bench:serve … -->` section of bench/RESULTS.md
 *   --rounds N    fan-out rounds (default 3); the setups are interleaved in a rotating order
 *   --seconds S   how long the driver sends commands in each fan-out run (default 3)
 *   --window W    commands in flight (default 8)
 *   --clients L   the client counts to run (default 1,50; a subset for a quick look)
 *   --no-memory   skip the idle-sessions memory phase
 *   --vs BIN      a second vigil binary (e.g. the build before a change), run as setup `vs` in the
 *                 same rounds, interleaved with the others: before/after in the same period
 *   --profile DIR run the daemon from source (`bun --cpu-prof-md src/cli.ts serve`) and write its
 *                 CPU profile into DIR when it stops (the figures are then of the source, not the binary)
 *
 * The binary under test is dist/vigil, or $VIGIL_BIN (bench/vigil-under-test.ts: a before/after
 * comparison runs the harness once per binary). The targets (issue 16) are printed as met/missed.
 *
 * Frame source: `get_state` commands POSTed to the session, W in flight. Each one produces exactly
 * one `response` frame (stored in the transcript, then broadcast), needs no model and no MCP server,
 * so the stream is steady and its rate is set by the daemon alone. (A prompt produces five frames
 * per run, but runs are serialized per session and paced by the model's HTTP round trip.) The
 * baseline is driven by the same loop with the same command bodies, and its frames are the same
 * `get_state` response JSON (`seq`, `time`, `id`, state data), so the only difference is vigil's
 * work per frame: command validation, the session, the transcript append, the per-client SSE queue.
 *
 * A fan-out run: K clients attach (each has received the attach comment), the driver sends commands
 * for S seconds, then every client must receive every frame (bounded wait). Per client, frames/s =
 * frames received / (time of its last frame − the first send). Total = the sum over clients. A
 * client the daemon dropped (its unsent backlog went over 4 MiB) is reported. CPU time of the server
 * process and of this process (the driver and every client) is read for each run.
 *
 * The daemon runs from `dist/vigil` with a config whose model is the mock model
 * (`test/fixtures/mock-model.ts`, started here) and no MCP server; a prompt is sent once first to
 * check the whole chain. Every child leads its own process group; every wait is bounded; every
 * group is killed on every way out (errors, SIGINT/SIGTERM/SIGHUP, a 110 s overall deadline), and
 * the temporary directory is removed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { writeResultsSection } from "../results-file.ts";
import { type Target, fmt, median, mib, runBench, table, targetsMarkdown, targetsText } from "../report.ts";
import { VIGIL, machine, vigilPresent } from "../vigil-under-test.ts";
import { type Memory, cpuMsOf, memoryOf, selfCpuMs } from "../proc.ts";
import { type Child, exitUnlessDoneWithin, spawnChild, stop, until, waitLine, waitStderr, within } from "../children.ts";
import { type StealCount, quietRun, stealCount, stealNote } from "../steal.ts";
import { SseStream } from "../sse-stream.ts";

const ROOT = resolve(import.meta.dir, "../..");
const MOCK = join(ROOT, "test/fixtures/mock-model.ts");
const BASELINE = join(import.meta.dir, "baseline-sse.ts");
const RESULTS = join(ROOT, "bench/RESULTS.md");
const DEADLINE_MS = 110_000;
const CLIENT_COUNTS = [1, 50];
const IDLE_SESSIONS = 100;
const START_MS = 20_000;
const ATTACH_MS = 10_000;
const DRAIN_MS = 20_000;
const SETTLE_MS = 1500;

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  write: boolean;
  rounds: number;
  seconds: number;
  window: number;
  clients: number[];
  memory: boolean;
  profile: string | null;
  vs: string | null;
}

function parseOptions(argv: string[]): Options {
  const o: Options = { write: false, rounds: 3, seconds: 3, window: 8, clients: CLIENT_COUNTS, memory: true, profile: null, vs: null };
  const num = (flag: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min || n > max) usage(`${flag}: expected a number from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") o.write = true;
    else if (a === "--rounds") o.rounds = Math.floor(num(a, argv[++i], 1, 10));
    else if (a === "--seconds") o.seconds = num(a, argv[++i], 0.5, 10);
    else if (a === "--window") o.window = Math.floor(num(a, argv[++i], 1, 256));
    else if (a === "--clients") {
      const list = (argv[++i] ?? "").split(",").filter((x) => x !== "");
      o.clients = list.map((x) => Math.floor(num(a, x, 1, 100)));
      if (o.clients.length === 0) usage("--clients: expected a list such as 1,50");
    } else if (a === "--no-memory") o.memory = false;
    else if (a === "--vs") {
      const bin = argv[++i];
      if (!bin) usage("--vs needs a binary");
      o.vs = resolve(bin);
    } else if (a === "--profile") {
      const dir = argv[++i];
      if (!dir) usage("--profile needs a directory");
      o.profile = resolve(dir);
    } else if (a === "--help" || a === "-h") usage();
    else usage(`unknown argument ${a}`);
  }
  if (o.write && (o.clients.length !== CLIENT_COUNTS.length || !o.memory || o.profile !== null || o.vs !== null)) usage("--write takes the full run (no --clients, --no-memory, --vs or --profile)");
  if (o.rounds * (o.vs === null ? 2 : 3) * o.clients.length * (o.seconds + 2) > 90) usage("--rounds × --seconds would not finish within the deadline");
  return o;
}

function usage(error?: string): never {
  if (error) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write("usage: bun bench/serve/run.ts [--write] [--rounds N] [--seconds S] [--window W] [--clients 1,50] [--no-memory] [--vs BIN] [--profile DIR]\n");
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------
// The temporary directory: removed on every way out (after the process groups, see ../children.ts).

let tempRoot: string | null = null;

process.on("exit", () => {
  if (tempRoot !== null) rmSync(tempRoot, { recursive: true, force: true });
  tempRoot = null;
});

// ---------------------------------------------------------------------------------------------
// The servers

interface Server {
  /** `vs`: the second vigil binary (--vs). */
  name: "vigil" | "vs" | "baseline";
  child: Child;
  base: string;
}

function writeConfig(dir: string, modelUrl: string): string {
  const file = join(dir, "vigil.json");
  writeFileSync(file, JSON.stringify({ model: { provider: "openai", base_url: modelUrl, model: "mock-model", timeout_ms: 20_000 } }));
  return file;
}

/** The daemon's command: the binary under test, or (--profile) the source under Bun's CPU profiler. */
function vigilArgv(profile: string | null, bin: string = VIGIL): string[] {
  if (profile === null) return [bin];
  return [process.execPath, "--cpu-prof-md", `--cpu-prof-dir=${profile}`, join(ROOT, "src/cli.ts")];
}

async function startDaemon(config: string, stateDir: string, profile: string | null = null, vs: string | null = null): Promise<Server> {
  const child = spawnChild(vs === null ? "vigil serve" : "vs serve", [...vigilArgv(vs === null ? profile : null, vs ?? VIGIL), "serve", "--config", config, "--state-dir", stateDir, "--listen", "127.0.0.1:0", "--session-idle-timeout", "0"], { stdin: "ignore" });
  const m = await waitStderr(child, /vigil serve listening (http:\/\/\S+)\n/, START_MS);
  return { name: vs === null ? "vigil" : "vs", child, base: m[1]! };
}

async function startBaseline(): Promise<Server> {
  const child = spawnChild("baseline", [process.execPath, BASELINE], { stdin: "ignore" });
  const m = await waitLine(child, /^(\{.*\})$/, START_MS);
  return { name: "baseline", child, base: (JSON.parse(m[1]!) as { url: string }).url };
}

async function post(base: string, session: string, command: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/v1/sessions/${session}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(command),
  });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200 || body.success !== true) throw new Error(`POST ${command.type} to ${session}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return body;
}

// ---------------------------------------------------------------------------------------------
// SSE clients: count `event: frame` blocks straight on the bytes (no decoding, no JSON parse), so
// the clients cost as little as possible; the first client of each run also checks its frames.

const EVENT = Buffer.from("event: frame\n");

class SseClient {
  frames = 0;
  lastAt = 0;
  firstSeq: number | null = null;
  lastSeq: number | null = null;
  private carry = Buffer.alloc(0);
  private text = "";
  private readonly stream: SseStream;

  constructor(
    url: string,
    private readonly check: boolean,
  ) {
    this.stream = new SseStream(url, (chunk) => this.count(chunk));
  }

  get attached(): boolean {
    return this.stream.attached;
  }

  get closed(): boolean {
    return this.stream.closed;
  }

  get error(): string | null {
    return this.stream.error;
  }

  close(): void {
    this.stream.close();
  }

  private count(chunk: Uint8Array): void {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let n = this.straddling(buf);
    for (let at = buf.indexOf(EVENT); at !== -1; at = buf.indexOf(EVENT, at + EVENT.length)) n++;
    const tail = buf.length >= EVENT.length - 1 ? buf : Buffer.concat([this.carry, buf]);
    this.carry = Buffer.from(tail.subarray(Math.max(0, tail.length - (EVENT.length - 1))));
    if (n > 0) {
      this.frames += n;
      this.lastAt = performance.now();
    }
    if (this.check) this.seqs(buf);
  }

  /** Matches that start in the previous chunk's tail and end in this chunk. */
  private straddling(buf: Buffer): number {
    if (this.carry.length === 0) return 0;
    const joint = Buffer.concat([this.carry, buf.subarray(0, EVENT.length - 1)]);
    let n = 0;
    for (let at = joint.indexOf(EVENT); at !== -1; at = joint.indexOf(EVENT, at + 1)) if (at < this.carry.length && at + EVENT.length > this.carry.length) n++;
    return n;
  }

  /** Client 0: every frame's seq, in order and without a gap (blocks may span chunks). */
  private seqs(buf: Buffer): void {
    this.text += buf.toString("latin1");
    const end = this.text.lastIndexOf("\n\n");
    if (end === -1) return;
    const complete = this.text.slice(0, end + 2);
    this.text = this.text.slice(end + 2);
    for (const m of complete.matchAll(/^id: (\d+)$/gm)) {
      const seq = Number(m[1]);
      if (this.lastSeq !== null && seq !== this.lastSeq + 1) throw new Error(`SSE: seq ${seq} after ${this.lastSeq}`);
      this.firstSeq ??= seq;
      this.lastSeq = seq;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// (a) fan-out

interface FanRun {
  server: Server["name"];
  clients: number;
  round: number;
  sent: number;
  /** Commands answered per second (the driver's rate). */
  commandsPerSec: number;
  perClient: number[];
  total: number;
  dropped: number;
  incomplete: number;
  serverCpuPerKFrames: number;
  benchCpuPerKFrames: number;
  serverCpuShare: number;
  benchCpuShare: number;
  /** Bytes of one frame's JSON (the last command's response). */
  frameBytes: number;
}

async function fanOut(server: Server, clients: number, round: number, o: Options): Promise<FanRun> {
  const session = `fan-r${round}-k${clients}`;
  // Open the session first, so the clients attach to a session that exists and no frame precedes the run.
  if (server.name !== "baseline") await post(server.base, session, { type: "get_state", id: "open" });
  const readers = Array.from({ length: clients }, (_, i) => new SseClient(`${server.base}/v1/sessions/${session}/frames`, i === 0));
  try {
    if (!(await until(() => readers.every((r) => r.attached || r.closed), ATTACH_MS)) || readers.some((r) => r.closed)) {
      throw new Error(`${server.name}: ${readers.filter((r) => !r.attached).length} of ${clients} SSE clients did not attach`);
    }
    await Bun.sleep(50);
    const cpu0 = { server: cpuMsOf(server.child.pid), self: selfCpuMs() };
    const t0 = performance.now();
    const stopAt = t0 + o.seconds * 1000;
    let sent = 0;
    let answered = 0;
    let frameBytes = 0;
    const worker = async (w: number) => {
      while (performance.now() < stopAt) {
        sent++;
        frameBytes = JSON.stringify(await post(server.base, session, { type: "get_state", id: `g${w}-${sent}` })).length;
        answered++;
      }
    };
    await within(Promise.all(Array.from({ length: o.window }, (_, w) => worker(w))), o.seconds * 1000 + DRAIN_MS, `${server.name} driver`);
    const tSent = performance.now();
    await until(() => readers.every((r) => r.frames >= answered || r.closed), DRAIN_MS);
    const cpu1 = { server: cpuMsOf(server.child.pid), self: selfCpuMs() };
    const tEnd = Math.max(...readers.map((r) => r.lastAt));
    const perClient = readers.map((r) => r.frames / ((r.lastAt - t0) / 1000));
    const delivered = readers.reduce((n, r) => n + r.frames, 0);
    const first = readers[0]!;
    if (first.error !== null) throw new Error(`${server.name}: client 0: ${first.error}`);
    if (!first.closed && first.frames !== answered) throw new Error(`${server.name}: client 0 got ${first.frames} of ${answered} frames`);
    if (!first.closed && first.lastSeq !== null && first.firstSeq !== null && first.lastSeq - first.firstSeq + 1 !== answered) {
      throw new Error(`${server.name}: client 0 saw seq ${first.firstSeq}..${first.lastSeq} for ${answered} frames`);
    }
    const serverCpu = cpu1.server - cpu0.server;
    return {
      server: server.name,
      clients,
      round,
      sent: answered,
      commandsPerSec: answered / ((tSent - t0) / 1000),
      perClient,
      total: delivered / ((tEnd - t0) / 1000),
      dropped: readers.filter((r) => r.closed).length,
      incomplete: readers.filter((r) => !r.closed && r.frames < answered).length,
      serverCpuPerKFrames: (serverCpu / delivered) * 1000,
      benchCpuPerKFrames: ((cpu1.self - cpu0.self) / delivered) * 1000,
      serverCpuShare: serverCpu / (tEnd - t0),
      benchCpuShare: (cpu1.self - cpu0.self) / (tEnd - t0),
      frameBytes,
    };
  } finally {
    for (const r of readers) r.close();
    await until(() => readers.every((r) => r.closed), 2000);
  }
}

// ---------------------------------------------------------------------------------------------
// (b) memory with idle sessions

interface MemRow {
  label: string;
  sessions: number;
  m: Memory;
}

async function settledMemory(pid: number): Promise<Memory> {
  await Bun.sleep(SETTLE_MS);
  return memoryOf(pid);
}

async function idleMemory(config: string, stateDir: string): Promise<{ rows: MemRow[]; exit: number | null; openMs: number }> {
  const d = await startDaemon(config, stateDir);
  const rows: MemRow[] = [];
  const health = async () => ((await (await fetch(`${d.base}/v1/health`)).json()) as { sessions: number }).sessions;
  if ((await health()) !== 0) throw new Error("expected 0 sessions at start");
  rows.push({ label: "0 sessions (started, one health request)", sessions: 0, m: await settledMemory(d.child.pid) });
  await post(d.base, "idle-000", { type: "get_state", id: "g" });
  rows.push({ label: "1 session (one get_state)", sessions: 1, m: await settledMemory(d.child.pid) });
  const t0 = performance.now();
  let next = 1;
  const opener = async () => {
    while (next < IDLE_SESSIONS) {
      const i = next++;
      await post(d.base, `idle-${String(i).padStart(3, "0")}`, { type: "get_state", id: "g" });
    }
  };
  await within(Promise.all(Array.from({ length: 8 }, opener)), 30_000, "opening sessions");
  const openMs = performance.now() - t0;
  const n = await health();
  if (n !== IDLE_SESSIONS) throw new Error(`expected ${IDLE_SESSIONS} sessions, health says ${n}`);
  rows.push({ label: `${IDLE_SESSIONS} idle sessions (one get_state each)`, sessions: IDLE_SESSIONS, m: await settledMemory(d.child.pid) });
  const exit = await stop(d.child);
  return { rows, exit, openMs };
}

// ---------------------------------------------------------------------------------------------
// Report

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Vigil's delivered total over the baseline's, at `k` clients (medians over rounds; NaN without runs). */
function ratio(runs: FanRun[], k: number, server: FanRun["server"] = "vigil"): number {
  const tot = (name: FanRun["server"]) => median(runs.filter((x) => x.server === name && x.clients === k).map((x) => x.total));
  return tot(server) / tot("baseline");
}

/** Issue 16: SSE fan-out to 1 client ≥ 70 % of the minimal broadcaster; the 50-client ratio is informational. */
function targets(r: Results): Target[] {
  const out: Target[] = [];
  const pct = (x: number) => `${fmt(x * 100)} %`;
  const range = (k: number) => {
    const per = Array.from({ length: r.o.rounds }, (_, i) => ratio(r.runs.filter((x) => x.round === i + 1), k)).filter(Number.isFinite);
    return per.length > 1 ? ` (rounds ${pct(Math.min(...per))}–${pct(Math.max(...per))})` : "";
  };
  if (r.o.clients.includes(1)) {
    const v = ratio(r.runs, 1);
    out.push({ name: "SSE fan-out to 1 client, vigil ≥ 70 % of the baseline's frames/s", measured: `${pct(v)}${range(1)}`, met: Number.isFinite(v) ? v >= 0.7 : null });
  }
  if (r.o.clients.includes(50)) {
    out.push({ name: "SSE fan-out to 50 clients, vigil / baseline total frames/s (informational)", measured: `${pct(ratio(r.runs, 50))}${range(50)}`, met: null });
  }
  if (r.o.vs !== null) {
    for (const k of r.o.clients) out.push({ name: `the --vs binary at ${k} client${k === 1 ? "" : "s"}, vs / baseline (informational)`, measured: pct(ratio(r.runs, k, "vs")), met: null });
  }
  return out;
}



interface Results {
  date: string;
  machine: string;
  o: Options;
  runs: FanRun[];
  mem: MemRow[];
  memExit: number | null;
  openMs: number;
  fanExit: number | null;
  seconds: number;
  load: [string, string];
  /** Fan-out runs done again for the host's steal (bench/steal.ts). */
  steal: StealCount;
}

function render(r: Results): string {
  const L: string[] = [];
  L.push("<!-- bench:serve start (generated by bun bench/serve/run.ts --write; replaced on the next run) -->");
  L.push(`## serve — ${r.date}`, "");
  L.push(`Machine: ${r.machine}.${r.o.vs === null ? "" : ` Setup \`vs\` (--vs): ${r.o.vs}, in the same rounds.`}`);
  L.push(
    `Run: \`bun bench/serve/run.ts ${process.argv.slice(2).join(" ")}\`, ${r.o.rounds} fan-out round${r.o.rounds === 1 ? "" : "s"}, the ${r.o.clients.length * (r.o.vs === null ? 2 : 3)} fan-out setups interleaved in a rotating order, medians over rounds (range in parentheses); ${fmt(r.seconds)} s; 1-min load average ${r.load[0]} at start, ${r.load[1]} at end. ${stealNote(r.steal, "fan-out runs")}`,
    "",
  );
  L.push(
    `**Frame fan-out**: one session, K SSE clients attached (\`GET /v1/sessions/<name>/frames\`); a driver POSTs \`get_state\` commands (${r.o.window} in flight) for ${r.o.seconds} s, each producing one \`response\` frame (${fmt(median(r.runs.filter((x) => x.server === "vigil").map((x) => x.frameBytes)))} B of JSON from vigil, ${fmt(median(r.runs.filter((x) => x.server === "baseline").map((x) => x.frameBytes)))} B from the baseline); then every client must have every frame. Per-client frames/s = frames received / (its last frame − first send); total = sum over clients. Baseline = \`bench/serve/baseline-sse.ts\` (Bun.serve, same URL shape, same driver and frame JSON, no session/transcript/validation). CPU per 1,000 delivered frames from /proc (server) and \`process.cpuUsage\` (this process: driver + all clients).`,
    "",
  );
  const rows: string[][] = [];
  for (const server of r.o.vs === null ? (["vigil", "baseline"] as const) : (["vigil", "vs", "baseline"] as const)) {
    for (const k of r.o.clients) {
      const runs = r.runs.filter((x) => x.server === server && x.clients === k);
      const per = runs.map((x) => mean(x.perClient));
      const minPer = runs.map((x) => Math.min(...x.perClient));
      const tot = runs.map((x) => x.total);
      const cmd = runs.map((x) => x.commandsPerSec);
      const base = r.runs.filter((x) => x.server === "baseline" && x.clients === k).map((x) => x.total);
      rows.push([
        server === "vigil" ? "`vigil serve`" : server === "vs" ? "`vigil serve` (--vs)" : "baseline",
        String(k),
        `${fmt(median(per))} (${fmt(Math.min(...per))}–${fmt(Math.max(...per))})`,
        fmt(median(minPer)),
        `${fmt(median(tot))} (${fmt(Math.min(...tot))}–${fmt(Math.max(...tot))})`,
        server !== "baseline" ? `${fmt((median(tot) / median(base)) * 100)} %` : "—",
        fmt(median(cmd)),
        fmt(median(runs.map((x) => x.serverCpuPerKFrames)), 1),
        `${fmt(median(runs.map((x) => x.serverCpuShare)) * 100)} %`,
        fmt(median(runs.map((x) => x.benchCpuPerKFrames)), 1),
        `${fmt(median(runs.map((x) => x.benchCpuShare)) * 100)} %`,
        String(runs.reduce((n, x) => n + x.dropped + x.incomplete, 0)),
      ]);
    }
  }
  L.push(
    ...table(
      ["server", "clients", "frames/s per client (mean)", "slowest client", "frames/s total", "vs baseline", "commands/s", "server CPU ms / 1k frames", "server CPU busy", "bench CPU ms / 1k frames", "bench CPU busy", "clients dropped or short"],
      rows,
      ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
    "",
  );
  const tg = targets(r);
  L.push(...targetsMarkdown("Targets (issue 16)", tg));
  if (r.mem.length === 3) renderMemory(r, L);
  L.push("<!-- bench:serve end -->");
  return L.join("\n");
}

/** The memory table and the reading of a full run (both client counts and the memory phase). */
function renderMemory(r: Results, L: string[]): void {
  const m0 = r.mem[0]!.m;
  const m1 = r.mem[1]!.m;
  const m100 = r.mem[2]!.m;
  L.push(
    `**Memory with idle sessions**: a fresh daemon (same config, no MCP server); a session is opened by one \`get_state\` POST (\`/v1/health\` confirms the count) and stays open (\`--session-idle-timeout 0\`); readings from \`/proc/<pid>/status\` ${SETTLE_MS / 1000} s after each step. The 99 sessions after the first were opened with 8 requests in flight in ${fmt(r.openMs)} ms.`,
    "",
  );
  L.push(
    ...table(
      ["daemon state", "VmRSS (MiB)", "VmHWM (MiB)", "RssAnon (MiB)", "open fds", "threads"],
      r.mem.map((x) => [x.label, mib(x.m.rssKiB), mib(x.m.hwmKiB), mib(x.m.anonKiB), String(x.m.fds), String(x.m.threads)]),
      ["l", "r", "r", "r", "r", "r"],
    ),
    "",
  );
  const perSession = (m100.rssKiB - m1.rssKiB) / (IDLE_SESSIONS - 1);
  L.push("Reading the numbers:", "");
  const vr = (k: number) => r.runs.filter((x) => x.server === "vigil" && x.clients === k);
  const v1 = r.runs.filter((x) => x.server === "vigil" && x.clients === 1).map((x) => x.total);
  const v50 = r.runs.filter((x) => x.server === "vigil" && x.clients === 50).map((x) => x.total);
  const b1 = r.runs.filter((x) => x.server === "baseline" && x.clients === 1).map((x) => x.total);
  const b50 = r.runs.filter((x) => x.server === "baseline" && x.clients === 50).map((x) => x.total);
  L.push(
    `- Fan-out: with 1 client vigil delivers ${fmt(median(v1))} frames/s (baseline ${fmt(median(b1))}); with 50 clients ${fmt(median(v50))} frames/s in total, ${fmt(median(v50) / 50)} per client (baseline ${fmt(median(b50))} in total). Going from 1 to 50 clients multiplies vigil's delivered total by ${fmt(median(v50) / median(v1), 1)} × and the baseline's by ${fmt(median(b50) / median(b1), 1)} ×.`,
    `- Where the limit is: during the vigil runs the daemon is on CPU ${fmt(median(vr(1).map((x) => x.serverCpuShare)) * 100)} % (1 client) and ${fmt(median(vr(50).map((x) => x.serverCpuShare)) * 100)} % (50 clients) of the wall time (a core's worth: it is CPU-bound; Bun's helper threads count too): ${fmt(median(vr(1).map((x) => x.serverCpuPerKFrames)), 0)} µs of daemon CPU per frame with 1 client (a whole command: HTTP request, validation, session, transcript append, SSE write, HTTP response) and ${fmt(median(vr(50).map((x) => x.serverCpuPerKFrames)), 1)} µs per delivered frame with 50 (the command path is shared by 50 deliveries). With 50 clients the commands/s fall to ${fmt(median(vr(50).map((x) => x.commandsPerSec)))}: producing frames slows down because delivering each one 50 times takes the daemon's time. This process (driver + clients) is busy ${fmt(median(vr(50).map((x) => x.benchCpuShare)) * 100)} % of the wall time in the 50-client vigil runs, and the machine has ${availableParallelism()} CPUs, so the 50-client figures are bounded by CPU shared between server and clients (for vigil and the baseline alike).`,
    `- Memory: the first session adds ${fmt((m1.rssKiB - m0.rssKiB) / 1024, 1)} MiB RSS (code paths run for the first time, the HTTP command path included); each further idle session adds ~${fmt(perSession, 0)} KiB RSS (${mib(m1.rssKiB)} → ${mib(m100.rssKiB)} MiB for 99 more) and one fd, its open \`transcript.jsonl\` (${m1.fds} → ${m100.fds} fds; the rest are the opener's keep-alive connections).`,
    `- Every daemon stopped on SIGTERM with exit ${r.fanExit} (fan-out) and ${r.memExit} (memory).`,
    "",
  );
}

function textSummary(r: Results): string {
  const out = ["", `vigil serve bench — ${r.machine}; ${fmt(r.seconds)} s`, ""];
  for (const x of r.runs) {
    out.push(
      `  round ${x.round} ${x.server.padEnd(8)} K=${String(x.clients).padStart(2)}  sent ${x.sent}  per client ${fmt(mean(x.perClient))}/s  total ${fmt(x.total)}/s  server CPU ${fmt(x.serverCpuPerKFrames, 1)} ms/1k  dropped ${x.dropped} short ${x.incomplete}`,
    );
  }
  for (const m of r.mem) out.push(`  ${m.label.padEnd(44)} VmRSS ${mib(m.m.rssKiB)} MiB  VmHWM ${mib(m.m.hwmKiB)} MiB  fds ${m.m.fds}`);
  const tg = targets(r);
  out.push(...targetsText("Targets (issue 16)", tg));
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  if (!vigilPresent()) return 2;
  // Twice the bound of a quiet run: fan-out runs done again for the host's steal take their time too.
  const runDone = exitUnlessDoneWithin(2 * DEADLINE_MS);
  const began = performance.now();
  const loadStart = loadavg()[0]!.toFixed(2);
  tempRoot = mkdtempSync(join(tmpdir(), "vigil-bench-serve-"));

  const mock = spawnChild("mock model", [process.execPath, MOCK], { stdin: "ignore" });
  const mockUrl = (JSON.parse((await waitLine(mock, /^(\{.*\})$/, START_MS))[1]!) as { url: string }).url;
  const config = writeConfig(tempRoot, mockUrl);

  // (b) first, on a fresh daemon and a quiet machine.
  let mem: Awaited<ReturnType<typeof idleMemory>> = { rows: [], exit: null, openMs: Number.NaN };
  if (o.memory) {
    process.stderr.write("memory: 0, 1, 100 idle sessions…\n");
    mem = await idleMemory(config, join(tempRoot, "state-mem"));
  }

  // (a)
  const vigil = await startDaemon(config, join(tempRoot, "state-fan"), o.profile);
  const baseline = await startBaseline();
  const vs = o.vs === null ? null : await startDaemon(config, join(tempRoot, "state-vs"), null, o.vs);
  // The chain works end to end: one prompt answered by the mock model, seen on SSE.
  const probe = new SseClient(`${vigil.base}/v1/sessions/probe/frames`, false);
  await post(vigil.base, "probe", { type: "prompt", id: "p1", message: "hello" });
  if (!(await until(() => probe.frames >= 5, 10_000))) throw new Error(`probe: expected 5 frames for a prompt, got ${probe.frames}`);
  probe.close();

  const setups: [Server, number][] = [];
  for (const s of vs === null ? [vigil, baseline] : [vigil, vs, baseline]) for (const k of o.clients) setups.push([s, k]);
  const runs: FanRun[] = [];
  const steal = stealCount();
  for (let round = 1; round <= o.rounds; round++) {
    for (let i = 0; i < setups.length; i++) {
      const [s, k] = setups[(i + round - 1) % setups.length]!;
      const x = await quietRun(`${s.name} ${k} clients`, steal, () => fanOut(s, k, round, o));
      runs.push(x);
      process.stderr.write(`  round ${round}/${o.rounds} ${s.name.padEnd(8)} ${String(k).padStart(2)} clients: ${fmt(mean(x.perClient))} frames/s per client, ${fmt(x.total)} total\n`);
    }
  }
  const fanExit = await stop(vigil.child);
  await stop(baseline.child);
  if (vs !== null) await stop(vs.child);
  await stop(mock);
  runDone();

  const results: Results = {
    date: new Date().toISOString().slice(0, 10),
    machine: machine(),
    o,
    runs,
    mem: mem.rows,
    memExit: mem.exit,
    openMs: mem.openMs,
    fanExit,
    seconds: (performance.now() - began) / 1000,
    load: [loadStart, loadavg()[0]!.toFixed(2)],
    steal,
  };
  const section = render(results);
  process.stdout.write(`${textSummary(results)}\n\n${section}\n`);
  if (o.write) {
    writeResultsSection("serve", section);
    process.stderr.write(`written: ${RESULTS} (bench:serve section)\n`);
  }
  return 0;
}

runBench(main);
