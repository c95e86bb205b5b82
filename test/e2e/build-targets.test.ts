/**
 * scripts/build.ts cross-compilation: builds linux-x64, linux-arm64 and darwin-x64 once into a
 * temporary directory (runtimes from the npm registry, cached in .tools/targets) and checks what
 * came out: executable headers name the right machine and libc, SHA256SUMS matches the files, the
 * version and commit are baked in, bunfig.toml is not autoloaded, the darwin binary carries a code
 * signature that seals every page, and a target that cannot be built fails the whole build loudly.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUILD_SCRIPT, BUILD_TIMEOUT_MS, ROOT, VERSION, buildTargets, elfInfo, hostTarget, parseSums, run, sha256File, tmp, which } from "./dist-fixture.ts";

const TARGETS = ["linux-x64", "linux-arm64", "darwin-x64"];
const EM_X86_64 = 0x3e;
const EM_AARCH64 = 0xb7;

let out = "";
let work = "";
let stderr = "";

beforeAll(async () => {
  work = tmp("build-targets");
  out = join(work, "dist");
  const r = await buildTargets(TARGETS, out);
  stderr = r.stderr;
  if (r.code !== 0) throw new Error(`build failed (${r.code}):\n${r.stderr}`);
}, BUILD_TIMEOUT_MS + 30_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("scripts/build.ts --targets", () => {
  test("writes exactly the named binaries, SHA256SUMS and BUILD-INFO.json", () => {
    expect(readdirSync(out).sort()).toEqual(["BUILD-INFO.json", "SHA256SUMS", ...TARGETS.map((t) => `vigil-${t}`)].sort());
    const sums = parseSums(readFileSync(join(out, "SHA256SUMS"), "utf8"));
    expect([...sums.keys()].sort()).toEqual(TARGETS.map((t) => `vigil-${t}`).sort());
    for (const [name, hex] of sums) expect(sha256File(join(out, name))).toBe(hex);
  });

  test("SHA256SUMS verifies with sha256sum -c", async () => {
    const tool = which("sha256sum");
    if (!tool) return;
    const r = await run([tool, "-c", "SHA256SUMS"], { cwd: out });
    expect(r.code).toBe(0);
    for (const t of TARGETS) expect(r.stdout).toContain(`vigil-${t}: OK`);
  });

  test("the linux-arm64 binary is a 64-bit little-endian AArch64 ELF executable for glibc", () => {
    const e = elfInfo(join(out, "vigil-linux-arm64"));
    expect(e.elfClass).toBe(2); // ELFCLASS64
    expect(e.data).toBe(1); // ELFDATA2LSB
    expect([2, 3]).toContain(e.type); // ET_EXEC or ET_DYN
    expect(e.machine).toBe(EM_AARCH64);
    expect(e.interpreter).toBe("/lib/ld-linux-aarch64.so.1");
  });

  test("the linux-x64 binary is an x86-64 ELF executable for glibc", () => {
    const e = elfInfo(join(out, "vigil-linux-x64"));
    expect(e.elfClass).toBe(2);
    expect(e.machine).toBe(EM_X86_64);
    expect(e.interpreter).toBe("/lib64/ld-linux-x86-64.so.2");
  });

  test("the darwin-x64 binary is an x86-64 Mach-O whose code signature seals every page", () => {
    const b = readFileSync(join(out, "vigil-darwin-x64"));
    expect(b.readUInt32LE(0)).toBe(0xfeedfacf); // MH_MAGIC_64
    expect(b.readUInt32LE(4)).toBe(0x01000007); // CPU_TYPE_X86_64
    expect(b.readUInt32LE(12)).toBe(2); // MH_EXECUTE
    // LC_CODE_SIGNATURE → SuperBlob → CodeDirectory; recompute every page hash.
    let off = 32;
    let sigOff = -1;
    let sigSize = 0;
    for (let i = 0; i < b.readUInt32LE(16); i++) {
      if (b.readUInt32LE(off) === 0x1d) [sigOff, sigSize] = [b.readUInt32LE(off + 8), b.readUInt32LE(off + 12)];
      off += b.readUInt32LE(off + 4);
    }
    expect(sigOff).toBeGreaterThan(0);
    expect(sigOff + sigSize).toBe(b.length);
    expect(b.readUInt32BE(sigOff)).toBe(0xfade0cc0);
    const cdIndex = [...Array(b.readUInt32BE(sigOff + 8)).keys()].find((i) => b.readUInt32BE(sigOff + 12 + 8 * i) === 0)!;
    const cd = sigOff + b.readUInt32BE(sigOff + 16 + 8 * cdIndex);
    expect(b.readUInt32BE(cd)).toBe(0xfade0c02);
    const hashOffset = b.readUInt32BE(cd + 16);
    const nCodeSlots = b.readUInt32BE(cd + 28);
    const codeLimit = b.readUInt32BE(cd + 32);
    const pageSize = 2 ** b[cd + 39]!;
    expect(b[cd + 37]).toBe(2); // SHA-256
    expect(codeLimit).toBe(sigOff);
    expect(nCodeSlots).toBe(Math.ceil(codeLimit / pageSize));
    let bad = 0;
    for (let p = 0; p < nCodeSlots; p++) {
      const page = b.subarray(p * pageSize, Math.min((p + 1) * pageSize, codeLimit));
      const want = b.subarray(cd + hashOffset + 32 * p, cd + hashOffset + 32 * (p + 1));
      if (!new Bun.CryptoHasher("sha256").update(page).digest().equals(want)) bad++;
    }
    expect(bad).toBe(0);
  });

  test("version and commit are baked in and recorded in BUILD-INFO.json", async () => {
    const commit = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT }).stdout.toString().trim() || "unknown";
    const info = JSON.parse(readFileSync(join(out, "BUILD-INFO.json"), "utf8"));
    expect(info).toMatchObject({ name: "vigil", version: VERSION, commit, bun: Bun.version });
    expect(Object.keys(info.targets).sort()).toEqual([...TARGETS].sort());
    expect(info.targets["linux-arm64"]).toMatchObject({ file: "vigil-linux-arm64", runtime: `@oven/bun-linux-aarch64@${Bun.version}` });
    expect(info.targets["linux-arm64"].runtime_integrity).toMatch(/^sha512-/);
    expect(stderr).toContain(`vigil-linux-arm64 ${VERSION} (${commit})`);
    const host = hostTarget();
    if (host && TARGETS.includes(host)) {
      const r = await run([join(out, `vigil-${host}`), "--version"]);
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(VERSION);
    }
  });

  test("every binary embeds its entry module as /$bunfs/root/vigil (the same name as dist/vigil)", () => {
    for (const t of TARGETS) {
      const b = readFileSync(join(out, `vigil-${t}`));
      expect({ t, embedded: b.includes(Buffer.from("/$bunfs/root/vigil\0")) }).toEqual({ t, embedded: true });
    }
  });

  test("the binary does not autoload bunfig.toml from the working directory", async () => {
    const host = hostTarget();
    if (!host || !TARGETS.includes(host)) return;
    const cwd = join(work, "hostile-cwd");
    mkdirSync(cwd);
    const marker = join(cwd, "PRELOADED");
    writeFileSync(join(cwd, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
    writeFileSync(join(cwd, "preload.ts"), `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "x");\n`);
    writeFileSync(join(cwd, ".env"), "VIGIL_FROM_DOTENV=1\n");
    const r = await run([join(out, `vigil-${host}`), "--version"], { cwd });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
    expect(existsSync(marker)).toBe(false);
  });
});

describe("scripts/build.ts refusals", () => {
  test("a target whose runtime is wrong fails the build and leaves no binary and no SHA256SUMS", async () => {
    const dir = tmp("build-bad");
    try {
      const runtimes = join(dir, "runtimes");
      mkdirSync(runtimes);
      // linux-arm64's "runtime" is really the x64 one: compiles, but the header check catches it.
      const cache = process.env.VIGIL_BUN_RUNTIMES ?? join(ROOT, ".tools/targets");
      symlinkSync(join(cache, `bun-linux-x64-v${Bun.version}`), join(runtimes, `bun-linux-arm64-v${Bun.version}`));
      writeFileSync(join(runtimes, `bun-linux-arm64-musl-v${Bun.version}`), "not a runtime");
      const outdir = join(dir, "out");
      const r = await buildTargets(["linux-arm64"], outdir, ["--runtimes", runtimes]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("target linux-arm64: ELF e_machine is 0x3e, expected 0xb7");
      expect(readdirSync(outdir)).toEqual([]);

      const r2 = await buildTargets(["linux-arm64-musl"], outdir, ["--runtimes", runtimes]);
      expect(r2.code).toBe(1);
      expect(r2.stderr).toContain("target linux-arm64-musl: compile failed");
      expect(readdirSync(outdir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("unknown targets and conflicting flags are refused", async () => {
    for (const [args, message] of [
      [["--targets", "linux-x64,windows-x64"], 'unknown target "windows-x64"'],
      [["--host", "--all"], "--host takes no other flags"],
      [["--all", "--targets", "linux-x64"], "use --all or --targets, not both"],
      [["--outdir", "/nonexistent"], "--outdir and --runtimes need --all or --targets"],
      [["--frobnicate"], "unknown flag --frobnicate"],
    ] as const) {
      const r = await run([process.execPath, BUILD_SCRIPT, ...args]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(message);
    }
  });
});
