/**
 * Performance harness for `vigil wrap` (wrap.md §11): one run measures, side by side,
 *
 *   direct        the client spawns the server                         (anchor)
 *   relay         client → bench/wrap/relay.ts → server                (floor of one extra hop)
 *   relay-decisions  the same relay doing the least a proxy with a decision log must do per message
 *                 (RELAY_MODE=decisions): the floor of the required work, to read the targets against
 *   wrap          client → dist/vigil wrap --allow-all + decision log → server   (the target)
 *   wrap+policy   client → dist/vigil wrap --policy + --capture-dir → server     (informational)
 *
 * and, with --signing (issue 14), the cost of signed evidence on the hot path:
 *
 *   wrap-capture  client → dist/vigil wrap --allow-all --capture-dir → server   (the baseline: chained logs, no key)
 *   wrap-signed   the same with --signing-key K: signed checkpoints every 1,000 records / 60 s, capture.dsse.json
 *
 * and, per setup, (1) latency of sequential `tools/call echo` round trips (p50/p99), (2) throughput
 * of pipelined 1 KiB `tools/call echo` messages, (3) MiB/s of sequential 8 MiB `blob` results and
 * the peak RSS (VmHWM) of the middle process. Setups are interleaved within each round and the
 * round order rotates; each figure reported is the median over the rounds.
 *
 *   bun bench/wrap/run.ts [--write] [--rounds N] [--quick] [--signing] [--steady] [--setups a,b,…] [--phases a,b,…] [experiment flags]
 *
 *   --write             add or replace today's section in bench/RESULTS.md (`wrap DATE`; with --signing `wrap-signing DATE`, with --steady `wrap-steady DATE`)
 *   --rounds N          rounds (default 5, at most 15); the median round is reported
 *   --signing           setups relay,wrap-capture,wrap-signed: what a signing key adds, same run (target: added p50 ≤ 5 µs)
 *   --quick             one short round (smoke test; never written)
 *   --phases            any of latency,throughput,large (default: all)
 *   --setups            any of the setups below (default: direct,relay,relay-decisions,wrap,wrap+policy)
 *     wrap-capture      dist/vigil wrap --allow-all --capture-dir DIR (no key)
 *     wrap-signed       the same with --signing-key (a key made for the run, 0600, in the temp dir)
 *     wrap-nolog        dist/vigil wrap --allow-all without any evidence output
 *     wrap-src          wrap run from source (bun src/cli.ts wrap …), same flags as wrap
 *     wrap-alt          the same from another tree (--alt DIR), to A/B a patch without touching src/
 *     relay-lines       relay.ts, RELAY_MODE=lines: line framing, store-and-forward, a write per line
 *     relay-batched     relay.ts, RELAY_MODE=batched: line framing, one write per run of lines
 *     relay-decisions   relay.ts, RELAY_MODE=decisions: the least per-message work of a proxy with a
 *                       decision log (parse, digest, record, one write per read before the forward)
 *   --steady            latency and throughput after 20,000 warm-up calls each (the middle's JIT has
 *                       finished; at 5,000 wrap's is still compiling): written as `wrap-steady DATE`
 *   --latency-warmup N  untimed echo calls before the latency samples (default 5000)
 *   --throughput-warmup N  untimed pipelined calls before the timed ones (default 5000)
 *   --blob-calls N      timed 8 MiB calls per large-phase run (default 30)
 *   --profile DIR       wrap-src / wrap-alt write a Bun CPU profile (markdown) per run into DIR
 *   --alt DIR           the tree whose src/cli.ts wrap-alt runs
 *
 * Besides latency and throughput, each phase reports the on-CPU time per call of the middle process
 * and of the server (/proc/<pid>/task/<tid>/schedstat, all threads), which shows where time goes.
 *
 * Every wait is bounded, every spawned process group is killed on every way out, and the whole run
 * stops by itself after DEADLINE_MS (scaled with the rounds, the setups and the warm-ups).
 *
 * The binary under test is dist/vigil, or $VIGIL_BIN (bench/vigil-under-test.ts).
 */
import { type Target, runBench, verdict } from "../report.ts";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, release, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { exitUnlessDoneWithin } from "../children.ts";
import { threadCpuMsOf } from "../proc.ts";
import { type StealCount, quietRun, stealCount, stealNote } from "../steal.ts";
import { writeResultsSection } from "../results-file.ts";
import { VIGIL } from "../vigil-under-test.ts";
import { generateKeyPair } from "../../src/evidence/keys.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
const SERVER = join(ROOT, "bench/wrap/server.ts");
const RELAY = join(ROOT, "bench/wrap/relay.ts");
const POLICY = join(ROOT, "bench/wrap/policy.yaml");
const RESULTS = join(ROOT, "bench/RESULTS.md");

/** The whole run's bound for 5 rounds of 5 setups; more rounds or setups scale it. */
const DEADLINE_MS = 175_000;
const STARTUP_MS = 15_000;
const PHASE_MS = 40_000;
const CLOSE_MS = 6_000;

const MiB = 1024 * 1024;

/** --profile DIR: `wrap-src` / `wrap-alt` write a CPU profile (markdown) per spawned vigil into DIR. */
let profileDir: string | null = null;
/** --alt DIR: the checkout whose src/cli.ts the `wrap-alt` setup runs. */
let altRoot: string | null = null;
/**
 * $BENCH_ALT_BUN_FLAGS (space-separated, e.g. "--smol") and $BENCH_ALT_ENV ("K=V K2=V2", e.g.
 * BUN_JSC_* options) apply to wrap-alt only: A/B of runtime settings against wrap-src in one run.
 */
const ALT_BUN_FLAGS = (process.env.BENCH_ALT_BUN_FLAGS ?? "").split(" ").filter((f) => f !== "");
const ALT_ENV: Record<string, string> | null = process.env.BENCH_ALT_ENV
  ? Object.fromEntries(process.env.BENCH_ALT_ENV.split(" ").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))
  : null;
/** The signing key of the `wrap-signed` setup: made once per run in the temp dir (0600), removed with it. */
let signingKey: string | null = null;

// ---------------------------------------------------------------------------------------------
// Options

interface Config {
  write: boolean;
  quick: boolean;
  signing: boolean;
  /** --steady: the warm-ups long enough for the middle's JIT to finish (STEADY_WARMUP), latency and throughput. */
  steady: boolean;
  rounds: number;
  setups: SetupName[];
  phases: PhaseName[];
  latencyWarmup: number;
  latencyCalls: number;
  throughputWarmup: number;
  throughputCalls: number;
  window: number;
  messageBytes: number;
  blobBytes: number;
  blobWarmup: number;
  blobCalls: number;
  blobCheckpoint: number;
}

/**
 * Warm-up calls after which wrap's JIT threads are idle (measured: the middle's `JITWorker` CPU per
 * call falls to ~0 between 15,000 and 20,000 sequential calls; a relay's by ~2,000).
 */
const STEADY_WARMUP = 20_000;

const SETUP_NAMES = [
  "direct", "relay", "wrap", "wrap+policy", "wrap-capture", "wrap-signed", "wrap-nolog", "wrap-src", "wrap-alt", "relay-lines", "relay-batched", "relay-decisions",
] as const;
type SetupName = (typeof SETUP_NAMES)[number];
const PHASE_NAMES = ["latency", "throughput", "large"] as const;
type PhaseName = (typeof PHASE_NAMES)[number];

function parseArgs(argv: string[]): Config {
  const c: Config = {
    write: false,
    quick: false,
    signing: false,
    steady: false,
    rounds: 5,
    setups: ["direct", "relay", "relay-decisions", "wrap", "wrap+policy"],
    phases: [...PHASE_NAMES],
    latencyWarmup: 5000,
    latencyCalls: 5000,
    throughputWarmup: 5000,
    throughputCalls: 20_000,
    window: 64,
    messageBytes: 1024,
    blobBytes: 8 * MiB,
    blobWarmup: 2,
    blobCalls: 30,
    blobCheckpoint: 10,
  };
  const list = <T extends string>(value: string | undefined, allowed: readonly T[], flag: string): T[] => {
    const items = (value ?? "").split(",").filter(Boolean);
    for (const item of items) if (!allowed.includes(item as T)) usage(`${flag}: unknown "${item}" (known: ${allowed.join(", ")})`);
    if (items.length === 0) usage(`${flag} needs a value`);
    return items as T[];
  };
  let setupsGiven = false;
  let phasesGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") c.write = true;
    else if (a === "--quick") c.quick = true;
    else if (a === "--signing") c.signing = true;
    else if (a === "--rounds") {
      c.rounds = Number(argv[++i]);
      if (!Number.isInteger(c.rounds) || c.rounds < 1 || c.rounds > 15) usage("--rounds: an integer from 1 to 15");
    } else if (a === "--setups") {
      c.setups = list(argv[++i], SETUP_NAMES, "--setups");
      setupsGiven = true;
    }
    else if (a === "--phases") {
      c.phases = list(argv[++i], PHASE_NAMES, "--phases");
      phasesGiven = true;
    } else if (a === "--steady") c.steady = true;
    else if (a === "--profile") {
      const dir = argv[++i];
      if (!dir) usage("--profile needs a directory");
      profileDir = resolve(dir);
    }
    else if (a === "--blob-calls") {
      c.blobCalls = Number(argv[++i]);
      if (!Number.isInteger(c.blobCalls) || c.blobCalls < c.blobCheckpoint || c.blobCalls > 1000) usage(`--blob-calls: an integer from ${c.blobCheckpoint} to 1000`);
    } else if (a === "--latency-warmup") {
      c.latencyWarmup = Number(argv[++i]);
      if (!Number.isInteger(c.latencyWarmup) || c.latencyWarmup < 0 || c.latencyWarmup > 100_000) usage("--latency-warmup: an integer from 0 to 100000");
    } else if (a === "--throughput-warmup") {
      c.throughputWarmup = Number(argv[++i]);
      if (!Number.isInteger(c.throughputWarmup) || c.throughputWarmup < 0 || c.throughputWarmup > 100_000) usage("--throughput-warmup: an integer from 0 to 100000");
    } else if (a === "--alt") {
      const dir = argv[++i];
      if (!dir || !existsSync(join(dir, "src/cli.ts"))) usage("--alt needs a checkout directory holding src/cli.ts");
      altRoot = resolve(dir);
    } else if (a === "--help" || a === "-h") usage(null);
    else usage(`unknown argument ${a}`);
  }
  if (c.setups.includes("wrap-alt") && altRoot === null) usage("the wrap-alt setup needs --alt DIR");
  if (c.signing) {
    if (setupsGiven) usage("--signing chooses the setups (relay,wrap-capture,wrap-signed); drop --setups");
    c.setups = ["relay", "wrap-capture", "wrap-signed"];
  }
  if (c.steady) {
    if (c.signing) usage("--steady and --signing are separate runs");
    c.latencyWarmup = Math.max(c.latencyWarmup, STEADY_WARMUP);
    c.throughputWarmup = Math.max(c.throughputWarmup, STEADY_WARMUP);
    // 8 MiB results are bound by copies and syscalls, not by code still being compiled.
    if (!phasesGiven) c.phases = ["latency", "throughput"];
  }
  if (c.quick) {
    Object.assign(c, { rounds: 1, latencyWarmup: 100, latencyCalls: 500, throughputWarmup: 200, throughputCalls: 2000, blobWarmup: 1, blobCalls: 12 });
    if (c.write) usage("--quick results are not written (drop --quick or --write)");
  }
  return c;
}

function usage(error: string | null): never {
  const text =
    `usage: bun bench/wrap/run.ts [--write] [--rounds N] [--quick] [--signing] [--steady] [--setups ${SETUP_NAMES.join(",")}]\n` +
    "                             [--phases latency,throughput,large] [--profile DIR] [--blob-calls N] [--latency-warmup N] [--throughput-warmup N] [--alt DIR]\n";
  if (error) process.stderr.write(`bench: ${error}\n`);
  process.stderr.write(text);
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------
// Process groups: every spawned child leads its own group; all of them die on every way out.

const liveGroups = new Set<number>();

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

function killAll(): void {
  for (const pgid of liveGroups) killGroup(pgid);
  liveGroups.clear();
}

let tempRoot: string | null = null;
function removeTemp(): void {
  if (tempRoot) rmSync(tempRoot, { recursive: true, force: true });
  tempRoot = null;
}

process.on("exit", () => {
  killAll();
  removeTemp();
});
for (const [name, signo] of [["SIGINT", 2], ["SIGTERM", 15], ["SIGHUP", 1]] as const) {
  process.on(name, () => {
    process.stderr.write(`bench: ${name}, stopping\n`);
    process.exit(128 + signo);
  });
}

/** Pids of the children of `pid` (all its threads), from /proc. */
function childPids(pid: number): number[] {
  const found: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
      if (text) found.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // the process is gone, or /proc has no children files: fall back to a scan
  }
  if (found.length > 0) return found;
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (ppid === pid) found.push(Number(entry));
      } catch {
        // raced with an exit
      }
    }
  } catch {
    // no /proc
  }
  return found;
}

/** VmHWM / VmRSS of a process in KiB, or null when unreadable. */
function memoryKiB(pid: number): { hwm: number; rss: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { hwm: field("VmHWM"), rss: field("VmRSS") };
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Setups

interface Setup {
  name: SetupName;
  /** The middle process (relay or vigil), whose memory is reported; null for direct. */
  middle: string | null;
  argv(dir: string): string[];
  env?: Record<string, string>;
  /** Environment that names a file in the run's directory. */
  envFor?(dir: string): Record<string, string>;
  /** Where the decision log lands, to check that every call was recorded. */
  decisionLog?(dir: string): string;
  /** A signed capture's directory: its checkpoints and capture.dsse.json are checked too. */
  signedCapture?(dir: string): string;
}

const DESCRIBE: Record<SetupName, string> = {
  direct: "the client spawns `bun bench/wrap/server.ts` (anchor)",
  relay: "`bun bench/wrap/relay.ts -- bun bench/wrap/server.ts`: byte relay, the floor of one extra hop",
  "relay-lines": "relay.ts with RELAY_MODE=lines: whole lines only, concatenated when they span chunks, one write per line (experiment)",
  "relay-batched": "relay.ts with RELAY_MODE=batched: whole lines only, no concatenation, one write per run of lines (experiment)",
  "relay-decisions":
    "relay.ts with RELAY_MODE=decisions: every client line `JSON.parse`d, a decision record per `tools/call` (arguments' SHA-256, `JSON.stringify`), a read's records in one `writeSync` before its forward, the server lines' `\"id\"` located: a lower bound on any wrap with a decision log (the floor of the required work)",
  wrap: "`dist/vigil wrap --allow-all --event-source vigil://bench/x --decision-log D --decision-log-new -- bun bench/wrap/server.ts` (the target)",
  "wrap+policy": "`dist/vigil wrap --policy bench/wrap/policy.yaml --capture-dir DIR --event-source … -- …`: allow-list + argument schemas, decision log, receipts (request/response SHA-256), context/stop records, manifest (informational)",
  "wrap-capture":
    "`dist/vigil wrap --allow-all --capture-dir DIR --event-source vigil://bench/x -- …`: hash-chained decision log and receipts, context/stop records, manifest; no key (the baseline of wrap-signed)",
  "wrap-signed":
    "the same as wrap-capture with `--signing-key K` (Ed25519, made for the run): signed checkpoints (defaults: every 1,000 records across both logs, or 60 s), capture.dsse.json at the end",
  "wrap-nolog": "`dist/vigil wrap --allow-all -- …`: no evidence output (experiment)",
  "wrap-src": "`bun src/cli.ts wrap` with wrap's flags: the same code run from source (profiling)",
  "wrap-alt": "`bun ALT/src/cli.ts wrap` with wrap's flags, ALT = --alt DIR (A/B of a patched tree)",
};

const SETUPS: Record<SetupName, Setup> = {
  direct: { name: "direct", middle: null, argv: () => [BUN, SERVER] },
  relay: { name: "relay", middle: "relay", argv: () => [BUN, RELAY, "--", BUN, SERVER] },
  // Experiments (bench/wrap/relay.ts RELAY_MODE): line framing with store-and-forward, no parsing.
  "relay-lines": { name: "relay-lines", middle: "relay", argv: () => [BUN, RELAY, "--", BUN, SERVER], env: { RELAY_MODE: "lines" } },
  "relay-batched": { name: "relay-batched", middle: "relay", argv: () => [BUN, RELAY, "--", BUN, SERVER], env: { RELAY_MODE: "batched" } },
  "relay-decisions": {
    name: "relay-decisions",
    middle: "relay",
    argv: () => [BUN, RELAY, "--", BUN, SERVER],
    env: { RELAY_MODE: "decisions" },
    envFor: (dir) => ({ RELAY_DECISION_LOG: join(dir, "d.ndjson") }),
    decisionLog: (dir) => join(dir, "d.ndjson"),
  },
  wrap: {
    name: "wrap",
    middle: "vigil",
    argv: (dir) => [
      VIGIL, "wrap", "--allow-all", "--event-source", "vigil://bench/x",
      "--decision-log", join(dir, "d.ndjson"), "--decision-log-new", "--", BUN, SERVER,
    ],
    decisionLog: (dir) => join(dir, "d.ndjson"),
  },
  "wrap+policy": {
    name: "wrap+policy",
    middle: "vigil",
    argv: (dir) => [
      VIGIL, "wrap", "--policy", POLICY, "--capture-dir", join(dir, "capture"),
      "--event-source", "vigil://bench/x", "--", BUN, SERVER,
    ],
    decisionLog: (dir) => join(dir, "capture", "decisions.ndjson"),
  },
  // The same wrap with and without a signing key (issue 14): the difference is what signing costs.
  "wrap-capture": {
    name: "wrap-capture",
    middle: "vigil",
    argv: (dir) => [VIGIL, "wrap", "--allow-all", "--capture-dir", join(dir, "capture"), "--event-source", "vigil://bench/x", "--", BUN, SERVER],
    decisionLog: (dir) => join(dir, "capture", "decisions.ndjson"),
  },
  "wrap-signed": {
    name: "wrap-signed",
    middle: "vigil",
    argv: (dir) => [
      VIGIL, "wrap", "--allow-all", "--capture-dir", join(dir, "capture"), "--signing-key", signingKey ?? "(no key)",
      "--event-source", "vigil://bench/x", "--", BUN, SERVER,
    ],
    decisionLog: (dir) => join(dir, "capture", "decisions.ndjson"),
    signedCapture: (dir) => join(dir, "capture"),
  },
  "wrap-nolog": { name: "wrap-nolog", middle: "vigil", argv: () => [VIGIL, "wrap", "--allow-all", "--", BUN, SERVER] },
  // The same as `wrap`, run from source (for --profile, which needs Bun's own flags).
  "wrap-src": {
    name: "wrap-src",
    middle: "vigil",
    argv: (dir) => [
      BUN, ...(profileDir ? ["--cpu-prof-md", `--cpu-prof-dir=${profileDir}`] : []), join(ROOT, "src/cli.ts"), "wrap", "--allow-all",
      "--event-source", "vigil://bench/x", "--decision-log", join(dir, "d.ndjson"), "--decision-log-new", "--", BUN, SERVER,
    ],
    decisionLog: (dir) => join(dir, "d.ndjson"),
  },
  // The same as wrap-src, from another checkout given with --alt DIR (to A/B a change to src/).
  "wrap-alt": {
    name: "wrap-alt",
    middle: "vigil",
    argv: (dir) => [
      BUN, ...ALT_BUN_FLAGS, ...(profileDir ? ["--cpu-prof-md", `--cpu-prof-dir=${profileDir}`] : []), join(altRoot ?? ROOT, "src/cli.ts"), "wrap", "--allow-all",
      "--event-source", "vigil://bench/x", "--decision-log", join(dir, "d.ndjson"), "--decision-log-new", "--", BUN, SERVER,
    ],
    decisionLog: (dir) => join(dir, "d.ndjson"),
    ...(ALT_ENV ? { env: ALT_ENV } : {}),
  },
};


// ---------------------------------------------------------------------------------------------
// The client side of one spawned setup

interface Response {
  id: number;
  ok: boolean;
  length: number;
  /** The whole line, for lines up to SMALL_LINE bytes. */
  small: Uint8Array | null;
}

const SMALL_LINE = 64 * 1024;
const RESULT_HEAD = Buffer.from('{"result":');
const ID_MARK = '"id":';

class Peer {
  readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  readonly pid: number;
  serverPid: number | null = null;
  toolCalls = 0;
  /** The phase this peer runs (set by runOne). */
  phase: PhaseName = "latency";
  private readonly waiting = new Map<number, { resolve(r: Response): void; reject(e: Error): void }>();
  /** When set, every response goes here instead of to `waiting` (pipelined phases). */
  onResponse: ((r: Response) => void) | null = null;
  /** Called after each chunk of stdout has been split (pipelined phases refill their window here). */
  afterChunk: (() => void) | null = null;
  private stderrTail = "";
  private closing = false;
  private failure: Error | null = null;
  /** Rejects once the process is gone (or unusable) while we still expect answers. */
  readonly broken: Promise<never>;
  private breakWith!: (e: Error) => void;

  constructor(
    readonly setup: Setup,
    readonly dir: string,
  ) {
    this.proc = Bun.spawn(setup.argv(dir), {
      cwd: ROOT,
      detached: true,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      ...(setup.env || setup.envFor ? { env: { ...process.env, ...setup.env, ...setup.envFor?.(dir) } } : {}),
    });
    this.pid = this.proc.pid;
    liveGroups.add(this.pid);
    this.broken = new Promise<never>((_, reject) => {
      this.breakWith = reject;
    });
    this.broken.catch(() => {});
    void this.readLoop();
    void this.drainStderr();
    void this.proc.exited.then((code) => {
      if (!this.closing) this.fail(new Error(`${setup.name}: process exited early (code ${code})`));
    });
  }

  fail(e: Error): void {
    if (this.failure) return;
    this.failure = new Error(`${e.message}${this.stderrTail ? `\n--- stderr (tail) ---\n${this.stderrTail}` : ""}`);
    for (const w of this.waiting.values()) w.reject(this.failure);
    this.waiting.clear();
    this.breakWith(this.failure);
  }

  private async drainStderr(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.proc.stderr) this.stderrTail = (this.stderrTail + decoder.decode(chunk)).slice(-4000);
    } catch {
      // gone
    }
  }

  private async readLoop(): Promise<void> {
    const reader = this.proc.stdout.getReader();
    let parts: Uint8Array[] = [];
    let partsLength = 0;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        let start = 0;
        for (;;) {
          const nl = value.indexOf(0x0a, start);
          if (nl < 0) {
            if (start < value.length) {
              parts.push(value.subarray(start));
              partsLength += value.length - start;
            }
            break;
          }
          if (partsLength === 0) this.line([value.subarray(start, nl)], nl - start);
          else {
            parts.push(value.subarray(start, nl));
            this.line(parts, partsLength + nl - start);
            parts = [];
            partsLength = 0;
          }
          start = nl + 1;
        }
        this.afterChunk?.();
      }
    } catch (e) {
      this.fail(new Error(`${this.setup.name}: reading stdout failed: ${String(e)}`));
    }
  }

  /** One response line, given as its parts; parsed only as far as needed (head, id at the tail). */
  private line(parts: Uint8Array[], length: number): void {
    if (this.failure) return;
    const small = length <= SMALL_LINE ? (parts.length === 1 ? parts[0]! : Buffer.concat(parts, length)) : null;
    const head = small ?? parts[0]!;
    let ok = head.length >= RESULT_HEAD.length;
    for (let i = 0; ok && i < RESULT_HEAD.length; i++) ok = head[i] === RESULT_HEAD[i];
    let id = ok ? idFromTail(tailOf(parts, 48)) : null;
    if (id === null && small) {
      // Not our server's shape (an error written by vigil, a notification): parse it properly.
      try {
        const msg = JSON.parse(Buffer.from(small).toString("utf8")) as { id?: unknown; method?: unknown };
        if (msg.method !== undefined) return; // a server notification or request: not an answer
        if (typeof msg.id === "number") id = msg.id;
        ok = false;
      } catch {
        // fall through
      }
    }
    if (id === null) {
      this.fail(new Error(`${this.setup.name}: unexpected line on stdout (${length} bytes): ${preview(small ?? head)}`));
      return;
    }
    const r: Response = { id, ok, length, small };
    if (this.onResponse) {
      this.onResponse(r);
      return;
    }
    const w = this.waiting.get(id);
    if (!w) {
      this.fail(new Error(`${this.setup.name}: response to unknown id ${id}`));
      return;
    }
    this.waiting.delete(id);
    w.resolve(r);
  }

  send(line: string): void {
    this.proc.stdin.write(line);
  }

  flush(): void {
    try {
      const f = this.proc.stdin.flush();
      if (f instanceof Promise) f.catch((e: unknown) => this.fail(new Error(`${this.setup.name}: write failed: ${String(e)}`)));
    } catch (e) {
      this.fail(new Error(`${this.setup.name}: write failed: ${String(e)}`));
    }
  }

  /** Sends one request line and resolves with its response. Bounded by the phase (see `bounded`). */
  call(id: number, line: string): Promise<Response> {
    if (this.failure) return Promise.reject(this.failure);
    const p = new Promise<Response>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    this.send(line);
    this.flush();
    return p;
  }

  /** Closes stdin, waits (bounded) for a clean exit, then kills whatever is left of the groups. */
  async close(): Promise<number | null> {
    this.closing = true;
    try {
      await this.proc.stdin.end();
    } catch {
      // already closed
    }
    const code = await Promise.race([this.proc.exited, Bun.sleep(CLOSE_MS).then(() => null)]);
    killGroup(this.pid);
    if (this.serverPid !== null) killGroup(this.serverPid);
    liveGroups.delete(this.pid);
    if (this.serverPid !== null) liveGroups.delete(this.serverPid);
    return code;
  }

  get stderr(): string {
    return this.stderrTail;
  }
}

function tailOf(parts: Uint8Array[], n: number): Uint8Array {
  const last = parts[parts.length - 1]!;
  if (last.length >= n || parts.length === 1) return last.subarray(Math.max(0, last.length - n));
  return Buffer.concat(parts).subarray(-n);
}

function idFromTail(tail: Uint8Array): number | null {
  const text = Buffer.from(tail.buffer, tail.byteOffset, tail.byteLength).toString("latin1");
  const at = text.lastIndexOf(ID_MARK);
  if (at < 0 || text[text.length - 1] !== "}") return null;
  const id = Number(text.slice(at + ID_MARK.length, text.length - 1));
  return Number.isInteger(id) ? id : null;
}

function preview(bytes: Uint8Array): string {
  return JSON.stringify(Buffer.from(bytes.subarray(0, 200)).toString("utf8"));
}

/** Races `work` against the phase deadline and the peer's death; on timeout the peer is killed. */
async function bounded<T>(peer: Peer, ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = new Error(`${peer.setup.name}: ${what} did not finish within ${ms} ms`);
      peer.fail(e);
      killGroup(peer.pid);
      reject(e);
    }, ms);
  });
  try {
    return await Promise.race([work, timeout, peer.broken]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Requests

let nextId = 1;
const request = (id: number, method: string, params: unknown) =>
  `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${JSON.stringify(params)}}\n`;

function echoLine(id: number, text: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":${JSON.stringify(text)}}}}\n`;
}

/** An echo text that makes the request line `bytes` long (for a 6-digit id). */
function paddedText(bytes: number): string {
  const overhead = echoLine(100_000, "").length;
  return "a".repeat(Math.max(0, bytes - overhead));
}

async function start(setup: Setup, dir: string): Promise<Peer> {
  const peer = new Peer(setup, dir);
  try {
    await bounded(peer, STARTUP_MS, "initialize", (async () => {
      const init = await peer.call(nextId, request(nextId++, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "vigil-bench", version: "1" },
      }));
      if (!init.ok) throw new Error(`${setup.name}: initialize failed: ${preview(init.small ?? new Uint8Array())}`);
      peer.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
      const list = await peer.call(nextId, request(nextId++, "tools/list", {}));
      if (!list.ok) throw new Error(`${setup.name}: tools/list failed`);
      // Sanity: one echo round trip returns exactly its text.
      const id = nextId++;
      const echo = await peer.call(id, echoLine(id, "héllo\n\"bench\""));
      peer.toolCalls++;
      const body = JSON.parse(Buffer.from(echo.small!).toString("utf8")) as { result?: { content?: { text?: string }[] } };
      if (body.result?.content?.[0]?.text !== "héllo\n\"bench\"") throw new Error(`${setup.name}: echo returned ${preview(echo.small!)}`);
    })());
  } catch (e) {
    await peer.close();
    throw e;
  }
  if (setup.middle !== null) {
    const children = childPids(peer.pid);
    peer.serverPid = children[0] ?? null;
    if (peer.serverPid !== null) liveGroups.add(peer.serverPid);
  }
  return peer;
}

/** Ends a peer and checks the middle process's verdict: clean exit, and every call on record. */
async function finish(peer: Peer): Promise<void> {
  const code = await peer.close();
  if (code !== 0) throw new Error(`${peer.setup.name}: exited with ${code ?? "no status (killed)"}${peer.stderr ? `\n${peer.stderr}` : ""}`);
  if (peer.setup.decisionLog) {
    const path = peer.setup.decisionLog(peer.dir);
    const lines = existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
    if (lines !== peer.toolCalls) throw new Error(`${peer.setup.name}: decision log holds ${lines} records for ${peer.toolCalls} tools/call`);
  }
  if (peer.setup.signedCapture) checkSignedCapture(peer, peer.setup.signedCapture(peer.dir));
}

/** Checkpoints written by the signed runs of each phase, and the records they covered (for the report). */
const signedRuns: { phase: PhaseName; records: number; checkpoints: number }[] = [];
const CHECKPOINT_EVERY = 1000;

/** A signed run must have signed what it wrote: at least one checkpoint per 1,000 records, and the envelope. */
function checkSignedCapture(peer: Peer, dir: string): void {
  const lines = (name: string) => {
    const path = join(dir, name);
    if (!existsSync(path)) return 0;
    const bytes = readFileSync(path);
    let n = 0;
    for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) n++;
    return n;
  };
  const records = lines("decisions.ndjson") + lines("receipts.ndjson");
  const checkpoints = lines("checkpoints.ndjson");
  if (checkpoints < Math.floor(records / CHECKPOINT_EVERY)) {
    throw new Error(`${peer.setup.name}: ${checkpoints} checkpoints for ${records} records (expected at least one per ${CHECKPOINT_EVERY})`);
  }
  if (!existsSync(join(dir, "capture.dsse.json"))) throw new Error(`${peer.setup.name}: no capture.dsse.json in ${dir}`);
  signedRuns.push({ phase: peer.phase, records, checkpoints });
}

// ---------------------------------------------------------------------------------------------
// Phases

/** CPU time per call (µs) of the middle process and of the server over the timed part of a phase. */
interface CpuPerCall {
  middleCpu: number | null;
  /**
   * Of middleCpu, the part on the middle's JIT threads (JSC's `JITWorker`s): code still being
   * compiled in the timed window. JSC compiles a function with its optimizing tiers only after many
   * calls, so with more code on its hot path, wrap's JIT runs longer after the warm-up than a relay's.
   */
  middleJit: number | null;
  serverCpu: number | null;
  /** This harness (the MCP client). */
  clientCpu: number | null;
}
interface LatencyResult extends CpuPerCall {
  p50: number;
  p99: number;
  mean: number;
}
interface ThroughputResult extends CpuPerCall {
  perSecond: number;
}
interface LargeResult extends CpuPerCall {
  mibPerSecond: number;
  /** Middle process VmHWM (KiB) after initialize, after `checkpoint` calls and at the end. */
  hwmStart: number | null;
  hwmCheckpoint: number | null;
  hwmEnd: number | null;
  serverHwm: number | null;
}

function percentile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * On-CPU time (ns) a process has run, all its threads and of those its JIT threads (JSC names them
 * `JITWorker`), from one reading of /proc/<pid>/task/<tid>/{comm,schedstat}; null for no process.
 */
function cpuNs(pid: number | null): { all: number; jit: number } | null {
  if (pid === null) return null;
  const threads = threadCpuMsOf(pid);
  if (threads.size === 0) return null;
  let all = 0;
  let jit = 0;
  for (const [name, ms] of threads) {
    all += ms;
    if (name.startsWith("JITWorker")) jit += ms;
  }
  return { all: all * 1e6, jit: jit * 1e6 };
}

/** Starts a CPU-time measurement of the peer's middle process and server; call the result after `calls` calls. */
function cpuMeter(peer: Peer): (calls: number) => CpuPerCall {
  const middle = peer.setup.middle === null ? null : peer.pid;
  const server = peer.setup.middle === null ? peer.pid : peer.serverPid;
  const m0 = cpuNs(middle);
  const s0 = cpuNs(server);
  const c0 = cpuNs(process.pid);
  return (calls) => {
    const m1 = cpuNs(middle);
    const s1 = cpuNs(server);
    const c1 = cpuNs(process.pid);
    const per = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? null : (b - a) / 1000 / calls);
    return { middleCpu: per(m0?.all, m1?.all), middleJit: per(m0?.jit, m1?.jit), serverCpu: per(s0?.all, s1?.all), clientCpu: per(c0?.all, c1?.all) };
  };
}

async function latencyPhase(peer: Peer, c: Config): Promise<LatencyResult> {
  const samples = new Float64Array(c.latencyCalls);
  const text = "hello, bench";
  let meter = cpuMeter(peer);
  for (let i = 0; i < c.latencyWarmup + c.latencyCalls; i++) {
    if (i === c.latencyWarmup) meter = cpuMeter(peer);
    const id = nextId++;
    const line = echoLine(id, text);
    const t0 = performance.now();
    const r = await peer.call(id, line);
    const dt = performance.now() - t0;
    peer.toolCalls++;
    if (!r.ok) throw new Error(`${peer.setup.name}: echo ${id} failed: ${preview(r.small ?? new Uint8Array())}`);
    if (i >= c.latencyWarmup) samples[i - c.latencyWarmup] = dt * 1000;
  }
  const cpu = meter(c.latencyCalls);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  samples.sort();
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), mean, ...cpu };
}

/** `total` pipelined echo calls with at most `window` in flight; resolves with the elapsed ms. */
function pipelined(peer: Peer, total: number, window: number, text: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let sent = 0;
    let received = 0;
    const t0 = performance.now();
    const refill = () => {
      let wrote = false;
      while (sent < total && sent - received < window) {
        peer.send(echoLine(nextId++, text));
        sent++;
        wrote = true;
      }
      if (wrote) peer.flush();
    };
    peer.onResponse = (r) => {
      if (!r.ok) {
        reject(new Error(`${peer.setup.name}: pipelined echo ${r.id} failed: ${preview(r.small ?? new Uint8Array())}`));
        return;
      }
      received++;
    };
    peer.afterChunk = () => {
      if (received === total) {
        peer.onResponse = null;
        peer.afterChunk = null;
        resolve(performance.now() - t0);
        return;
      }
      refill();
    };
    refill();
  });
}

async function throughputPhase(peer: Peer, c: Config): Promise<ThroughputResult> {
  const text = paddedText(c.messageBytes);
  await pipelined(peer, c.throughputWarmup, c.window, text);
  peer.toolCalls += c.throughputWarmup;
  const meter = cpuMeter(peer);
  const ms = await pipelined(peer, c.throughputCalls, c.window, text);
  peer.toolCalls += c.throughputCalls;
  return { perSecond: c.throughputCalls / (ms / 1000), ...meter(c.throughputCalls) };
}

async function largePhase(peer: Peer, c: Config): Promise<LargeResult> {
  const blob = async () => {
    const id = nextId++;
    const r = await peer.call(id, request(id, "tools/call", { name: "blob", arguments: { bytes: c.blobBytes } }));
    peer.toolCalls++;
    if (!r.ok || r.length < c.blobBytes) throw new Error(`${peer.setup.name}: blob ${id} failed (${r.length} bytes): ${preview(r.small ?? new Uint8Array())}`);
    return r.length;
  };
  for (let i = 0; i < c.blobWarmup; i++) await blob();
  const mem = () => (peer.setup.middle === null ? null : (memoryKiB(peer.pid)?.hwm ?? null));
  const hwmStart = mem();
  let hwmCheckpoint: number | null = null;
  let bytes = 0;
  let elapsed = 0;
  const meter = cpuMeter(peer);
  for (let i = 1; i <= c.blobCalls; i++) {
    const t0 = performance.now();
    bytes += await blob();
    elapsed += performance.now() - t0;
    if (i === c.blobCheckpoint) hwmCheckpoint = mem();
  }
  const cpu = meter(c.blobCalls);
  const serverPid = peer.setup.middle === null ? peer.pid : peer.serverPid;
  return {
    ...cpu,
    mibPerSecond: bytes / MiB / (elapsed / 1000),
    hwmStart,
    hwmCheckpoint,
    hwmEnd: mem(),
    serverHwm: serverPid === null ? null : (memoryKiB(serverPid)?.hwm ?? null),
  };
}

// ---------------------------------------------------------------------------------------------
// Statistics and reporting

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: number[], digits = 0): string =>
  xs.length < 2 ? "" : ` (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

type Rows = string[][];

function renderText(headers: string[], rows: Rows): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [fmt(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(fmt)].join("\n");
}

function renderMarkdown(headers: string[], rows: Rows): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

interface Table {
  title: string;
  headers: string[];
  rows: Rows;
}

interface Collected {
  latency: Map<SetupName, LatencyResult[]>;
  throughput: Map<SetupName, ThroughputResult[]>;
  large: Map<SetupName, LargeResult[]>;
  /** Runs done again for the host's steal (bench/steal.ts). */
  noise: StealCount;
}

const BASE: Partial<Record<SetupName, SetupName>> = {
  relay: "direct",
  wrap: "relay",
  "wrap+policy": "relay",
  "wrap-capture": "relay",
  "wrap-signed": "wrap-capture",
  "wrap-nolog": "relay",
  "wrap-src": "relay",
  "wrap-alt": "relay",
  "relay-lines": "relay",
  "relay-batched": "relay",
  "relay-decisions": "relay",
};
const kib = (v: number | null) => (v === null || Number.isNaN(v) ? "—" : (v / 1024).toFixed(1));

function report(c: Config, got: Collected): { tables: Table[]; targets: Target[] } {
  const tables: Table[] = [];
  const targets: Target[] = [];
  const rounds = (name: SetupName, m: Map<SetupName, unknown[]>) => m.get(name)?.length ?? 0;
  const perRound = <R>(m: Map<SetupName, R[]>, a: SetupName, b: SetupName, f: (x: R, y: R) => number): number[] => {
    const xs = m.get(a) ?? [];
    const ys = m.get(b) ?? [];
    return xs.slice(0, ys.length).map((x, i) => f(x, ys[i]!));
  };

  const any = (m: Map<SetupName, unknown[]>) => [...m.values()].some((rs) => rs.length > 0);
  if (any(got.latency)) {
    const rows: Rows = [];
    for (const name of c.setups) {
      const rs = got.latency.get(name);
      if (!rs?.length) continue;
      const base = BASE[name];
      const has = base !== undefined && rounds(base, got.latency) > 0;
      const add50 = has ? perRound(got.latency, name, base, (x, y) => x.p50 - y.p50) : [];
      const add99 = has ? perRound(got.latency, name, base, (x, y) => x.p99 - y.p99) : [];
      rows.push([
        name,
        median(rs.map((r) => r.p50)).toFixed(1) + spread(rs.map((r) => r.p50)),
        median(rs.map((r) => r.p99)).toFixed(1) + spread(rs.map((r) => r.p99)),
        median(rs.map((r) => r.mean)).toFixed(1),
        has ? `${signed(median(add50))}${spread(add50)}` : "—",
        has ? signed(median(add99)) : "—",
        has ? base : "",
        cpuCell(rs.map((r) => r.middleCpu)),
        cpuCell(rs.map((r) => r.middleJit)),
        cpuCell(rs.map((r) => r.serverCpu)),
        cpuCell(rs.map((r) => r.clientCpu)),
      ]);
      if (name === "wrap" && has && base === "relay") {
        const v = median(add50);
        targets.push({ name: "added p50 latency of wrap (decision log) over the relay ≤ 25 µs (issue 16)", measured: `${signed(v)} µs${spread(add50, 1)}`, met: v <= 25 });
        targets.push({ name: "added p50 latency of wrap (decision log) over the relay ≤ 50 µs (wrap.md §11)", measured: `${signed(v)} µs`, met: v <= 50 });
      }
      if (name === "relay-decisions" && rounds("relay", got.latency) > 0) {
        const r = perRound(got.latency, name, "relay", (x, y) => x.p99 / y.p99);
        targets.push({ name: "the floor (relay-decisions): p99 over the relay's; added p50 over the relay (informational)", measured: `${median(r).toFixed(2)}×${spread(r, 2)}; ${signed(median(add50))} µs`, met: null });
      }
      // Issue 16: the tail, as a ratio to the relay's p99 in the same round.
      const p99Limit = name === "wrap" ? 1.5 : name === "wrap+policy" ? 2 : null;
      if (p99Limit !== null && rounds("relay", got.latency) > 0) {
        const r = perRound(got.latency, name, "relay", (x, y) => x.p99 / y.p99);
        const v = median(r);
        const label = name === "wrap" ? "wrap (decision log)" : "wrap+policy (capture dir, schemas)";
        targets.push({
          name: `p99 latency of ${label} ≤ ${p99Limit}× the relay's p99 (issue 16)`,
          measured: `${v.toFixed(2)}×${r.length > 1 ? ` (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})` : ""}; p99 ${median(rs.map((x) => x.p99)).toFixed(1)} µs`,
          met: v <= p99Limit,
        });
      }
      if (name === "wrap-signed" && has && base === "wrap-capture") {
        const v = median(add50);
        const addMean = perRound(got.latency, name, base, (x, y) => x.mean - y.mean);
        targets.push({
          name: "added p50 latency of wrap with --signing-key over the same wrap without a key (same run) ≤ 5 µs (issue 14)",
          measured: `${signed(v)} µs${spread(add50, 1)}; p99 ${signed(median(add99))} µs`,
          met: v <= 5,
        });
        targets.push({
          name: "added mean latency, signed over unsigned (the mean carries the amortized checkpoints: fdatasync of both logs, Ed25519, fdatasync of checkpoints.ndjson)",
          measured: `${signed(median(addMean))} µs${spread(addMean, 1)}`,
          met: null,
        });
      }
    }
    tables.push({
      title: `Latency: sequential tools/call echo round trips, ${c.latencyCalls} calls after ${c.latencyWarmup} warm-up (µs; median of rounds, range in parentheses; CPU/call = on-CPU time of that process per call, from /proc schedstat)`,
      headers: ["setup", "p50", "p99", "mean", "added p50", "added p99", "over", "middle CPU/call", "of which JIT", "server CPU/call", "client CPU/call"],
      rows,
    });
  }

  if (any(got.throughput)) {
    const rows: Rows = [];
    for (const name of c.setups) {
      const rs = got.throughput.get(name);
      if (!rs?.length) continue;
      const hasRelay = name !== "relay" && name !== "direct" && rounds("relay", got.throughput) > 0;
      const ratio = hasRelay ? perRound(got.throughput, name, "relay", (x, y) => x.perSecond / y.perSecond) : [];
      rows.push([
        name,
        Math.round(median(rs.map((r) => r.perSecond))).toString() + spread(rs.map((r) => r.perSecond)),
        ((median(rs.map((r) => r.perSecond)) * c.messageBytes) / MiB).toFixed(1),
        hasRelay ? `${pct(median(ratio))}${ratio.length > 1 ? ` (${pct(Math.min(...ratio))}–${pct(Math.max(...ratio))})` : ""}` : "—",
        cpuCell(rs.map((r) => r.middleCpu)),
        cpuCell(rs.map((r) => r.middleJit)),
        cpuCell(rs.map((r) => r.serverCpu)),
        cpuCell(rs.map((r) => r.clientCpu)),
      ]);
      if (name === "wrap" && hasRelay) {
        const v = median(ratio);
        targets.push({ name: "throughput of 1 KiB messages, wrap ≥ 70 % of the relay (wrap.md §11, issue 16)", measured: `${pct(v)}${ratio.length > 1 ? ` (${pct(Math.min(...ratio))}–${pct(Math.max(...ratio))})` : ""}`, met: v >= 0.7 });
      }
      if (name === "relay-decisions" && hasRelay) {
        targets.push({ name: "the floor (relay-decisions): throughput of 1 KiB messages over the relay's (informational)", measured: `${pct(median(ratio))}${ratio.length > 1 ? ` (${pct(Math.min(...ratio))}–${pct(Math.max(...ratio))})` : ""}`, met: null });
      }
      if (name === "wrap-signed" && rounds("wrap-capture", got.throughput) > 0) {
        const r = perRound(got.throughput, name, "wrap-capture", (x, y) => x.perSecond / y.perSecond);
        targets.push({ name: "throughput of 1 KiB messages, wrap-signed / wrap-capture (informational)", measured: `${pct(median(r))}${r.length > 1 ? ` (${pct(Math.min(...r))}–${pct(Math.max(...r))})` : ""}`, met: null });
      }
    }
    tables.push({
      title: `Throughput: ${c.throughputCalls} pipelined 1 KiB tools/call echo, window ${c.window}, after ${c.throughputWarmup} warm-up`,
      headers: ["setup", "msg/s", "MiB/s (requests)", "vs relay", "middle CPU/call", "of which JIT", "server CPU/call", "client CPU/call"],
      rows,
    });
  }

  if (any(got.large)) {
    const rows: Rows = [];
    for (const name of c.setups) {
      const rs = got.large.get(name);
      if (!rs?.length) continue;
      const hasRelay = name !== "relay" && name !== "direct" && rounds("relay", got.large) > 0;
      const ratio = hasRelay ? perRound(got.large, name, "relay", (x, y) => x.mibPerSecond / y.mibPerSecond) : [];
      const mid = (f: (r: LargeResult) => number | null) => {
        const xs = rs.map(f).filter((v): v is number => v !== null && !Number.isNaN(v));
        return xs.length ? median(xs) : null;
      };
      const growth = rs.map((r) => (r.hwmEnd ?? NaN) - (r.hwmCheckpoint ?? NaN)).filter((v) => !Number.isNaN(v));
      rows.push([
        name,
        median(rs.map((r) => r.mibPerSecond)).toFixed(0) + spread(rs.map((r) => r.mibPerSecond)),
        hasRelay ? pct(median(ratio)) : "—",
        kib(mid((r) => r.hwmStart)),
        kib(mid((r) => r.hwmCheckpoint)),
        kib(mid((r) => r.hwmEnd)),
        growth.length ? `${signed(Math.max(...growth) / 1024, 1)}` : "—",
        kib(mid((r) => r.serverHwm)),
        cpuCell(rs.map((r) => r.middleCpu)),
        cpuCell(rs.map((r) => r.serverCpu)),
        cpuCell(rs.map((r) => r.clientCpu)),
      ]);
      if (name === "relay" && growth.length) {
        targets.push({ name: "the relay itself (it holds nothing): VmHWM growth over the same calls (informational)", measured: `${signed(Math.max(...growth) / 1024, 1)} MiB (worst round)`, met: null });
      }
      if (name === "relay-decisions" && hasRelay) {
        const worst = growth.length ? `; VmHWM ${signed(Math.max(...growth) / 1024, 1)} MiB (worst round)` : "";
        targets.push({ name: "the floor (relay-decisions): 8 MiB results over the relay's MiB/s; VmHWM growth (informational)", measured: `${pct(median(ratio))}${worst}`, met: null });
      }
      if (name === "wrap" && hasRelay) {
        const v = median(ratio);
        targets.push({ name: "8 MiB results, wrap ≥ 85 % of the relay's MiB/s (issue 16)", measured: pct(v), met: v >= 0.85 });
        targets.push({ name: "8 MiB results, wrap ≥ 70 % of the relay's MiB/s (wrap.md §11)", measured: pct(v), met: v >= 0.7 });
        if (growth.length) {
          const worst = Math.max(...growth) / 1024;
          const limit = c.blobBytes / MiB;
          targets.push({
            name: `flat memory: wrap's VmHWM grows by less than one message (${limit} MiB) from call ${c.blobCheckpoint} to call ${c.blobCalls} (wrap.md §11; issue 16: < 8 MiB)`,
            measured: `${signed(worst, 1)} MiB (worst round); peak ${kib(mid((r) => r.hwmEnd))} MiB`,
            met: worst < limit,
          });
        }
      }
    }
    tables.push({
      title: `Large results: ${c.blobCalls} sequential tools/call blob of ${c.blobBytes / MiB} MiB after ${c.blobWarmup} warm-up; VmHWM of the middle process (MiB); CPU/call in µs`,
      headers: ["setup", "MiB/s", "vs relay", "HWM start", `HWM @${c.blobCheckpoint}`, `HWM @${c.blobCalls}`, "growth (worst)", "server HWM", "middle CPU/call", "server CPU/call", "client CPU/call"],
      rows,
    });
  }
  return { tables, targets };
}

/** Median CPU µs per call over the rounds, or "—". */
function cpuCell(xs: (number | null)[]): string {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? median(v).toFixed(1) : "—";
}

const signed = (v: number, digits = 1) => `${v >= 0 ? "+" : ""}${v.toFixed(digits)}`;
const pct = (v: number) => `${(v * 100).toFixed(0)} %`;

function machine(): { nproc: number; cpu: string; bun: string; kernel: string; vigil: string; tree: string } {
  let cpu = "unknown";
  try {
    cpu = /^model name\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? cpu;
  } catch {
    // no /proc/cpuinfo
  }
  const v = Bun.spawnSync([VIGIL, "--version"], { stderr: "ignore", timeout: 5000 });
  const git = (args: string[]) => {
    const r = Bun.spawnSync(["git", "-C", ROOT, ...args], { stderr: "ignore", timeout: 5000 });
    return r.exitCode === 0 ? r.stdout.toString().trim() : null;
  };
  const head = git(["rev-parse", "--short=12", "HEAD"]);
  const dirty = git(["status", "--porcelain", "--", "src"]);
  const built = existsSync(VIGIL) ? new Date(statSync(VIGIL).mtimeMs).toISOString().slice(0, 16).replace("T", " ") : "—";
  const binary = process.env.VIGIL_BIN ? `VIGIL_BIN=${VIGIL}` : "dist/vigil";
  return {
    tree: `${head ?? "unknown"}${dirty ? " + uncommitted changes in src/" : ""} (at run time; ${binary} built ${built} UTC)`,
    nproc: availableParallelism(),
    cpu,
    bun: Bun.version,
    kernel: release(),
    vigil: v.exitCode === 0 ? v.stdout.toString().trim() : "unknown",
  };
}

/** The 1/5/15-minute load averages when the run began (a busy machine widens every range). */
let loadAtStart = "";

/** The section a run writes: `wrap DATE`, or `wrap-signing DATE` for --signing (so it never replaces the day's full run). */
const sectionKey = (c: Config, date: string) => `${c.signing ? "wrap-signing" : c.steady ? "wrap-steady" : "wrap"} ${date}`;

function markdownSection(c: Config, date: string, tables: Table[], targets: Target[], seconds: number): string {
  const m = machine();
  const key = sectionKey(c, date);
  const lines = [
    `<!-- bench:${key} start (generated by bun bench/wrap/run.ts --write${c.signing ? " --signing" : c.steady ? " --steady" : ""}; replaced on the next run that day) -->`,
    `## ${date} — vigil wrap${c.signing ? ": what a signing key adds (chains, signed checkpoints, capture.dsse.json)" : c.steady ? `, steady state (${STEADY_WARMUP.toLocaleString("en")} warm-up calls: the middle's JIT has finished)` : ""}`,
    "",
    `Machine: ${m.nproc} CPUs (nproc), ${m.cpu}, Linux ${m.kernel}, Bun ${m.bun}, load average ${loadAtStart} at the start, ${loadavg().map((x) => x.toFixed(2)).join(" ")} at the end.`,
    `vigil: ${m.vigil}, tree ${m.tree}.`,
    `Run: \`bun bench/wrap/run.ts ${process.argv.slice(2).join(" ")}\`, ${c.rounds} rounds; each measurement spawns a fresh process chain; setups interleaved with a rotating order; the median over rounds is reported (range in parentheses); ${seconds.toFixed(0)} s. ${stealNote(lastNoise, "runs")}`,
    "",
    "Setups:",
    "",
    ...c.setups.map((name) => `- \`${name}\`: ${DESCRIBE[name]}`),
    "",
  ];
  for (const t of tables) lines.push(`**${t.title}**`, "", renderMarkdown(t.headers, t.rows), "");
  const cp = checkpointSummary();
  if (cp) lines.push(cp, "");
  lines.push(`**Targets (wrap.md §11, ${c.signing ? "issue 14" : "issue 16"})**`, "", renderMarkdown(["target", "measured", "result"], targets.map((t) => [t.name, t.measured, verdict(t.met)])), "");
  lines.push(`<!-- bench:${key} end -->`);
  return lines.join("\n");
}

let lastNoise: StealCount = stealCount();

/** What the signed runs signed, per phase (median over rounds): records across both logs and checkpoints written. */
function checkpointSummary(): string | null {
  if (signedRuns.length === 0) return null;
  const parts = PHASE_NAMES.flatMap((phase) => {
    const rs = signedRuns.filter((r) => r.phase === phase);
    if (rs.length === 0) return [];
    return [`${phase}: ${median(rs.map((r) => r.records))} records, ${median(rs.map((r) => r.checkpoints))} signed checkpoints per run`];
  });
  return `Signed runs (wrap-signed, whole run incl. warm-up; median over rounds): ${parts.join("; ")}. Each run was checked: at least one checkpoint per ${CHECKPOINT_EVERY.toLocaleString("en")} records, and capture.dsse.json written.`;
}


// ---------------------------------------------------------------------------------------------
// Main

/** One run, done again (its result dropped) while the host's steal decided it (bench/steal.ts). */
function runQuiet(setup: Setup, phase: PhaseName, c: Config, got: Collected): Promise<void> {
  const results: unknown[] = phase === "latency" ? got.latency.get(setup.name)! : phase === "throughput" ? got.throughput.get(setup.name)! : got.large.get(setup.name)!;
  return quietRun(`${setup.name} ${phase}`, got.noise, () => runOne(setup, phase, c, got), () => void results.pop());
}

async function runOne(setup: Setup, phase: PhaseName, c: Config, got: Collected): Promise<void> {
  const dir = mkdtempSync(join(tempRoot!, `${setup.name.replace(/\W/g, "_")}-${phase}-`));
  const peer = await start(setup, dir);
  peer.phase = phase;
  try {
    if (phase === "latency") {
      const r = await bounded(peer, PHASE_MS, phase, latencyPhase(peer, c));
      got.latency.get(setup.name)!.push(r);
    } else if (phase === "throughput") {
      const r = await bounded(peer, PHASE_MS, phase, throughputPhase(peer, c));
      got.throughput.get(setup.name)!.push(r);
    } else {
      const r = await bounded(peer, PHASE_MS, phase, largePhase(peer, c));
      got.large.get(setup.name)!.push(r);
    }
  } catch (e) {
    await peer.close();
    throw e;
  }
  await finish(peer);
  rmSync(dir, { recursive: true, force: true });
}

function progress(setup: SetupName, phase: PhaseName, got: Collected): string {
  if (phase === "latency") {
    const r = got.latency.get(setup)!.at(-1)!;
    return `p50 ${r.p50.toFixed(1)} µs, p99 ${r.p99.toFixed(1)} µs`;
  }
  if (phase === "throughput") return `${Math.round(got.throughput.get(setup)!.at(-1)!.perSecond)} msg/s`;
  const r = got.large.get(setup)!.at(-1)!;
  return `${r.mibPerSecond.toFixed(0)} MiB/s, HWM ${kib(r.hwmStart)} → ${kib(r.hwmCheckpoint)} → ${kib(r.hwmEnd)} MiB`;
}

async function main(): Promise<number> {
  const c = parseArgs(process.argv.slice(2));
  if (c.setups.some((s) => SETUPS[s].middle === "vigil") && !existsSync(VIGIL)) {
    process.stderr.write(`bench: ${VIGIL} is missing; build it first (make build, or bun scripts/build.ts --host)${process.env.VIGIL_BIN ? " or fix VIGIL_BIN" : ""}\n`);
    return 2;
  }
  loadAtStart = loadavg().map((x) => x.toFixed(2)).join(" ");
  // Twice the bound of a quiet run: runs done again for the host's steal (runQuiet) take their time too.
  // Longer warm-ups (--steady) stretch the latency and throughput phases in proportion.
  const warmups = Math.max(1, (c.latencyWarmup + c.latencyCalls) / 10_000, (c.throughputWarmup + c.throughputCalls) / 25_000);
  const stopDeadline = exitUnlessDoneWithin(2 * DEADLINE_MS * Math.max(1, c.rounds / 5) * Math.max(1, c.setups.length / 5) * warmups);
  tempRoot = mkdtempSync(join(tmpdir(), "vigil-bench-"));
  // The key lives in the run's temp dir (0700), created exclusively 0600 as `vigil keygen` does; only its path goes into argv.
  if (c.setups.includes("wrap-signed")) signingKey = generateKeyPair(join(tempRoot, "bench-signing")).keyPath;
  const began = performance.now();
  const got: Collected = { latency: new Map(), throughput: new Map(), large: new Map(), noise: stealCount() };
  for (const s of c.setups) for (const m of [got.latency, got.throughput, got.large]) m.set(s, []);

  for (let round = 0; round < c.rounds; round++) {
    for (const phase of c.phases) {
      const order = c.setups.map((_, i) => c.setups[(i + round) % c.setups.length]!);
      for (const name of order) {
        await runQuiet(SETUPS[name], phase, c, got);
        process.stderr.write(`  round ${round + 1}/${c.rounds}  ${phase.padEnd(10)} ${name.padEnd(12)} ${progress(name, phase, got)}\n`);
      }
    }
  }
  const seconds = (performance.now() - began) / 1000;
  stopDeadline();

  const { tables, targets: judged } = report(c, got);
  // The steady state's rows say so: the issue's figures are the default run's.
  const targets = c.steady ? judged.map((t) => ({ ...t, name: `steady state: ${t.name}` })) : judged;
  lastNoise = got.noise;
  const m = machine();
  const out: string[] = [
    "",
    `vigil wrap bench — ${m.nproc} CPUs, ${m.cpu}, Bun ${m.bun}, vigil ${m.vigil}, tree ${m.tree}; ${c.rounds} round(s), ${seconds.toFixed(0)} s`,
    stealNote(got.noise, "runs"),
    "",
  ];
  for (const t of tables) out.push(t.title, renderText(t.headers, t.rows), "");
  const cp = checkpointSummary();
  if (cp) out.push(cp, "");
  if (targets.length) out.push(`Targets (wrap.md §11, ${c.signing ? "issue 14" : "issue 16"})`, renderText(["target", "measured", "result"], targets.map((t) => [t.name, t.measured, verdict(t.met).replace(/\*/g, "")])), "");
  process.stdout.write(`${out.join("\n")}\n`);

  if (c.write) {
    const date = new Date().toISOString().slice(0, 10);
    writeResultsSection(sectionKey(c, date), markdownSection(c, date, tables, targets, seconds));
    process.stdout.write(`written: ${RESULTS} (section ${sectionKey(c, date)})\n`);
  }
  return 0;
}

runBench(main);
