/**
 * Performance harness for `vigil verify` (verify.md "Performance"): one run builds an 8 MiB,
 * 10,000-decision signed v2 capture and measures, interleaved and side by side,
 *
 *   verify     dist/vigil verify DIR                       (the target: chains, no key)
 *   verifyKey  dist/vigil verify DIR --public-key PUB      (with a key: signature, subjects, checkpoints)
 *   sha256     sha256sum of the same capture files        (it must at least read and hash them)
 *   startup    dist/vigil --version                       (the runtime's start-up)
 *
 * floor = median(startup) + median(sha256). Targets: median(verify) ≤ 2 × floor, verify's peak
 * RSS < 4 × the capture size, and median(verifyKey) ≤ 1.2 × median(verify) (issue 14). Then, in
 * process, the pure phases of verify on the same capture, so a missed target says where the time
 * goes. $VIGIL_BIN measures another build instead of dist/vigil (bench/vigil-under-test.ts).
 *
 *   bun bench/verify/run.ts [--write] [--runs N] [--keep]
 *
 *   --write   add or replace the `## verify` section in bench/RESULTS.md
 *   --runs N  timed runs per command (default 15), and as many peak-RSS runs
 *   --keep    keep the generated capture (its path is printed)
 *
 * The capture is generated with the producer's own builders (src/evidence), so it is what `wrap
 * --signing-key` would write for 10,000 decisions whose `reason` is padded to reach ~8 MiB: a
 * chained decision log just under the 8 MiB bound, a context and a v2 stop record that account for
 * it exactly, receipts omitted, a signed checkpoint every 1,000 records, a manifest with the right
 * sizes and hashes, and capture.dsse.json over all of them. The harness refuses to measure unless
 * `verify` says `closed` with 10,000 verified decisions, and authenticated with the key.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chainAnchor, withChain } from "../../src/evidence/chain.ts";
import { ChainedLog } from "../../src/evidence/chained-log.ts";
import { CHECKPOINT_EVERY_DEFAULT, CHECKPOINT_SECONDS_DEFAULT, Checkpointer } from "../../src/evidence/checkpoints.ts";
import { type DecisionFields, DecisionRecorder } from "../../src/evidence/decision-recorder.ts";
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from "../../src/evidence/dsse.ts";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { generateKeyPair, loadPublicKey, loadSigningKey } from "../../src/evidence/keys.ts";
import { buildManifest } from "../../src/evidence/manifest.ts";
import { writeRecordFile } from "../../src/evidence/record-file.ts";
import { CAPTURE_FILES, contextEventId } from "../../src/evidence/format.ts";
import { type StopDataV2, contextEvent, decisionEvent, stopEventV2 } from "../../src/evidence/records.ts";
import { wrapSessionStatement } from "../../src/evidence/session-statement.ts";
import { scanStrictJson } from "../../src/shared/strict-json-scanner.ts";
import { decodeUtf8Strict, validateStrictJson } from "../../src/shared/strict-json.ts";
import { sha256File } from "../../src/shared/digest.ts";
import type { Scheduler, TimerHandle } from "../../src/shared/time.ts";
import { BOUNDS } from "../../src/verify/capture-input.ts";
import { loadCapture } from "../../src/verify/load-capture.ts";
import { COLLECT_EVERY_LINES } from "../../src/verify/check-log.ts";
import { DECISION_LINE_V2, shapeProblem } from "../../src/verify/line-shapes.ts";
import { linkOf, recomputeChain } from "../../src/verify/log-chain.ts";
import { parseRecord, splitNdjson } from "../../src/verify/strict-records.ts";
import { verifyCapture } from "../../src/verify/verify-capture.ts";
import { writeResultsSection } from "../results-file.ts";
import { VIGIL, machine, vigilPresent } from "../vigil-under-test.ts";

const ROOT = resolve(import.meta.dir, "../..");
const RESULTS = join(ROOT, "bench/RESULTS.md");
const TIME = "/usr/bin/time";
const MiB = 1024 * 1024;
const RUN_TIMEOUT_MS = 60_000;

const DECISIONS = 10_000;
/** A signed checkpoint after every this many records: wrap's default. */
const CHECKPOINT_EVERY = CHECKPOINT_EVERY_DEFAULT;
/** The key pair lives next to the capture, never in it: `<tmp>/bench.key`, `<tmp>/bench.pub`. */
const pubOf = (dir: string) => join(dir, "..", "bench.pub");
/** The decision log is built to end this many bytes under the 8 MiB bound. */
const HEADROOM = 2048;

/** Forced collections in one pass over the benchmark log (the lines at i % N === N - 1). */
const COLLECTIONS = Math.floor(DECISIONS / COLLECT_EVERY_LINES);

// ---------------------------------------------------------------------------------------------
// Options

interface Config {
  write: boolean;
  runs: number;
  keep: boolean;
}

function parseArgs(argv: string[]): Config {
  const c: Config = { write: false, runs: 15, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") c.write = true;
    else if (a === "--keep") c.keep = true;
    else if (a === "--runs") {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 3 || n > 200) throw new Error("--runs N: an integer from 3 to 200");
      c.runs = n;
    } else throw new Error(`unknown argument ${a} (usage: bun bench/verify/run.ts [--write] [--runs N] [--keep])`);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The capture

interface BenchCapture {
  dir: string;
  /** Every file of the capture (what sha256sum reads). */
  files: string[];
  totalBytes: number;
  decisionBytes: number;
  checkpoints: number;
}

/** A scheduler whose timers never fire: the checkpoints come from the record count alone, as in a wrap session shorter than 60 s. */
const noTimers: Scheduler = {
  now: () => Date.now(),
  setTimeout: () => ({}) as TimerHandle,
  clearTimeout: () => {},
};

/**
 * The capture wrap writes with --capture-dir --signing-key (receipts aside) for 10,000 decisions,
 * written through the producer's own code in wrap's order (wrap.md §12): the decision log through
 * DecisionRecorder → ChainedLog (vigilseq/vigilprev from the session's anchor) with a Checkpointer
 * at the default cadence (a signed line every 1,000 records), the context record, the v2 stop
 * record naming the chain's head and the checkpoints, the v2 manifest (listing checkpoints.ndjson),
 * then capture.dsse.json: the wrap statement over every other file, signed (DSSE, Ed25519).
 */
function buildCapture(dir: string): BenchCapture {
  const source = "vigil://bench/verify";
  const sessionId = "b".repeat(32);
  const serverId = "bench-server";
  const policyDigest = `sha256:${"c".repeat(64)}`;
  const argsSha = "d".repeat(64);
  const binarySha256 = "f".repeat(64);
  const fields = (seq: number, reason: string): DecisionFields => ({
    request_id: seq + 2,
    tool: seq % 5 === 4 ? "exec" : "read_file",
    decision: seq % 5 === 4 ? "deny" : "allow",
    reason_code: seq % 5 === 4 ? "E_TOOL_DENIED" : "P_ALLOW",
    reason,
    matched_rule: seq % 5 === 4 ? "tools.deny[0]" : "tools.allow[0]",
    arguments_sha256: argsSha,
  });
  const anchor = chainAnchor(source, sessionId, CAPTURE_FILES.decisions);
  // Size every chained line without padding (vigilprev is always 64 hex digits, the time always 24
  // characters), then spread the padding so the log lands HEADROOM under the bound.
  const base = Array.from({ length: DECISIONS }, (_, seq) => {
    const event = decisionEvent(source, { session_id: sessionId, seq, server_id: serverId, ...fields(seq, ""), policy_digest: policyDigest, dry_run: false });
    return Buffer.byteLength(`${JSON.stringify(withChain(event, seq, anchor))}\n`);
  });
  const budget = BOUNDS.decisionBytes - HEADROOM - base.reduce((a, b) => a + b, 0);
  if (budget < 0) throw new Error("decision lines are larger than the bound allows");
  const each = Math.floor(budget / DECISIONS);
  let extra = budget - each * DECISIONS;

  const keys = generateKeyPair(join(dir, "..", "bench"));
  if (keys.pubPath !== pubOf(dir)) throw new Error(`key pair at ${keys.pubPath}, expected ${pubOf(dir)}`);
  const signer = loadSigningKey(keys.keyPath);
  const log = EvidenceLog.createNew(join(dir, CAPTURE_FILES.decisions));
  const checkpointer = new Checkpointer({
    file: EvidenceLog.createNew(join(dir, CAPTURE_FILES.checkpoints)),
    signer,
    eventSource: source,
    sessionId,
    every: CHECKPOINT_EVERY,
    seconds: CHECKPOINT_SECONDS_DEFAULT,
    scheduler: noTimers,
    onFailure: (message) => {
      throw new Error(message);
    },
  });
  const chain = new ChainedLog(log, CAPTURE_FILES.decisions, { count: 0, head: anchor }, () => checkpointer.noteWritten());
  checkpointer.add(chain);
  const recorder = new DecisionRecorder(chain, source, policyDigest, false);
  for (let seq = 0; seq < DECISIONS; seq++) {
    const pad = each + (extra-- > 0 ? 1 : 0);
    if (!recorder.record(sessionId, serverId, fields(seq, `allowed by policy ${"r".repeat(Math.max(0, pad - 18))}`.slice(0, pad)))) {
      throw new Error(`decision ${seq} not written: ${log.failure}`);
    }
  }
  // finish()'s order: the logs, then the checkpoints (no final one: the stop record covers the rest).
  log.close();
  checkpointer.close();
  if (log.bytesWritten > BOUNDS.decisionBytes) throw new Error(`decision log ${log.bytesWritten} B is over the bound`);

  const started = new Date(Date.now() - 60_000).toISOString();
  const context = contextEvent(source, {
    session_id: sessionId,
    server_id: serverId,
    server_pid: 4242,
    event_source: source,
    started_at: started,
    vigil_version: "0.1.0",
    command_sha256: "e".repeat(64),
    policy_digest: policyDigest,
    dry_run: false,
    protocol_version: "2025-11-25",
    client_info: { name: "bench", version: "1.0.0" },
    server_info: { name: "bench-server", version: "1.0.0" },
    outputs: { decision_log: "new", receipts: false, session_stop: true },
  });
  writeRecordFile(join(dir, CAPTURE_FILES.context), context);
  const stopData: StopDataV2 = {
    session_id: sessionId,
    server_id: serverId,
    server_pid: 4242,
    session_context_id: contextEventId(sessionId),
    session_end: "client_closed",
    status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null },
    kill_requested: false,
    decision_log: "complete",
    decision_events_written: log.written,
    decision_events_dropped: log.dropped,
    decision_prefix_sha256: log.prefixSha256(),
    receipts: null,
    counts: { client_messages: DECISIONS + 2, server_messages: DECISIONS + 1, rejected_frames: 0, server_garbage_lines: 0, oversized: 0 },
    chains: { [CAPTURE_FILES.decisions]: chain.head() },
    checkpoints: { written: checkpointer.written },
  };
  writeRecordFile(join(dir, CAPTURE_FILES.stop), stopEventV2(source, stopData));
  const manifest = buildManifest({
    dir,
    eventSource: source,
    serverId,
    sessionId,
    vigilVersion: "0.1.0",
    binarySha256,
    commandSha256: "e".repeat(64),
    policy: { digest: policyDigest, sha256_of_file: "a".repeat(64) },
  });
  writeRecordFile(join(dir, CAPTURE_FILES.manifest), manifest);
  // Last, as wrap's capture-envelope.ts: the statement over every other file of the capture that exists.
  const subjects: Record<string, string> = {};
  for (const name of Object.values(CAPTURE_FILES)) {
    if (name !== CAPTURE_FILES.envelope && existsSync(join(dir, name))) subjects[name] = sha256File(join(dir, name)).sha256;
  }
  const statement = wrapSessionStatement(subjects, { eventSource: source, policyDigest, version: "0.1.0", binarySha256, stop: stopData });
  writeRecordFile(join(dir, CAPTURE_FILES.envelope), signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement)), signer));

  const files = [...Object.keys(subjects), CAPTURE_FILES.envelope].map((n) => join(dir, n));
  return {
    dir,
    files,
    totalBytes: files.reduce((a, f) => a + statSync(f).size, 0),
    decisionBytes: log.bytesWritten,
    checkpoints: checkpointer.written,
  };
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Cmd {
  name: "verify" | "verifyKey" | "sha256" | "startup";
  argv: string[];
}

function run(argv: string[]): { ms: number; code: number | null; stdout: string; stderr: string } {
  const t0 = performance.now();
  const r = Bun.spawnSync(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: RUN_TIMEOUT_MS });
  const ms = performance.now() - t0;
  return { ms, code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Peak RSS in KiB: /usr/bin/time's %M, else polling VmHWM in /proc until the process exits. */
async function peakRssKiB(argv: string[]): Promise<number> {
  if (existsSync(TIME)) {
    const r = Bun.spawnSync([TIME, "-f", "%M", ...argv], { stdin: "ignore", stdout: "ignore", stderr: "pipe", timeout: RUN_TIMEOUT_MS });
    const last = r.stderr.toString().trim().split("\n").at(-1) ?? "";
    if (/^\d+$/.test(last)) return Number(last);
  }
  const p = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  let peak = 0;
  while (p.exitCode === null && p.signalCode === null) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, "utf8"));
      if (m) peak = Math.max(peak, Number(m[1]));
    } catch {
      break;
    }
    await Bun.sleep(1);
  }
  await p.exited;
  return peak;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (x: number, d = 1) => x.toFixed(d);
const range = (xs: number[], d = 1) => `${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)}`;

interface Timings {
  verify: number[];
  verifyKey: number[];
  sha256: number[];
  startup: number[];
}

function measureTimes(cmds: Cmd[], runs: number): Timings {
  const t: Timings = { verify: [], verifyKey: [], sha256: [], startup: [] };
  for (const c of cmds) run(c.argv); // warm the page cache and the binary
  for (let i = 0; i < runs; i++) {
    // Rotate the order so no command always runs first (or right after another).
    for (let k = 0; k < cmds.length; k++) {
      const c = cmds[(i + k) % cmds.length]!;
      const r = run(c.argv);
      if (r.code !== 0) throw new Error(`${c.name} exited ${r.code}: ${r.stderr}`);
      t[c.name].push(r.ms);
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// In-process phases of verify on the same capture

interface Phase {
  id: PhaseId;
  label: string;
  /** First call in a fresh process (what the CLI pays: it runs each once, cold). */
  cold: number;
  /** Median of the later calls in that process, each after a full GC. */
  warm: number;
}

// The phases follow the code path of a happy 10,000-line log: loadCapture reads each file into a
// buffer of its size + 1 and hashes it; checkLog splits the log into line subarrays, reuses the
// file's SHA-256 as the prefix digest (no partial tail), then per line forces a full collection
// every COLLECT_EVERY_LINES lines, passes the line's bytes to parseRecord (strict UTF-8 decode of
// that line, then the strict parse's fast path: key/depth scan + JSON.parse + key count) and checks
// its shape. The precise scanner only runs for lines the fast path refuses. The whole-path phases
// (endToEnd, verify) include the forced collections; `collect` times only those calls.
const PHASES = {
  endToEnd: "loadCapture + verifyCapture (all of verify's work)",
  load: "loadCapture: bounded reads + SHA-256 of every file",
  verify: "verifyCapture: every check (pure; includes the forced collections)",
  verifyKey: "verifyCapture with the trusted key (adds the signature, subjects, predicate and checkpoints)",
  split: "  splitNdjson (10,000 lines)",
  parse: "  parseRecord(line bytes) × 10,000 (strict UTF-8 decode + strict parse of each line)",
  decode: "    of which strict UTF-8 decode of one line × 10,000",
  strict: "    of which strict-JSON fast path (validateStrictJson) × 10,000",
  jsonParse: "      of which JSON.parse × 10,000",
  shape: "  record shape check (line-shapes) × 10,000",
  chain: "  recomputeChain: SHA-256 of each line (its chain) × 10,000",
  collect: `  forced collections: Bun.gc(true) every ${COLLECT_EVERY_LINES.toLocaleString("en")} lines (${COLLECTIONS} per pass)`,
  scanner: "  (precise scanner × 10,000: only for refused lines; for scale)",
} as const;
type PhaseId = keyof typeof PHASES;
const PHASE_REPS = 9;
const PHASE_PROCESSES = 5;

/**
 * One pass over the log as checkLog makes it: per line, a full collection at its cadence, then
 * parseRecord on the line's bytes and the shape check. Returns the milliseconds spent in the
 * collections alone.
 */
function checkLogPass(lines: Uint8Array[], collect: boolean): number {
  let gcMs = 0;
  for (let i = 0; i < lines.length; i++) {
    if (collect && i % COLLECT_EVERY_LINES === COLLECT_EVERY_LINES - 1) {
      const t0 = performance.now();
      Bun.gc(true);
      gcMs += performance.now() - t0;
    }
    const parsed = parseRecord(lines[i]!, "d", `line ${i + 1}: `);
    if (!parsed.ok) throw new Error(`line ${i + 1}: ${parsed.finding.message}`);
    shapeProblem(parsed.value, DECISION_LINE_V2);
  }
  return gcMs;
}

/** Phases whose body returns its own timed portion (ms) instead of being timed whole. */
const TIMED_INSIDE: ReadonlySet<PhaseId> = new Set(["collect"]);

/** The body of one phase on the capture in dir; set-up happens outside the returned function. */
function phaseBody(id: PhaseId, dir: string): () => unknown {
  const bytes = new Uint8Array(readFileSync(join(dir, CAPTURE_FILES.decisions)));
  const split = splitNdjson(bytes, BOUNDS.decisionLines)!;
  const needTexts = id === "strict" || id === "jsonParse" || id === "scanner" || id === "shape" || id === "chain";
  const texts = needTexts ? split.lines.map((l) => decodeUtf8Strict(l)!) : [];
  const values = id === "shape" || id === "chain" ? texts.map((t) => JSON.parse(t)) : [];
  const links = id === "chain" ? split.lines.map((l, i) => linkOf(l, values[i])) : [];
  const input = id === "verify" || id === "verifyKey" ? loadCapture(dir) : null;
  const trusted = id === "verifyKey" ? [loadPublicKey(pubOf(dir))] : [];
  switch (id) {
    case "endToEnd":
      return () => verifyCapture(loadCapture(dir), { requireReceipts: false });
    case "load":
      return () => loadCapture(dir);
    case "verify":
      return () => verifyCapture(input!, { requireReceipts: false });
    case "verifyKey":
      return () => verifyCapture(input!, { requireReceipts: false, trusted });
    case "chain": {
      const anchor = chainAnchor("vigil://bench/verify", "b".repeat(32), CAPTURE_FILES.decisions);
      return () => recomputeChain(links, anchor);
    }
    case "split":
      return () => splitNdjson(bytes, BOUNDS.decisionLines);
    case "parse":
      return () => {
        for (const line of split.lines) parseRecord(line, "d");
      };
    case "decode":
      return () => {
        for (const line of split.lines) decodeUtf8Strict(line);
      };
    case "strict":
      return () => {
        for (const t of texts) validateStrictJson(t, { maxDepth: 32 });
      };
    case "jsonParse":
      return () => {
        for (const t of texts) JSON.parse(t);
      };
    case "shape":
      return () => {
        for (const x of values) shapeProblem(x, DECISION_LINE_V2);
      };
    case "collect":
      return () => checkLogPass(split.lines, true);
    case "scanner":
      return () => {
        for (const t of texts) scanStrictJson(t, 32);
      };
  }
}

function vmHwmKiB(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) : Number.NaN;
}

/** Child mode (`--phase ID --dir DIR`): times one phase in this fresh process, prints {cold, warm}. */
function phaseChild(id: PhaseId, dir: string): void {
  const fn = phaseBody(id, dir);
  const times: number[] = [];
  for (let i = 0; i < PHASE_REPS; i++) {
    Bun.gc(true);
    const t0 = performance.now();
    const out = fn();
    times.push(TIMED_INSIDE.has(id) ? (out as number) : performance.now() - t0);
  }
  process.stdout.write(JSON.stringify({ cold: times[0], warm: median(times.slice(1)) }));
}

// Memory: peak RSS of fresh processes that each run verify's path up to a stage (cumulative), so
// the differences between stages say what each step adds. (VmHWM growth inside one process would
// not: freed memory is reused without raising the high-water mark.) `from` is the row a stage's
// "added" figure is taken against.
const MEM_STAGES = {
  base: { label: "modules loaded, nothing read", from: null },
  load: { label: "+ loadCapture (bounded reads, SHA-256 of every file)", from: "base" },
  split: { label: "+ splitNdjson (line subarrays of the log's bytes)", from: "load" },
  parse: { label: `+ per line: parseRecord on its bytes + shape check; Bun.gc(true) every ${COLLECT_EVERY_LINES.toLocaleString("en")} lines (as checkLog)`, from: "split" },
  parseNoCollect: { label: "the same without the forced collections (for comparison)", from: "split" },
  verify: { label: "loadCapture + verifyCapture (all of verify)", from: "base" },
} as const satisfies Record<string, { label: string; from: string | null }>;
type MemStage = keyof typeof MEM_STAGES;

function memChild(stage: MemStage, dir: string): void {
  if (stage !== "base") {
    const input = loadCapture(dir);
    if (stage === "verify") verifyCapture(input, { requireReceipts: false });
    else if (stage !== "load") {
      const state = input.files[CAPTURE_FILES.decisions];
      if (state.kind !== "read") throw new Error("decisions.ndjson not read");
      const split = splitNdjson(state.bytes, BOUNDS.decisionLines)!;
      if (stage === "parse" || stage === "parseNoCollect") checkLogPass(split.lines, stage === "parse");
      if (split.lines.length !== DECISIONS) throw new Error(`${split.lines.length} lines`);
    }
  }
  process.stdout.write(String(vmHwmKiB()));
}

function memProfile(cap: BenchCapture): { stage: MemStage; label: string; mib: number }[] {
  const stages = Object.keys(MEM_STAGES) as MemStage[];
  const got = new Map<MemStage, number[]>();
  for (let round = 0; round < PHASE_PROCESSES; round++) {
    for (const stage of stages) {
      const r = run([process.execPath, import.meta.path, "--mem", stage, "--dir", cap.dir]);
      if (r.code !== 0) throw new Error(`memory stage ${stage} failed: ${r.stderr}`);
      got.set(stage, [...(got.get(stage) ?? []), Number(r.stdout) / 1024]);
    }
  }
  return stages.map((stage) => ({ stage, label: MEM_STAGES[stage].label, mib: median(got.get(stage)!) }));
}

/** Each phase in PHASE_PROCESSES fresh processes (interleaved); medians of their figures. */
function profile(cap: BenchCapture): Phase[] {
  const got = new Map<PhaseId, { cold: number[]; warm: number[] }>();
  const ids = Object.keys(PHASES) as PhaseId[];
  for (let round = 0; round < PHASE_PROCESSES; round++) {
    for (const id of ids) {
      const r = run([process.execPath, import.meta.path, "--phase", id, "--dir", cap.dir]);
      if (r.code !== 0) throw new Error(`phase ${id} failed: ${r.stderr}`);
      const { cold, warm } = JSON.parse(r.stdout) as { cold: number; warm: number };
      const g = got.get(id) ?? { cold: [], warm: [] };
      g.cold.push(cold);
      g.warm.push(warm);
      got.set(id, g);
    }
  }
  return ids.map((id) => {
    const g = got.get(id)!;
    return { id, label: PHASES[id], cold: median(g.cold), warm: median(g.warm) };
  });
}

// ---------------------------------------------------------------------------------------------
// Report

const load1 = () => loadavg()[0]!.toFixed(2);

interface Results {
  date: string;
  machine: string;
  runs: number;
  cap: BenchCapture;
  t: Timings;
  rss: { verify: number[]; verifyKey: number[]; sha256: number[]; startup: number[] };
  phases: Phase[];
  mem: { stage: MemStage; label: string; mib: number }[];
  seconds: number;
  load: [string, string];
}

function render(r: Results): { section: string; met: boolean } {
  const mv = median(r.t.verify);
  const mk = median(r.t.verifyKey);
  const keyRatio = mk / mv;
  const keyMet = keyRatio <= 1.2;
  const ms = median(r.t.sha256);
  const mst = median(r.t.startup);
  const floor = ms + mst;
  const ratio = mv / floor;
  const rssV = median(r.rss.verify) / 1024;
  const rssStart = median(r.rss.startup) / 1024;
  const capMiB = r.cap.totalBytes / MiB;
  const timeMet = ratio <= 2;
  const memAbsMet = rssV < 4 * capMiB;
  const memAddedMet = rssV - rssStart < 4 * capMiB;
  const mark = (ok: boolean) => (ok ? "met" : "**missed**");
  const L: string[] = [];
  L.push(`<!-- bench:verify start (generated by bun bench/verify/run.ts --write; replaced on the next run) -->`);
  L.push(`## verify — ${r.date}`);
  L.push("");
  L.push(`Machine: ${r.machine}.`);
  L.push(
    `Run: \`bun bench/verify/run.ts --write\`, ${r.runs} runs per command after one warm-up, commands interleaved in rotating order, medians reported (range in parentheses); ${fmt(r.seconds, 0)} s; 1-min load average ${r.load[0]} at start, ${r.load[1]} at end.`,
  );
  L.push("");
  L.push(
    `Capture (vigil.capture.v2, signed): ${DECISIONS.toLocaleString("en")} chained decisions, decisions.ndjson ${r.cap.decisionBytes.toLocaleString("en")} B (${fmt(r.cap.decisionBytes / MiB, 3)} MiB, bound 8 MiB), ` +
      `with session-context, session-stop (v2), ${r.cap.checkpoints} signed checkpoints (one per ${CHECKPOINT_EVERY.toLocaleString("en")} records), capture.json and capture.dsse.json: ${r.cap.totalBytes.toLocaleString("en")} B in all; receipts omitted; written through the producer's own code (DecisionRecorder → ChainedLog → Checkpointer, stopEventV2, buildManifest, the wrap statement + signEnvelope); verify says \`closed\`, 10,000 verified, and authenticated with \`--public-key\`.`,
  );
  L.push("");
  L.push("**Wall time per command (ms)**");
  L.push("");
  L.push("| command | median | range | peak RSS (MiB) |");
  L.push("| --- | ---: | ---: | ---: |");
  L.push(`| \`dist/vigil verify DIR\` | ${fmt(mv)} | ${range(r.t.verify)} | ${fmt(rssV)} |`);
  L.push(`| \`dist/vigil verify DIR --public-key PUB\` | ${fmt(mk)} | ${range(r.t.verifyKey)} | ${fmt(median(r.rss.verifyKey) / 1024)} |`);
  L.push(`| \`sha256sum\` of the same ${r.cap.files.length} files | ${fmt(ms)} | ${range(r.t.sha256)} | ${fmt(median(r.rss.sha256) / 1024)} |`);
  L.push(`| \`dist/vigil --version\` (start-up) | ${fmt(mst)} | ${range(r.t.startup)} | ${fmt(rssStart)} |`);
  L.push(`| floor = start-up + sha256sum | ${fmt(floor)} | | |`);
  L.push(`| verify − start-up (the work itself) | ${fmt(mv - mst)} | | ${fmt(rssV - rssStart)} added |`);
  L.push("");
  L.push("**Targets (verify.md \"Performance\")**");
  L.push("");
  L.push("| target | measured | result |");
  L.push("| --- | ---: | ---: |");
  L.push(`| verify ≤ 2 × floor (start-up + sha256sum) | ${fmt(ratio, 2)} × (${fmt(mv)} / ${fmt(floor)} ms) | ${mark(timeMet)} |`);
  L.push(`| verify with a key ≤ 1.2 × verify without (issue 14) | ${fmt(keyRatio, 2)} × (${fmt(mk)} / ${fmt(mv)} ms) | ${mark(keyMet)} |`);
  L.push(
    `| peak RSS < 4 × capture size (${fmt(4 * capMiB, 1)} MiB), absolute | ${fmt(rssV)} MiB = ${fmt(rssV / capMiB, 2)} × | ${mark(memAbsMet)} |`,
  );
  L.push(
    `| peak RSS < 4 × capture size, above the runtime's own start-up RSS (${fmt(rssStart)} MiB) | ${fmt(rssV - rssStart)} MiB = ${fmt((rssV - rssStart) / capMiB, 2)} × | ${mark(memAddedMet)} |`,
  );
  L.push("");
  L.push(
    `**Where the time goes: verify's phases in process on the same capture (ms). Each phase runs in ${PHASE_PROCESSES} fresh \`bun\` processes (from source, same code as the binary); \`cold\` = its first call there (what the CLI pays), \`warm\` = median of the next ${PHASE_REPS - 1}, each after a full GC; medians over the processes.**`,
  );
  L.push("");
  L.push("| phase | cold | warm |");
  L.push("| --- | ---: | ---: |");
  for (const p of r.phases) L.push(`| ${p.label.replace(/^( +)/, (s) => "&nbsp;".repeat(s.length * 2))} | ${fmt(p.cold)} | ${fmt(p.warm)} |`);
  L.push("");
  L.push(
    `**Where the memory goes: peak RSS of fresh \`bun\` processes that each run verify's path up to a stage (median of ${PHASE_PROCESSES}); each row adds to the one above it, except where the added column names its reference**`,
  );
  L.push("");
  L.push("| stage | peak RSS (MiB) | added (MiB) |");
  L.push("| --- | ---: | ---: |");
  for (const x of r.mem) {
    const from = MEM_STAGES[x.stage].from;
    const prev = from === null ? undefined : r.mem.find((y) => y.stage === from)!;
    const over = from === null ? "" : x.stage === "verify" ? " over modules loaded" : x.stage === "parseNoCollect" ? " over the split" : "";
    const added = prev ? x.mib - prev.mib : 0;
    L.push(`| ${x.label} | ${fmt(x.mib)} | ${prev ? `${added < 0 ? "−" : "+"}${fmt(Math.abs(added))}${over}` : "—"} |`);
  }
  L.push("");
  L.push(...analysis(r, { mv, mst, ms, floor, ratio, rssV, rssStart, capMiB, timeMet, memAbsMet, memAddedMet }));
  L.push("");
  L.push(`<!-- bench:verify end -->`);
  return { section: L.join("\n"), met: timeMet && memAddedMet && keyMet };
}

const signedMs = (x: number) => `${x < 0 ? "−" : "+"}${fmt(Math.abs(x))}`;

function analysis(
  r: Results,
  m: { mv: number; mst: number; ms: number; floor: number; ratio: number; rssV: number; rssStart: number; capMiB: number; timeMet: boolean; memAbsMet: boolean; memAddedMet: boolean },
): string[] {
  const p = (id: PhaseId) => r.phases.find((x) => x.id === id)!;
  const mem = (stage: MemStage) => r.mem.find((x) => x.stage === stage)!.mib;
  const L: string[] = [];
  L.push("Reading the numbers:");
  L.push("");
  L.push(
    `- verify spends ${fmt(m.mv - m.mst)} ms beyond start-up, where sha256sum needs ${fmt(m.ms)} ms for the same bytes. In process its work costs ${fmt(p("endToEnd").cold)} ms cold (${fmt(p("endToEnd").warm)} ms warm): reading and hashing the files (loadCapture) ${fmt(p("load").cold)} ms, the checks (verifyCapture, forced collections included) ${fmt(p("verify").cold)} ms.`,
  );
  L.push(
    `- Inside the checks: parseRecord on each line's bytes ${fmt(p("parse").cold)} ms cold for 10,000 lines (measured separately: the strict UTF-8 decode of each line ${fmt(p("decode").cold)} ms, the strict-JSON fast path ${fmt(p("strict").cold)} ms, of which JSON.parse ${fmt(p("jsonParse").cold)} ms), the shape check ${fmt(p("shape").cold)} ms, the ${COLLECTIONS} forced collections ${fmt(p("collect").cold)} ms in all, the split ${fmt(p("split").cold)} ms. The precise scanner (${fmt(p("scanner").cold)} ms for 10,000 lines) runs only for lines the fast path refuses, so a hostile log of refused lines costs about that much more.`,
  );
  const mk = median(r.t.verifyKey);
  L.push(
    `- With \`--public-key\`: ${fmt(mk)} ms, ${signedMs(mk - m.mv)} ms over verify without a key (${fmt(mk / m.mv, 2)} ×). In process, verifyCapture with the trusted key costs ${fmt(p("verifyKey").cold)} ms cold against ${fmt(p("verify").cold)} ms without (${signedMs(p("verifyKey").cold - p("verify").cold)} ms: the envelope's Ed25519 signature, the statement's subjects against the digests loadCapture already took, the predicate, and ${r.cap.checkpoints} signed checkpoints). The chain itself is checked with or without a key: recomputeChain (a SHA-256 of each line) ${fmt(p("chain").cold)} ms cold — what a v2 capture costs verify over a v1 one.`,
  );
  if (!m.timeMet) {
    const ranked = (["load", "parse", "shape", "chain", "collect", "split"] as PhaseId[]).map((id) => p(id)).sort((a, b) => b.cold - a.cold);
    L.push(`- Time target missed. Largest phases, cold: ${ranked.slice(0, 3).map((x) => `${x.label.trim()} ${fmt(x.cold)} ms`).join("; ")}.`);
  }
  if (!m.memAbsMet) {
    L.push(
      `- Absolute peak RSS (${fmt(m.rssV)} MiB) cannot meet 4 × ${fmt(m.capMiB, 1)} MiB on this runtime: the compiled binary alone peaks at ${fmt(m.rssStart)} MiB for \`--version\`. The meaningful figure is what verify adds above that: ${fmt(m.rssV - m.rssStart)} MiB (${fmt((m.rssV - m.rssStart) / m.capMiB, 2)} × the capture, ${m.memAddedMet ? "under" : "at or over"} 4 ×).`,
    );
  }
  L.push(
    `- ${m.memAddedMet ? "Where" : "Memory above the start-up baseline is over 4 ×. Where"} the memory goes (the stage table, from source): loadCapture ${signedMs(mem("load") - mem("base"))} MiB for ${fmt(m.capMiB, 1)} MiB of capture, the split ${signedMs(mem("split") - mem("load"))} MiB, decoding and parsing every line with the forced collections ${signedMs(mem("parse") - mem("split"))} MiB (${signedMs(mem("parseNoCollect") - mem("split"))} MiB without them); all of verify ${signedMs(mem("verify") - mem("base"))} MiB over modules loaded.`,
  );
  return L;
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--mem") {
    const stage = argv[1] as MemStage;
    if (!(stage in MEM_STAGES) || argv[2] !== "--dir" || !argv[3]) throw new Error("usage: --mem STAGE --dir DIR");
    memChild(stage, argv[3]);
    return;
  }
  if (argv[0] === "--phase") {
    const id = argv[1] as PhaseId;
    if (!(id in PHASES) || argv[2] !== "--dir" || !argv[3]) throw new Error("usage: --phase ID --dir DIR");
    phaseChild(id, argv[3]);
    return;
  }
  const c = parseArgs(argv);
  if (!vigilPresent()) process.exit(1);
  if (!existsSync("/usr/bin/sha256sum") && Bun.which("sha256sum") === null) throw new Error("sha256sum is required");
  const started = performance.now();
  const loadStart = load1();
  const tmp = mkdtempSync(join(tmpdir(), "vigil-bench-verify-"));
  const dir = join(tmp, "capture");
  mkdirSync(dir, { mode: 0o700 });
  try {
    const cap = buildCapture(dir);
    for (const withKey of [false, true]) {
      const check = run([VIGIL, "verify", dir, "--json", ...(withKey ? ["--public-key", pubOf(dir)] : [])]);
      const doc = JSON.parse(check.stdout || "null");
      if (check.code !== 0 || doc?.verdict !== "closed" || doc?.decisions?.verified !== DECISIONS || doc?.authentication?.authenticated !== withKey) {
        throw new Error(`the generated capture does not verify closed${withKey ? " and authenticated" : ""} (exit ${check.code}): ${check.stdout}${check.stderr}`);
      }
    }
    process.stderr.write(`capture: ${cap.totalBytes} B in ${dir}; ${c.runs} runs per command…\n`);
    const cmds: Cmd[] = [
      { name: "verify", argv: [VIGIL, "verify", dir] },
      { name: "verifyKey", argv: [VIGIL, "verify", dir, "--public-key", pubOf(dir)] },
      { name: "sha256", argv: [Bun.which("sha256sum") ?? "/usr/bin/sha256sum", ...cap.files] },
      { name: "startup", argv: [VIGIL, "--version"] },
    ];
    const t = measureTimes(cmds, c.runs);
    const rss = { verify: [] as number[], verifyKey: [] as number[], sha256: [] as number[], startup: [] as number[] };
    for (let i = 0; i < c.runs; i++) for (const cmd of cmds) rss[cmd.name].push(await peakRssKiB(cmd.argv));
    process.stderr.write("profiling the phases in process…\n");
    const phases = profile(cap);
    const mem = memProfile(cap);
    const results: Results = {
      date: new Date().toISOString().slice(0, 10),
      machine: machine(),
      runs: c.runs,
      cap,
      t,
      rss,
      phases,
      mem,
      seconds: (performance.now() - started) / 1000,
      load: [loadStart, load1()],
    };
    const { section, met } = render(results);
    process.stdout.write(`${section}\n`);
    if (c.write) {
      writeResultsSection("verify", section);
      process.stderr.write(`written: ${RESULTS} (## verify)\n`);
    }
    process.stderr.write(`targets ${met ? "met" : "missed"}\n`);
    if (c.keep) process.stderr.write(`kept: ${dir}\n`);
  } finally {
    if (!c.keep) rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
