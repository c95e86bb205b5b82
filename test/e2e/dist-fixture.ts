/**
 * Helpers for the distribution tests (install.test.ts, build-targets.test.ts): cross-compiling
 * release targets with scripts/build.ts into a temporary directory, reading executable headers,
 * running shell scripts with a bounded wait, and PATH shim directories (fake `uname`, hidden tools).
 *
 * The target runtimes come from the npm registry through scripts/build.ts and are cached in
 * .tools/targets (shared with `make dist`), so only the first run downloads them.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };

export const ROOT = resolve(import.meta.dir, "../..");
export const BUILD_SCRIPT = join(ROOT, "scripts/build.ts");
export const INSTALL_SCRIPT = join(ROOT, "scripts/install.sh");
export const RELEASE_SCRIPT = join(ROOT, "scripts/release.sh");
export const VERSION: string = pkg.version;

/** Generous: the first run downloads two ~50 MB runtimes from npm. */
export const BUILD_TIMEOUT_MS = 240_000;

export interface RunResult {
  code: number | null;
  signal: string | number | null;
  stdout: string;
  stderr: string;
}

/** Runs argv to completion (asynchronously, so an in-process Bun.serve keeps answering). */
export async function run(
  argv: string[],
  opts: { env?: Record<string, string | undefined>; cwd?: string; stdin?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const proc = Bun.spawn(argv, {
    cwd: opts.cwd ?? ROOT,
    env: opts.env ?? (process.env as Record<string, string | undefined>),
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
    stdout: "pipe",
    stderr: "pipe",
    timeout: opts.timeoutMs ?? 60_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { code: proc.exitCode, signal: proc.signalCode ?? null, stdout, stderr };
}

/** `bun scripts/build.ts --targets … --outdir DIR` */
export function buildTargets(targets: string[], outdir: string, extra: string[] = []): Promise<RunResult> {
  return run([process.execPath, BUILD_SCRIPT, "--targets", targets.join(","), "--outdir", outdir, ...extra], {
    timeoutMs: BUILD_TIMEOUT_MS,
  });
}

export function tmp(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `vigil-${prefix}-`));
}

/** The release target this machine runs, or null when it is not one vigil ships. */
export function hostTarget(): string | null {
  const os = process.platform === "linux" ? "linux" : process.platform === "darwin" ? "darwin" : null;
  const arch = process.arch === "x64" ? "x64" : process.arch === "arm64" ? "arm64" : null;
  if (!os || !arch) return null;
  if (os === "darwin") return `${os}-${arch}`;
  const ldd = Bun.spawnSync(["sh", "-c", "ldd --version 2>&1"], { stderr: "ignore" });
  return ldd.stdout.toString().includes("musl") ? `${os}-${arch}-musl` : `${os}-${arch}`;
}

/** A Linux target of another machine type, which cannot run here. */
export function foreignTarget(host: string): string {
  return host.startsWith("linux-arm64") ? "linux-x64" : "linux-arm64";
}

export interface ElfInfo {
  elfClass: number;
  data: number;
  type: number;
  machine: number;
  interpreter: string;
}

export function elfInfo(file: string): ElfInfo {
  const b = readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file} is not ELF`);
  const phoff = Number(b.readBigUInt64LE(32));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  let interpreter = "";
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (b.readUInt32LE(o) !== 3) continue; // PT_INTERP
    const off = Number(b.readBigUInt64LE(o + 8));
    const size = Number(b.readBigUInt64LE(o + 32));
    interpreter = b.toString("latin1", off, off + size).replace(/\0+$/, "");
  }
  return { elfClass: b[4]!, data: b[5]!, type: b.readUInt16LE(16), machine: b.readUInt16LE(18), interpreter };
}

export function sha256File(file: string): string {
  return new Bun.CryptoHasher("sha256").update(readFileSync(file)).digest("hex");
}

/** Parses `sha256sum` output format into name → hex. */
export function parseSums(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!match) throw new Error(`bad SHA256SUMS line: ${JSON.stringify(line)}`);
    m.set(match[2]!, match[1]!);
  }
  return m;
}

/** Finds a tool on the current PATH. */
export function which(tool: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const p = join(dir, tool);
    if (dir && existsSync(p)) return p;
  }
  return null;
}

/** Writes an executable shell script. */
export function writeScript(file: string, body: string): void {
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
}

/** A shim directory for PATH with `uname` reporting the given OS and machine. */
export function fakeUname(dir: string, os: string, machine: string): void {
  mkdirSync(dir, { recursive: true });
  writeScript(
    join(dir, "uname"),
    `case "$1" in -s) echo '${os}' ;; -m) echo '${machine}' ;; *) echo '${os}' ;; esac`,
  );
}

/** A PATH directory holding links to the given tools only (those that exist here). */
export function toolDir(dir: string, tools: string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const t of tools) {
    const p = which(t);
    if (p && !existsSync(join(dir, t))) symlinkSync(p, join(dir, t));
  }
  return dir;
}

/** What install.sh needs from PATH, apart from a downloader and a checksum tool. */
export const BASE_TOOLS = ["uname", "id", "mkdir", "mktemp", "cp", "mv", "rm", "chmod", "tr", "head", "cat", "ldd", "getconf", "sh"];
