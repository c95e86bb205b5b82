/**
 * Compiles vigil into self-contained executables.
 *
 *   bun scripts/build.ts [--host]                        dist/vigil for this machine (`make build`)
 *   bun scripts/build.ts --all [--outdir DIR]            every release target (`make dist`)
 *   bun scripts/build.ts --targets a,b [--outdir DIR]    only the named release targets
 *   bun scripts/build.ts --fetch-runtimes [--targets a,b] only fetch the target runtimes
 *
 * Release targets are written as DIR/vigil-<os>-<arch>[-musl] (DIR defaults to dist) together with
 * DIR/SHA256SUMS (`sha256sum -c` format) and DIR/BUILD-INFO.json (version, commit, Bun version and
 * the npm runtime each binary was built from). SHA256SUMS is written last and only when every
 * requested target compiled and passed its header check; any failure exits 1 naming the target.
 *
 * Every binary is minified, gets the version and commit as compile-time constants (VIGIL_VERSION,
 * VIGIL_COMMIT, read by src/shared/build-info.ts; the minifier keeps only what src uses, so the
 * commit of each binary is also recorded, with its SHA-256, in BUILD-INFO.json), never autoloads
 * .env or bunfig.toml from the operator's working directory (an evidence tool must behave the same
 * wherever it runs), and has the test-only fault seam compiled out (VIGIL_RELEASE).
 *
 * Cross-compilation needs the Bun runtime of each target. Bun would download it from GitHub; we
 * take it from the npm registry instead (the `@oven/bun-<os>-<arch>[-musl]` packages the `bun`
 * package itself installs from), via `npm pack`, check the tarball against the integrity pinned
 * below, extract `bin/bun` into the runtime cache (--runtimes DIR, env VIGIL_BUN_RUNTIMES, default
 * .tools/targets) and hand it to Bun.build as `compile.executablePath`. Nothing is fetched from
 * anywhere else, and the runtime's version always equals the compiling Bun's.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readSync, closeSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };

const ROOT = resolve(import.meta.dir, "..");

/** Release targets: our name → Bun's compile target, the npm package holding its runtime, and
 * what its header must say (ELF e_machine / Mach-O cputype, and the ELF interpreter's libc). */
const TARGETS = {
  "linux-x64": { bun: "bun-linux-x64", npm: "@oven/bun-linux-x64", format: "elf", machine: 0x3e, libc: "glibc" },
  "linux-arm64": { bun: "bun-linux-arm64", npm: "@oven/bun-linux-aarch64", format: "elf", machine: 0xb7, libc: "glibc" },
  "linux-x64-musl": { bun: "bun-linux-x64-musl", npm: "@oven/bun-linux-x64-musl", format: "elf", machine: 0x3e, libc: "musl" },
  "linux-arm64-musl": { bun: "bun-linux-arm64-musl", npm: "@oven/bun-linux-aarch64-musl", format: "elf", machine: 0xb7, libc: "musl" },
  "darwin-x64": { bun: "bun-darwin-x64", npm: "@oven/bun-darwin-x64", format: "macho", machine: 0x01000007, libc: null },
  "darwin-arm64": { bun: "bun-darwin-arm64", npm: "@oven/bun-darwin-aarch64", format: "macho", machine: 0x0100000c, libc: null },
} as const satisfies Record<string, { bun: Bun.Build.CompileTarget; npm: string; format: "elf" | "macho"; machine: number; libc: "glibc" | "musl" | null }>;
type TargetName = keyof typeof TARGETS;
const TARGET_NAMES = Object.keys(TARGETS) as TargetName[];

/**
 * npm `dist.integrity` of each runtime package, per Bun version (`npm view @oven/bun-linux-x64@V
 * dist.integrity`). Bumping Bun (Makefile BUN_VERSION) means adding the new version's line here;
 * until then `make dist` refuses rather than compile with an unpinned runtime.
 */
const RUNTIME_INTEGRITY: Record<string, Record<TargetName, string>> = {
  "1.4.5": {
    "linux-x64": "sha512-IWX9BELoGHAUtMonkeSaNaZwXzRk+oDw6Mk+HBFXd3KHYIBNBsIGRupMZPcgNoDbJpLu6gAJjIoIVPZtt1aJ1g==",
    "linux-arm64": "sha512-4BXmsSKnjOrlGWqZV4x/oWa7AVoR+B6lCXddMzOAXBIm3t50eslg9wb66gmtW1AamEQ1l1CDvmmruysEhqOWMg==",
    "linux-x64-musl": "sha512-10QoW/YfTgnURaGEaHpJCiXjLI2e5iTtfVDaA5JKcyUzaa1cq6cVUY9/Uq5XkYzvtRjHLRe9Oj/lTDIQcxy8HQ==",
    "linux-arm64-musl": "sha512-XCNc+WvvMAdNNb+OWTogpy+N9wm62fkVeEVLb6how0RZhW5LPi6c7BlkeVCuWps7XjEl2saFpHFa20/1E+PAHg==",
    "darwin-x64": "sha512-qkLPMGHZM9NI6CeHTWwVezzmlo6cC4Ta7yUAjYIWXS366qQcOlcp75t2uZyiuVRBMPS0h9qE0tCcvCHGaFqjJg==",
    "darwin-arm64": "sha512-4MIFXHmctH2EhAxLXm2/qxNtv17dFtLJylvaOCsrgq6KSqHTs6eW5YSrJjRbJxYUJaR901fsN8JfZOa+CsWpWQ==",
  },
};

function fail(message: string): never {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}
const log = (message: string) => process.stderr.write(`build: ${message}\n`);

const USAGE =
  "usage: bun scripts/build.ts --host\n" +
  "       bun scripts/build.ts (--all | --targets a,b,…) [--outdir DIR] [--runtimes DIR]\n" +
  "       bun scripts/build.ts --fetch-runtimes [--targets a,b,…] [--runtimes DIR]\n" +
  `targets: ${TARGET_NAMES.join(", ")}`;

interface Options {
  mode: "host" | "release" | "fetch";
  targets: TargetName[];
  outdir: string;
  runtimes: string;
}

function parseArgs(argv: string[]): Options {
  let host = false;
  let all = false;
  let fetchOnly = false;
  let targets: TargetName[] | null = null;
  let outdir: string | null = null;
  let runtimes: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf("=");
    const flag = a.startsWith("--") && eq > 0 ? a.slice(0, eq) : a;
    const value = (): string => {
      if (eq > 0 && a.startsWith("--")) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined || v === "") fail(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    switch (flag) {
      case "--host":
        host = true;
        break;
      case "--all":
        all = true;
        break;
      case "--fetch-runtimes":
        fetchOnly = true;
        break;
      case "--targets": {
        const names = value().split(",").map((s) => s.trim()).filter(Boolean);
        if (names.length === 0) fail(`--targets needs at least one target\n${USAGE}`);
        for (const n of names) if (!(n in TARGETS)) fail(`unknown target ${JSON.stringify(n)} (known: ${TARGET_NAMES.join(", ")})`);
        targets = [...new Set(names as TargetName[])];
        break;
      }
      case "--outdir":
        outdir = value();
        break;
      case "--runtimes":
        runtimes = value();
        break;
      default:
        fail(`unknown flag ${a}\n${USAGE}`);
    }
  }
  const runtimesDir = resolve(runtimes ?? process.env.VIGIL_BUN_RUNTIMES ?? join(ROOT, ".tools/targets"));
  if (host || argv.length === 0) {
    // No flags at all: the host build, as before release targets existed.
    if (all || fetchOnly || targets || outdir || runtimes) fail(`--host takes no other flags\n${USAGE}`);
    return { mode: "host", targets: [], outdir: "dist", runtimes: runtimesDir };
  }
  if (fetchOnly) {
    if (all || outdir) fail(`--fetch-runtimes takes only --targets and --runtimes\n${USAGE}`);
    return { mode: "fetch", targets: targets ?? TARGET_NAMES, outdir: "", runtimes: runtimesDir };
  }
  if (all && targets) fail(`use --all or --targets, not both\n${USAGE}`);
  if (!all && !targets) fail(`--outdir and --runtimes need --all or --targets\n${USAGE}`);
  return { mode: "release", targets: targets ?? TARGET_NAMES, outdir: resolve(outdir ?? "dist"), runtimes: runtimesDir };
}

const opts = parseArgs(process.argv.slice(2));

const commit = (() => {
  const r = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT, stderr: "ignore" });
  return r.exitCode === 0 ? r.stdout.toString().trim() : "unknown";
})();

const define = {
  VIGIL_VERSION: JSON.stringify(pkg.version),
  VIGIL_COMMIT: JSON.stringify(commit),
  VIGIL_RELEASE: "true",
};

// Shared by the host build and every target, so a shipped binary is built exactly like the tested
// dist/vigil. Bytecode moves parsing to build time (start-up about 3× faster); it needs ESM
// because the entry uses top-level await.
const BUNDLE_OPTIONS = { minify: true, sourcemap: "none", bytecode: true, format: "esm", define } as const;

// ---------------------------------------------------------------------------------------------
// --host: unchanged behaviour (dist/vigil for this machine, Bun's own runtime)

if (opts.mode === "host") {
  mkdirSync("dist", { recursive: true });
  const result = await Bun.build({
    entrypoints: ["src/cli.ts"],
    ...BUNDLE_OPTIONS,
    compile: { outfile: "dist/vigil", autoloadDotenv: false, autoloadBunfig: false },
  });
  if (!result.success) fail(result.logs.map(String).join("\n"));
  log(`dist/vigil ${pkg.version} (${commit})`);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Target runtimes from the npm registry

const integrityFor = (() => {
  const pins = RUNTIME_INTEGRITY[Bun.version];
  if (!pins) {
    fail(
      `no target runtimes are pinned for Bun ${Bun.version} (pinned: ${Object.keys(RUNTIME_INTEGRITY).join(", ")}); ` +
        `add its dist.integrity values to RUNTIME_INTEGRITY in scripts/build.ts (npm view @oven/bun-linux-x64@${Bun.version} dist.integrity)`,
    );
  }
  return (t: TargetName) => pins[t];
})();

function runtimePath(t: TargetName): string {
  return join(opts.runtimes, `bun-${t}-v${Bun.version}`);
}

async function digestFile(file: string, algorithm: "sha256" | "sha512"): Promise<Buffer> {
  const h = new Bun.CryptoHasher(algorithm);
  const reader = Bun.file(file).stream().getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    h.update(value);
  }
  return Buffer.from(h.digest());
}

const sri512 = async (file: string) => `sha512-${(await digestFile(file, "sha512")).toString("base64")}`;
const sha256Hex = async (file: string) => (await digestFile(file, "sha256")).toString("hex");

/** The runtime for target t: from the cache, or `npm pack`ed, integrity-checked and extracted. */
async function ensureRuntime(t: TargetName): Promise<string> {
  const dest = runtimePath(t);
  if (existsSync(dest) && statSync(dest).size > 0) return dest;
  const spec = `${TARGETS[t].npm}@${Bun.version}`;
  mkdirSync(opts.runtimes, { recursive: true });
  const work = mkdtempSync(join(opts.runtimes, `.fetch-${t}-`));
  try {
    log(`fetching the ${t} runtime: npm pack ${spec}`);
    // A throwaway npm cache: the extracted runtime is what we keep, not another copy of the tarball.
    const npm = Bun.spawnSync(["npm", "pack", spec, "--json", "--pack-destination", work, "--cache", join(work, "npm-cache"), "--no-fund", "--no-audit"], {
      cwd: work,
      stdout: "pipe",
      stderr: "pipe",
      timeout: 600_000,
    });
    if (npm.exitCode !== 0) throw new Error(`npm pack ${spec} failed (exit ${npm.exitCode ?? npm.signalCode}):\n${npm.stderr.toString().trim()}`);
    let filename: string | undefined;
    try {
      const out = JSON.parse(npm.stdout.toString()) as Array<{ filename: string }>;
      filename = out[0]!.filename;
    } catch {
      throw new Error(`could not read npm pack's output:\n${npm.stdout.toString().slice(0, 500)}`);
    }
    if (!filename) throw new Error(`npm pack ${spec} named no tarball`);
    const tarball = join(work, filename);
    const got = await sri512(tarball);
    const want = integrityFor(t);
    if (got !== want) throw new Error(`${spec} tarball integrity ${got} does not match the pinned ${want}`);
    const tar = Bun.spawnSync(["tar", "-xzf", tarball, "-C", work, "package/bin/bun"], { stderr: "pipe" });
    if (tar.exitCode !== 0) throw new Error(`extracting bin/bun from ${filename} failed:\n${tar.stderr.toString().trim()}`);
    const bin = join(work, "package/bin/bun");
    chmodSync(bin, 0o755);
    renameSync(bin, dest); // atomic: a concurrent build sees either no runtime or a whole one
    log(`runtime ${t}: ${dest} (${(statSync(dest).size / 2 ** 20).toFixed(1)} MiB, ${want.slice(0, 20)}…)`);
    return dest;
  } catch (e) {
    rmSync(work, { recursive: true, force: true });
    fail(`target ${t}: runtime: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Header checks: the file really is an executable for the target's OS, machine and libc

function readHead(file: string, length: number, position = 0): Buffer {
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, position);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** "" when the binary matches the target; otherwise what is wrong. */
function checkHeader(file: string, t: TargetName): string {
  const spec = TARGETS[t];
  const h = readHead(file, 64);
  if (spec.format === "elf") {
    if (h.length < 64 || h.readUInt32BE(0) !== 0x7f454c46) return "not an ELF file";
    if (h[4] !== 2 || h[5] !== 1) return "not a 64-bit little-endian ELF file";
    const machine = h.readUInt16LE(18);
    if (machine !== spec.machine) return `ELF e_machine is 0x${machine.toString(16)}, expected 0x${spec.machine.toString(16)}`;
    // PT_INTERP names the dynamic loader: ld-linux-* for glibc, ld-musl-* for musl.
    const phoff = Number(h.readBigUInt64LE(32));
    const phentsize = h.readUInt16LE(54);
    const phnum = h.readUInt16LE(56);
    const ph = readHead(file, phentsize * phnum, phoff);
    let interp = "";
    for (let i = 0; i < phnum; i++) {
      const o = i * phentsize;
      if (ph.readUInt32LE(o) !== 3) continue;
      const off = Number(ph.readBigUInt64LE(o + 8));
      const size = Number(ph.readBigUInt64LE(o + 32));
      interp = readHead(file, size, off).toString("latin1").replace(/\0+$/, "");
    }
    const libc = interp.includes("ld-musl") ? "musl" : interp ? "glibc" : "static";
    if (spec.libc && libc !== spec.libc && libc !== "static") return `ELF interpreter ${interp} is ${libc}, expected ${spec.libc}`;
    return "";
  }
  if (h.length < 8 || h.readUInt32LE(0) !== 0xfeedfacf) return "not a 64-bit Mach-O file";
  const cpu = h.readUInt32LE(4);
  if (cpu !== spec.machine) return `Mach-O cputype is 0x${cpu.toString(16)}, expected 0x${spec.machine.toString(16)}`;
  return "";
}

// ---------------------------------------------------------------------------------------------
// macOS code signature. A Mach-O's embedded signature seals every 4 KiB page up to the signature;
// macOS kills a process whose pages do not match (on Apple Silicon an unsigned binary does not
// start at all). Bun re-signs darwin-arm64 output ad hoc, but its darwin-x64 output (1.4.5) keeps
// the runtime's original signature over bytes that have since changed. So every darwin binary is
// checked here; one that does not verify is re-signed ad hoc, in the same format Bun (and ld64 and
// Go's linker) write: a SuperBlob holding one SHA-256 CodeDirectory, no certificate involved.

const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
const CS_PAGE = 4096;

interface MachoLayout {
  sigCmd: number; // offset of LC_CODE_SIGNATURE
  sigOff: number;
  sigSize: number;
  linkeditCmd: number; // offset of the __LINKEDIT segment_command_64
  linkeditFileoff: number;
  textFileoff: number;
  textFilesize: number;
}

function machoLayout(b: Buffer): MachoLayout | string {
  if (b.length < 32 || b.readUInt32LE(0) !== 0xfeedfacf) return "not a 64-bit Mach-O file";
  if (b.readUInt32LE(12) !== 2) return "not an MH_EXECUTE Mach-O file";
  const ncmds = b.readUInt32LE(16);
  let off = 32;
  const l: Partial<MachoLayout> = {};
  for (let i = 0; i < ncmds; i++) {
    const cmd = b.readUInt32LE(off);
    const size = b.readUInt32LE(off + 4);
    if (cmd === LC_CODE_SIGNATURE) Object.assign(l, { sigCmd: off, sigOff: b.readUInt32LE(off + 8), sigSize: b.readUInt32LE(off + 12) });
    if (cmd === LC_SEGMENT_64) {
      const name = b.toString("latin1", off + 8, off + 24).replace(/\0+$/, "");
      if (name === "__LINKEDIT") Object.assign(l, { linkeditCmd: off, linkeditFileoff: Number(b.readBigUInt64LE(off + 40)) });
      if (name === "__TEXT") Object.assign(l, { textFileoff: Number(b.readBigUInt64LE(off + 40)), textFilesize: Number(b.readBigUInt64LE(off + 48)) });
    }
    off += size;
  }
  if (l.sigCmd === undefined) return "no LC_CODE_SIGNATURE";
  if (l.linkeditCmd === undefined || l.textFilesize === undefined) return "no __LINKEDIT or __TEXT segment";
  return l as MachoLayout;
}

/** "" when the embedded signature's CodeDirectory seals every byte before it; else the problem. */
function verifyMachoSignature(b: Buffer): string {
  const l = machoLayout(b);
  if (typeof l === "string") return l;
  if (l.sigOff + l.sigSize !== b.length) return `the signature (${l.sigOff}+${l.sigSize}) does not end the file (${b.length} bytes)`;
  if (b.readUInt32BE(l.sigOff) !== 0xfade0cc0) return "the signature is not a SuperBlob";
  const count = b.readUInt32BE(l.sigOff + 8);
  for (let i = 0; i < count; i++) {
    if (b.readUInt32BE(l.sigOff + 12 + i * 8) !== 0) continue; // CSSLOT_CODEDIRECTORY
    const cd = l.sigOff + b.readUInt32BE(l.sigOff + 16 + i * 8);
    if (b.readUInt32BE(cd) !== 0xfade0c02) return "bad CodeDirectory magic";
    const hashOffset = b.readUInt32BE(cd + 16);
    const nCodeSlots = b.readUInt32BE(cd + 28);
    const codeLimit = b.readUInt32BE(cd + 32);
    const hashSize = b[cd + 36]!;
    const hashType = b[cd + 37]!;
    const pageSize = 2 ** b[cd + 39]!;
    if (hashType !== 2 || hashSize !== 32) return `CodeDirectory hash type ${hashType} is not SHA-256`;
    if (codeLimit !== l.sigOff) return `the signature seals ${codeLimit} bytes, but ${l.sigOff} precede it`;
    if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) return `${nCodeSlots} page hashes for ${codeLimit} bytes`;
    let bad = 0;
    for (let p = 0; p < nCodeSlots; p++) {
      const page = b.subarray(p * pageSize, Math.min((p + 1) * pageSize, codeLimit));
      const want = b.subarray(cd + hashOffset + p * 32, cd + hashOffset + (p + 1) * 32);
      if (!new Bun.CryptoHasher("sha256").update(page).digest().equals(want)) bad++;
    }
    return bad === 0 ? "" : `${bad} of ${nCodeSlots} page hashes do not match`;
  }
  return "no CodeDirectory";
}

/** Replaces the signature with an ad-hoc one over the current bytes; returns the new file. */
function adhocSign(b: Buffer, identifier: string): Buffer {
  const l = machoLayout(b);
  if (typeof l === "string") throw new Error(l);
  const codeLimit = l.sigOff; // the signature stays where it is (16-byte aligned, end of __LINKEDIT)
  if (codeLimit % 16 !== 0) throw new Error(`signature offset ${codeLimit} is not 16-byte aligned`);
  const ident = Buffer.from(`${identifier}\0`, "latin1");
  const nCodeSlots = Math.ceil(codeLimit / CS_PAGE);
  const cdHeader = 88; // CodeDirectory version 0x20400
  const cdLength = cdHeader + ident.length + nCodeSlots * 32;
  const sbLength = 12 + 8 + cdLength;
  const out = Buffer.alloc(codeLimit + sbLength);
  b.copy(out, 0, 0, codeLimit);
  // Load commands first: they are inside the sealed pages.
  out.writeUInt32LE(sbLength, l.sigCmd + 12);
  const linkeditFilesize = codeLimit + sbLength - l.linkeditFileoff;
  out.writeBigUInt64LE(BigInt(Math.ceil(linkeditFilesize / CS_PAGE) * CS_PAGE), l.linkeditCmd + 32); // as Bun's own signer
  out.writeBigUInt64LE(BigInt(linkeditFilesize), l.linkeditCmd + 48);
  // SuperBlob { magic, length, count = 1, index[0] = { CSSLOT_CODEDIRECTORY, offset 20 } }
  let o = codeLimit;
  o = out.writeUInt32BE(0xfade0cc0, o);
  o = out.writeUInt32BE(sbLength, o);
  o = out.writeUInt32BE(1, o);
  o = out.writeUInt32BE(0, o);
  o = out.writeUInt32BE(20, o);
  const cd = o;
  o = out.writeUInt32BE(0xfade0c02, o); // magic
  o = out.writeUInt32BE(cdLength, o);
  o = out.writeUInt32BE(0x20400, o); // version
  o = out.writeUInt32BE(0x20002, o); // flags: CS_ADHOC | CS_LINKER_SIGNED
  o = out.writeUInt32BE(cdHeader + ident.length, o); // hashOffset
  o = out.writeUInt32BE(cdHeader, o); // identOffset
  o = out.writeUInt32BE(0, o); // nSpecialSlots
  o = out.writeUInt32BE(nCodeSlots, o);
  o = out.writeUInt32BE(codeLimit, o);
  o = out.writeUInt8(32, o); // hashSize
  o = out.writeUInt8(2, o); // hashType: SHA-256
  o = out.writeUInt8(0, o); // platform
  o = out.writeUInt8(12, o); // log2(pageSize)
  o = out.writeUInt32BE(0, o); // spare2
  o = out.writeUInt32BE(0, o); // scatterOffset
  o = out.writeUInt32BE(0, o); // teamOffset
  o = out.writeUInt32BE(0, o); // spare3
  o = out.writeBigUInt64BE(0n, o); // codeLimit64
  o = out.writeBigUInt64BE(BigInt(l.textFileoff), o); // execSegBase
  o = out.writeBigUInt64BE(BigInt(l.textFilesize), o); // execSegLimit
  o = out.writeBigUInt64BE(1n, o); // execSegFlags: CS_EXECSEG_MAIN_BINARY
  if (o - cd !== cdHeader) throw new Error("CodeDirectory header size");
  o += ident.copy(out, o);
  for (let p = 0; p < nCodeSlots; p++) {
    const page = out.subarray(p * CS_PAGE, Math.min((p + 1) * CS_PAGE, codeLimit));
    o += new Bun.CryptoHasher("sha256").update(page).digest().copy(out, o);
  }
  if (o !== out.length) throw new Error("signature size");
  return out;
}

/** Makes sure a darwin binary carries a signature that verifies; returns how it is signed. */
async function ensureMachoSignature(file: string, name: string): Promise<string> {
  const b = Buffer.from(await Bun.file(file).arrayBuffer());
  const problem = verifyMachoSignature(b);
  if (problem === "") return "ad-hoc (bun)";
  const signed = adhocSign(b, "vigil");
  const again = verifyMachoSignature(signed);
  if (again !== "") throw new Error(`re-signed binary still does not verify: ${again}`);
  const tmp = `${file}.sign-${process.pid}`;
  writeFileSync(tmp, signed, { mode: 0o755 });
  renameSync(tmp, file);
  log(`${name}: Bun's signature did not verify (${problem}); re-signed ad hoc`);
  return "ad-hoc (re-signed by scripts/build.ts)";
}

// ---------------------------------------------------------------------------------------------
// Main

const runtimes = new Map<TargetName, string>();
for (const t of opts.targets) runtimes.set(t, await ensureRuntime(t));
if (opts.mode === "fetch") {
  log(`runtimes ready in ${opts.runtimes}: ${opts.targets.join(", ")}`);
  process.exit(0);
}

mkdirSync(opts.outdir, { recursive: true });
// A stale SHA256SUMS must never describe a half-finished build.
rmSync(join(opts.outdir, "SHA256SUMS"), { force: true });
rmSync(join(opts.outdir, "BUILD-INFO.json"), { force: true });

const built: Array<{ target: TargetName; file: string; size: number; sha256: string; signature: string | null }> = [];
for (const t of opts.targets) {
  const name = `vigil-${t}`;
  const outfile = join(opts.outdir, name);
  rmSync(outfile, { force: true });
  // Compiled in a scratch directory and renamed into place only once it passed every check, so a
  // target that failed never leaves a file that looks like a release binary. The scratch file is
  // named `vigil` because Bun embeds the output's basename as the entry module's name
  // (/$bunfs/root/vigil, as in dist/vigil); the linux-x64 release binary is then byte-identical to
  // the `--host` build the test suites run against.
  const scratch = mkdtempSync(join(opts.outdir, `.build-${t}-`));
  const partial = join(scratch, "vigil");
  const targetFail: (message: string) => never = (message) => {
    rmSync(scratch, { recursive: true, force: true });
    fail(`target ${t}: ${message}`);
  };
  let result: Awaited<ReturnType<typeof Bun.build>>;
  try {
    result = await Bun.build({
      entrypoints: [join(ROOT, "src/cli.ts")],
      ...BUNDLE_OPTIONS,
      compile: {
        target: TARGETS[t].bun,
        executablePath: runtimes.get(t)!,
        outfile: partial,
        autoloadDotenv: false,
        autoloadBunfig: false,
      },
    });
  } catch (e) {
    targetFail(`compile failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!result.success) targetFail(`compile failed:\n${result.logs.map(String).join("\n")}`);
  if (!existsSync(partial)) targetFail(`the compiler wrote no output`);
  const rawSize = statSync(partial).size;
  if (rawSize <= statSync(runtimes.get(t)!).size) targetFail(`output (${rawSize} bytes) is no larger than the bare runtime`);
  const problem = checkHeader(partial, t);
  if (problem) targetFail(problem);
  let signature: string | null = null;
  if (TARGETS[t].format === "macho") {
    try {
      signature = await ensureMachoSignature(partial, name);
    } catch (e) {
      targetFail(`code signature: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const sha256 = await sha256Hex(partial);
  const size = statSync(partial).size;
  renameSync(partial, outfile);
  rmSync(scratch, { recursive: true, force: true });
  built.push({ target: t, file: name, size, sha256, signature });
  log(`${name} ${pkg.version} (${commit}) ${(size / 2 ** 20).toFixed(1)} MiB${signature ? `, macOS signature ${signature}` : ""}`);
}

const missing = opts.targets.filter((t) => !built.some((b) => b.target === t));
if (missing.length > 0) fail(`targets not built: ${missing.join(", ")}`);

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

const sorted = [...built].sort((a, b) => (a.file < b.file ? -1 : 1));
writeAtomic(
  join(opts.outdir, "BUILD-INFO.json"),
  `${JSON.stringify(
    {
      name: "vigil",
      version: pkg.version,
      commit,
      bun: Bun.version,
      targets: Object.fromEntries(
        sorted.map((b) => [b.target, { file: b.file, size: b.size, sha256: b.sha256, ...(b.signature ? { macos_signature: b.signature } : {}), runtime: `${TARGETS[b.target].npm}@${Bun.version}`, runtime_integrity: integrityFor(b.target) }]),
      ),
    },
    null,
    2,
  )}\n`,
);
writeAtomic(join(opts.outdir, "SHA256SUMS"), sorted.map((b) => `${b.sha256}  ${b.file}\n`).join(""));
log(`${opts.outdir}/SHA256SUMS: ${sorted.length} target(s)`);
