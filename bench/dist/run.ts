/**
 * Distribution benchmark: what an operator downloads and how fast it starts.
 *
 *   bun bench/dist/run.ts [--write] [--runs N] [--dist DIR]
 *
 *   --dist DIR  measure an existing release build (vigil-* + SHA256SUMS, e.g. from `make dist`);
 *               default: build every target with scripts/build.ts --all into bench/.out/dist
 *   --runs N    start-up runs per command (default 40, after 5 warm-up runs each)
 *   --write     add or replace the dist section of bench/RESULTS.md
 *
 * Sizes: every target's binary, the bare Bun runtime it was built from (the npm package's
 * bin/bun, cached in .tools/targets) and the difference (vigil's bundle plus the standalone
 * module graph), and its gzip -6 size for reference (the assets are served uncompressed).
 *
 * Start-up, in the same run, interleaved in rotating order, medians reported:
 *   `bun --version`        the Bun executable that built vigil: prints and exits before any JS
 *                          engine work, the floor of exec-ing a ~100 MB executable
 *   `hello --version`      a one-line program compiled exactly like vigil (same runtime, same
 *                          flags): the floor of a Bun standalone executable
 *   `vigil --version`      this machine's release binary
 *   bytecode build         the same source compiled with bytecode (not shipped), for comparison
 * Wall time is measured around spawn→exit; CPU time and peak RSS come from the child's rusage.
 * Numbers are measured, never asserted in tests.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, release } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { writeResultsSection } from "../results-file.ts";

const ROOT = resolve(import.meta.dir, "../..");
const RESULTS = join(ROOT, "bench/RESULTS.md");
const OUT = join(ROOT, "bench/.out");
const RUNTIMES = resolve(process.env.VIGIL_BUN_RUNTIMES ?? join(ROOT, ".tools/targets"));
const TARGETS = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-x64", "darwin-arm64"];

interface Config {
  write: boolean;
  runs: number;
  dist: string | null;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: bun bench/dist/run.ts [--write] [--runs N] [--dist DIR]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): Config {
  const c: Config = { write: false, runs: 40, dist: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--write") c.write = true;
    else if (a === "--runs") {
      c.runs = Number(argv[++i]);
      if (!Number.isInteger(c.runs) || c.runs < 5) usage("--runs needs an integer ≥ 5");
    } else if (a === "--dist") {
      const d = argv[++i];
      if (!d) usage("--dist needs a directory");
      c.dist = resolve(d);
    } else usage(`unknown argument ${a}`);
  }
  return c;
}

function hostTarget(): string | null {
  const os = process.platform === "linux" ? "linux" : process.platform === "darwin" ? "darwin" : null;
  const arch = process.arch === "x64" ? "x64" : process.arch === "arm64" ? "arm64" : null;
  if (!os || !arch) return null;
  if (os === "linux") {
    const ldd = Bun.spawnSync(["sh", "-c", "ldd --version 2>&1"], { stderr: "ignore" });
    if (ldd.stdout.toString().includes("musl")) return `${os}-${arch}-musl`;
  }
  return `${os}-${arch}`;
}

function mustRun(argv: string[]): string {
  const r = Bun.spawnSync(argv, { cwd: ROOT, stdout: "pipe", stderr: "pipe", timeout: 600_000 });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} failed (${r.exitCode}):\n${r.stderr.toString()}`);
  return r.stderr.toString();
}

// ---------------------------------------------------------------------------------------------
// Sizes

interface SizeRow {
  target: string;
  binary: number;
  runtime: number | null;
  gzip: number;
}

function sizes(dist: string): SizeRow[] {
  const rows: SizeRow[] = [];
  for (const t of TARGETS) {
    const f = join(dist, `vigil-${t}`);
    if (!existsSync(f)) throw new Error(`${f} is missing (build every target: make dist, or omit --dist)`);
    const rt = join(RUNTIMES, `bun-${t}-v${Bun.version}`);
    const bytes = readFileSync(f);
    rows.push({ target: t, binary: bytes.length, runtime: existsSync(rt) ? statSync(rt).size : null, gzip: Bun.gzipSync(bytes, { level: 6 }).length });
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Start-up

interface Sample {
  wallMs: number;
  cpuMs: number;
}

interface Command {
  name: string;
  argv: string[];
  expect: string;
  samples: Sample[];
  rss: number[];
}

function once(c: Command): Sample {
  const t0 = performance.now();
  const r = Bun.spawnSync(c.argv, { stdout: "pipe", stderr: "pipe", timeout: 10_000 });
  const wallMs = performance.now() - t0;
  if (r.exitCode !== 0) throw new Error(`${c.argv.join(" ")} exited ${r.exitCode}: ${r.stderr.toString()}`);
  const out = r.stdout.toString().trim();
  if (out !== c.expect) throw new Error(`${c.argv.join(" ")} printed ${JSON.stringify(out)}, expected ${JSON.stringify(c.expect)}`);
  const ru = r.resourceUsage;
  return { wallMs, cpuMs: ru ? Number(ru.cpuTime.total) / 1000 : Number.NaN };
}

const TIME = "/usr/bin/time";

/** Peak RSS in bytes from /usr/bin/time's %M (a separate run: rusage maxRSS of a spawnSync child
 * is not per-child here), or NaN without /usr/bin/time. */
function peakRss(c: Command): number {
  if (!existsSync(TIME)) return Number.NaN;
  const r = Bun.spawnSync([TIME, "-f", "%M", ...c.argv], { stdout: "ignore", stderr: "pipe", timeout: 10_000 });
  const kib = Number(r.stderr.toString().trim().split("\n").at(-1));
  return r.exitCode === 0 && Number.isFinite(kib) ? kib * 1024 : Number.NaN;
}

function startup(commands: Command[], runs: number): void {
  for (const c of commands) for (let i = 0; i < 5; i++) once(c);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < commands.length; k++) {
      const c = commands[(i + k) % commands.length]!;
      c.samples.push(once(c));
    }
  }
  for (const c of commands) for (let i = 0; i < 5; i++) c.rss.push(peakRss(c));
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
};
const median = (xs: number[]) => quantile(xs, 0.5);
const mib = (b: number) => (b / 2 ** 20).toFixed(1);

// ---------------------------------------------------------------------------------------------
// Report

function machine(): string {
  let cpu = "unknown";
  try {
    cpu = /^model name\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim() ?? cpu;
  } catch {
    // no /proc/cpuinfo
  }
  return `${availableParallelism()} CPUs (nproc), ${cpu}, ${process.platform} ${release()}, Bun ${Bun.version}`;
}

function table(headers: string[], rows: string[][], align: ("l" | "r")[]): string {
  const sep = align.map((a) => (a === "r" ? "---:" : "---"));
  return [headers, sep, ...rows].map((r) => `| ${r.join(" | ")} |`).join("\n");
}

function render(c: Config, dist: string, host: string, size: SizeRow[], cmds: Command[], seconds: number, commit: string, bytecodeSize: number, bundleSize: number): string {
  const sizeRows = size.map((r) => [
    `vigil-${r.target}`,
    `${mib(r.binary)} MiB (${r.binary.toLocaleString("en-US")} B)`,
    r.runtime === null ? "—" : `${mib(r.runtime)} MiB`,
    r.runtime === null ? "—" : `+${((r.binary - r.runtime) / 2 ** 20).toFixed(2)} MiB`,
    `${mib(r.gzip)} MiB`,
  ]);
  const bun = cmds[0]!;
  const startRows = cmds.map((cmd) => {
    const w = cmd.samples.map((s) => s.wallMs);
    const delta = median(w) - median(bun.samples.map((s) => s.wallMs));
    return [
      `\`${cmd.name}\``,
      median(w).toFixed(1),
      `${quantile(w, 0.1).toFixed(1)}–${quantile(w, 0.9).toFixed(1)}`,
      median(cmd.samples.map((s) => s.cpuMs)).toFixed(1),
      Number.isNaN(median(cmd.rss)) ? "—" : mib(median(cmd.rss)),
      cmd === bun ? "—" : `+${delta.toFixed(1)}`,
    ];
  });
  return [
    "<!-- bench:dist start (generated by bun bench/dist/run.ts --write; replaced on the next run) -->",
    `## ${new Date().toISOString().slice(0, 10)} — distribution: binary size and start-up`,
    "",
    `Machine: ${machine()}. vigil ${pkg.version} (${commit}), built by \`scripts/build.ts --all\` (minified, runtimes from npm \`@oven/bun-*@${Bun.version}\`)${c.dist ? ` in ${dist}` : ""}.`,
    `Run: \`bun bench/dist/run.ts ${process.argv.slice(2).join(" ")}\`; ${c.runs} start-up runs per command after 5 warm-up runs, interleaved in rotating order; ${seconds.toFixed(0)} s.`,
    "",
    "**Binary size per target** (runtime = the bare `bin/bun` of the npm package the target was built from; gzip -6 for reference only, assets are served uncompressed)",
    "",
    table(["asset", "size", "runtime", "vigil over runtime", "gzip -6"], sizeRows, ["l", "r", "r", "r", "r"]),
    "",
    `The minified bundle itself is ${(bundleSize / 2 ** 20).toFixed(2)} MiB; the rest of "over runtime" is executable layout (Linux: the appended \`.bun\` section is page-aligned after the runtime's sections; macOS: the \`__BUN\` segment grows in place and the runtime's signature is replaced by an ad-hoc one).`,
    "",
    `**Start-up on this machine (${host})**: wall ms from spawn to exit (median, p10–p90), CPU = user+sys ms (median), peak RSS (median of 5 runs under /usr/bin/time)`,
    "",
    table(["command", "wall ms", "p10–p90", "CPU ms", "RSS MiB", "over bun --version"], startRows, ["l", "r", "r", "r", "r", "r"]),
    "",
    "`bun --version` exits before the JS engine starts; `hello --version` is a one-line program compiled like vigil (the standalone-executable floor); the gap from hello to vigil is loading vigil's own bundle. " +
      `The bytecode row is the same source compiled with \`bytecode: true, format: "esm"\` (${mib(bytecodeSize)} MiB for ${host}, vs ${mib(size.find((r) => r.target === host)?.binary ?? 0)} MiB): not what \`make dist\` ships, measured to size the opportunity.`,
    "",
    "<!-- bench:dist end -->",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

const c = parseArgs(process.argv.slice(2));
const t0 = performance.now();
const host = hostTarget();
if (!host) usage(`${process.platform}-${process.arch} is not a release target; nothing to start`);

let dist = c.dist;
if (!dist) {
  dist = join(OUT, "dist");
  process.stderr.write(`bench/dist: building every target into ${dist}\n`);
  mustRun([process.execPath, join(ROOT, "scripts/build.ts"), "--all", "--outdir", dist]);
}
const info = existsSync(join(dist, "BUILD-INFO.json")) ? (JSON.parse(readFileSync(join(dist, "BUILD-INFO.json"), "utf8")) as { commit?: string }) : {};

// The standalone floor: a one-liner compiled with the same options as vigil.
const helloDir = join(OUT, "hello");
rmSync(helloDir, { recursive: true, force: true });
mkdirSync(helloDir, { recursive: true });
writeFileSync(join(helloDir, "hello.ts"), `console.log(${JSON.stringify(pkg.version)});\n`);
const hello = await Bun.build({
  entrypoints: [join(helloDir, "hello.ts")],
  minify: true,
  compile: { outfile: join(helloDir, "hello"), autoloadDotenv: false, autoloadBunfig: false },
});
if (!hello.success) throw new Error(hello.logs.map(String).join("\n"));

// Not shipped, for comparison: vigil compiled for this machine with bytecode (--bytecode, ESM),
// which skips parsing the bundle at start-up. Same source, defines and flags otherwise.
const bytecodeOut = join(helloDir, "vigil-bytecode");
const bc = await Bun.build({
  entrypoints: [join(ROOT, "src/cli.ts")],
  minify: true,
  sourcemap: "none",
  bytecode: true,
  format: "esm",
  define: { VIGIL_VERSION: JSON.stringify(pkg.version), VIGIL_COMMIT: JSON.stringify(info.commit ?? "unknown"), VIGIL_RELEASE: "true" },
  compile: { outfile: bytecodeOut, autoloadDotenv: false, autoloadBunfig: false },
});
if (!bc.success) throw new Error(bc.logs.map(String).join("\n"));
const bytecodeSize = statSync(bytecodeOut).size;

// The minified bundle alone (what the compile step embeds), to read the size table against.
const bundle = await Bun.build({
  entrypoints: [join(ROOT, "src/cli.ts")],
  minify: true,
  sourcemap: "none",
  target: "bun",
  outdir: join(helloDir, "bundle"),
  define: { VIGIL_VERSION: JSON.stringify(pkg.version), VIGIL_COMMIT: JSON.stringify(info.commit ?? "unknown"), VIGIL_RELEASE: "true" },
});
if (!bundle.success) throw new Error(bundle.logs.map(String).join("\n"));
const bundleSize = bundle.outputs.reduce((n, o) => n + o.size, 0);

const commands: Command[] = [
  { name: "bun --version", argv: [process.execPath, "--version"], expect: Bun.version, samples: [], rss: [] },
  { name: "hello --version", argv: [join(helloDir, "hello"), "--version"], expect: pkg.version, samples: [], rss: [] },
  { name: `vigil --version (vigil-${host})`, argv: [join(dist, `vigil-${host}`), "--version"], expect: pkg.version, samples: [], rss: [] },
  { name: "vigil --version (bytecode build, not shipped)", argv: [bytecodeOut, "--version"], expect: pkg.version, samples: [], rss: [] },
];
const size = sizes(dist);
startup(commands, c.runs);
const seconds = (performance.now() - t0) / 1000;
const section = render(c, dist, host, size, commands, seconds, info.commit ?? "unknown", bytecodeSize, bundleSize);
process.stdout.write(`${section}\n`);
if (c.write) {
  writeResultsSection("dist", section);
  process.stdout.write(`written: ${RESULTS} (dist section)\n`);
}
