/**
 * scripts/install.sh against a local release server: Bun.serve on 127.0.0.1, port 0, serving a
 * release directory built here by scripts/build.ts (this machine's target and one foreign Linux
 * target). Every install goes into a temporary prefix; a fake `uname` (PATH shim) plays other
 * platforms. Scenarios live under their own base URL:
 *
 *   /good/{latest,v<version>}/…     the build as is
 *   /corrupt/…                      the binary with one byte flipped, SHA256SUMS unchanged
 *   /nosum/…                        SHA256SUMS without this machine's line
 *   /install.sh                     the script itself (for `curl … | sh`)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BASE_TOOLS,
  BUILD_TIMEOUT_MS,
  INSTALL_SCRIPT,
  RELEASE_SCRIPT,
  VERSION,
  buildTargets,
  fakeUname,
  foreignTarget,
  hostTarget,
  run,
  tmp,
  toolDir,
  which,
  writeScript,
} from "./dist-fixture.ts";

const HOST = hostTarget();
const describeHost = HOST ? describe : describe.skip;
if (!HOST) console.warn(`install.test.ts: skipped, ${process.platform}-${process.arch} is not a release target`);

let work = "";
let distDir = "";
let server: ReturnType<typeof Bun.serve> | null = null;
let base = "";
const requests: string[] = [];
let corruptBinary: Uint8Array | null = null;
let sumsWithoutHost = "";

const asset = `vigil-${HOST}`;
const foreign = HOST ? foreignTarget(HOST) : "";
const foreignAsset = `vigil-${foreign}`;

beforeAll(async () => {
  if (!HOST) return;
  work = tmp("install");
  chmodSync(work, 0o755); // the unprivileged-user case below must be able to traverse it
  distDir = join(work, "dist");
  const r = await buildTargets([HOST, foreign], distDir);
  if (r.code !== 0) throw new Error(`build failed (${r.code}):\n${r.stderr}`);
  const good = readFileSync(join(distDir, asset));
  corruptBinary = new Uint8Array(good);
  const mid = corruptBinary.length >> 1;
  corruptBinary[mid] = corruptBinary[mid]! ^ 0xff;
  sumsWithoutHost = readFileSync(join(distDir, "SHA256SUMS"), "utf8")
    .split("\n")
    .filter((l) => !l.endsWith(`  ${asset}`))
    .join("\n");

  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      requests.push(path);
      if (path === "/install.sh") return new Response(Bun.file(INSTALL_SCRIPT));
      const m = /^\/(good|corrupt|nosum)\/(latest|v[^/]+)\/([^/]+)$/.exec(path);
      if (!m) return new Response("not found\n", { status: 404 });
      const [, scenario, release, file] = m as unknown as [string, string, string, string];
      if (release !== "latest" && release !== `v${VERSION}`) return new Response("no such release\n", { status: 404 });
      if (scenario === "corrupt" && file === asset) return new Response(corruptBinary);
      if (scenario === "nosum" && file === "SHA256SUMS") return new Response(sumsWithoutHost);
      const f = join(distDir, file);
      if (!/^(vigil-[a-z0-9-]+|SHA256SUMS)$/.test(file) || !existsSync(f)) return new Response("not found\n", { status: 404 });
      return new Response(Bun.file(f));
    },
  });
  base = `http://127.0.0.1:${server.port}`;
}, BUILD_TIMEOUT_MS + 30_000);

afterAll(() => {
  server?.stop(true);
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A fresh home and prefix for one scenario. */
function scene(): { dir: string; home: string; prefix: string } {
  const dir = tmp("install-case");
  const home = join(dir, "home");
  Bun.spawnSync(["mkdir", "-p", home]);
  return { dir, home, prefix: join(dir, "bin") };
}

function env(home: string, extra: Record<string, string> = {}, pathPrefix: string[] = []): Record<string, string> {
  return {
    PATH: [...pathPrefix, process.env.PATH ?? "/usr/bin:/bin"].join(":"),
    HOME: home,
    LC_ALL: "C",
    ...extra,
  };
}

function install(args: string[], e: Record<string, string>) {
  return run(["sh", INSTALL_SCRIPT, ...args], { env: e, cwd: e.HOME });
}

/** Files in a prefix (hidden ones included, so a staged leftover would show). */
const listing = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);

function requestsSince(mark: number): string[] {
  return requests.slice(mark);
}

describeHost("install.sh", () => {
  test("curl | sh: installs the verified binary, which runs from the installed path", async () => {
    const s = scene();
    try {
      const r = await run(["sh", "-c", 'curl -fsSL "$1" | sh -s -- --prefix "$2"', "sh", `${base}/install.sh`, s.prefix], {
        env: env(s.home, { VIGIL_DOWNLOAD_BASE: `${base}/good` }),
        cwd: s.home,
      });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const dest = join(s.prefix, "vigil");
      expect(r.stdout).toContain(`-> ${asset}`);
      expect(r.stdout).toContain(`verified sha256 ${new Bun.CryptoHasher("sha256").update(readFileSync(join(distDir, asset))).digest("hex")}`);
      expect(r.stdout).toContain(`installed vigil ${VERSION} at ${dest}`);
      expect(r.stdout).toContain("is not on your PATH");
      expect(listing(s.prefix)).toEqual(["vigil"]);
      expect(statSync(dest).mode & 0o777).toBe(0o755);
      const v = await run([dest, "--version"], { env: env(s.home), cwd: s.home });
      expect(v.code).toBe(0);
      expect(v.stdout.trim()).toBe(VERSION);
      // never edits shell startup files
      expect(listing(s.home)).toEqual([]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("wget instead of curl; default prefix ~/.local/bin for a non-root user", async () => {
    if (!which("wget")) {
      console.warn("install.test.ts: wget not installed, wget case skipped");
      return;
    }
    const s = scene();
    try {
      const shims = toolDir(join(s.dir, "tools"), [...BASE_TOOLS, "wget", "sha256sum", "shasum"]);
      writeScript(join(s.dir, "fake-id"), 'if [ "$1" = -u ]; then echo 1000; else exec /usr/bin/id "$@"; fi');
      rmSync(join(shims, "id"), { force: true });
      Bun.spawnSync(["ln", "-s", join(s.dir, "fake-id"), join(shims, "id")]);
      const r = await install(["--base", `${base}/good`], { PATH: shims, HOME: s.home, LC_ALL: "C" });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("(with wget)");
      const dest = join(s.home, ".local/bin/vigil");
      expect(r.stdout).toContain(`installed vigil ${VERSION} at ${dest}`);
      expect((await run([dest, "--version"])).stdout.trim()).toBe(VERSION);
      expect(listing(join(s.home, ".local/bin"))).toEqual(["vigil"]);
      expect(listing(s.home)).toEqual([".local"]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("--version picks the versioned release; an unpublished version is a download failure", async () => {
    const s = scene();
    try {
      const mark = requests.length;
      const ok = await install(["--base", `${base}/good`, "--prefix", s.prefix, "--version", `v${VERSION}`], env(s.home));
      expect(ok.code).toBe(0);
      expect(requestsSince(mark)).toEqual([`/good/v${VERSION}/SHA256SUMS`, `/good/v${VERSION}/${asset}`]);

      const before = statSync(join(s.prefix, "vigil")).ino;
      const missing = await install(["--base", `${base}/good`, "--prefix", s.prefix, "--version", "9.9.9"], env(s.home));
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`download failed: ${base}/good/v9.9.9/SHA256SUMS`);
      expect(missing.stderr).toContain("nothing was installed");
      expect(listing(s.prefix)).toEqual(["vigil"]);
      expect(statSync(join(s.prefix, "vigil")).ino).toBe(before);

      const unreachable = await install(["--base", "http://127.0.0.1:9/none", "--prefix", s.prefix], env(s.home));
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr).toContain("download failed");
      expect(statSync(join(s.prefix, "vigil")).ino).toBe(before);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("a corrupted binary is refused and nothing is installed (an existing vigil is kept)", async () => {
    const s = scene();
    try {
      Bun.spawnSync(["mkdir", "-p", s.prefix]);
      writeScript(join(s.prefix, "vigil"), "echo 0.0.9");
      const old = readFileSync(join(s.prefix, "vigil"));
      const r = await install(["--base", `${base}/corrupt`, "--prefix", s.prefix], env(s.home));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`checksum mismatch for ${asset}`);
      expect(r.stderr).toContain("nothing was installed");
      expect(r.stdout).not.toContain("installed vigil");
      expect(listing(s.prefix)).toEqual(["vigil"]);
      expect(readFileSync(join(s.prefix, "vigil")).equals(old)).toBe(true);

      const fresh = join(s.dir, "fresh");
      const r2 = await install(["--base", `${base}/corrupt`, "--prefix", fresh], env(s.home));
      expect(r2.code).toBe(1);
      expect(listing(fresh)).toEqual([]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("SHA256SUMS without a line for the binary is refused", async () => {
    const s = scene();
    try {
      const r = await install(["--base", `${base}/nosum`, "--prefix", s.prefix], env(s.home));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`SHA256SUMS at ${base}/nosum/latest has no line for ${asset}`);
      expect(listing(s.prefix)).toEqual([]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("an unsupported platform is refused before anything is downloaded", async () => {
    const s = scene();
    try {
      for (const [os, machine, message] of [
        ["FreeBSD", "amd64", "unsupported platform: operating system 'FreeBSD'"],
        ["Linux", "riscv64", "unsupported platform: architecture 'riscv64' on Linux"],
        ["Linux", "armv7l", "unsupported platform: architecture 'armv7l' on Linux"],
      ] as const) {
        const shim = join(s.dir, `uname-${os}-${machine}`);
        fakeUname(shim, os, machine);
        const mark = requests.length;
        const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], env(s.home, {}, [shim]));
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(message);
        expect(requestsSince(mark)).toEqual([]);
        expect(listing(s.prefix)).toEqual([]);
      }
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("platform detection: architecture and musl choose the asset; a binary that cannot run here is not installed", async () => {
    const s = scene();
    try {
      // The foreign architecture: downloaded and verified, but it does not run here.
      const shim = join(s.dir, "foreign");
      fakeUname(shim, "Linux", foreign.startsWith("linux-arm64") ? "aarch64" : "x86_64");
      let mark = requests.length;
      const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], env(s.home, {}, [shim]));
      expect(requestsSince(mark)).toEqual([`/good/latest/SHA256SUMS`, `/good/latest/${foreignAsset}`]);
      expect(r.stdout).toContain(`verified sha256`);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`the downloaded ${foreignAsset} does not run on this machine`);
      expect(listing(s.prefix)).toEqual([]);

      // A musl system (its ldd says so): the -musl asset, not published here → download failure.
      if (HOST!.startsWith("linux-") && !HOST!.endsWith("-musl")) {
        const musl = join(s.dir, "musl");
        Bun.spawnSync(["mkdir", "-p", musl]);
        writeScript(join(musl, "ldd"), `echo "musl libc (${process.arch === "x64" ? "x86_64" : "aarch64"})" >&2; echo "Version 1.2.5" >&2; exit 1`);
        mark = requests.length;
        const m = await install(["--base", `${base}/good`, "--prefix", s.prefix], env(s.home, {}, [musl]));
        expect(m.code).toBe(1);
        expect(m.stdout).toContain(`(musl) -> ${asset}-musl`);
        expect(requestsSince(mark)).toEqual([`/good/latest/SHA256SUMS`, `/good/latest/${asset}-musl`]);
        expect(m.stderr).toContain(`download failed: ${base}/good/latest/${asset}-musl`);
        expect(listing(s.prefix)).toEqual([]);
      }
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("an existing older version is replaced atomically", async () => {
    const s = scene();
    try {
      Bun.spawnSync(["mkdir", "-p", s.prefix]);
      const dest = join(s.prefix, "vigil");
      writeScript(dest, "echo 0.0.9");
      const oldInode = statSync(dest).ino;
      const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], env(s.home));
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`installed vigil ${VERSION} at ${dest} (replaced 0.0.9)`);
      // A rename, not a rewrite: a new inode under the same name, and no staged file left behind.
      expect(statSync(dest).ino).not.toBe(oldInode);
      expect(listing(s.prefix)).toEqual(["vigil"]);
      expect((await run([dest, "--version"])).stdout.trim()).toBe(VERSION);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("a vigil that is running while it is replaced keeps running (no in-place write)", async () => {
    const sleepBin = which("sleep");
    if (!sleepBin) return;
    const s = scene();
    Bun.spawnSync(["mkdir", "-p", s.prefix]);
    const dest = join(s.prefix, "vigil");
    // An ELF executable standing in for the old vigil: writing over it in place while it runs
    // fails with ETXTBSY ("Text file busy"); a rename does not.
    writeFileSync(dest, readFileSync(sleepBin));
    chmodSync(dest, 0o755);
    const running = Bun.spawn([dest, "30"], { stdout: "ignore", stderr: "ignore" });
    try {
      const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], env(s.home));
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(running.exitCode).toBeNull(); // still running, untouched
      expect((await run([dest, "--version"])).stdout.trim()).toBe(VERSION);
      expect(listing(s.prefix)).toEqual(["vigil"]);
    } finally {
      running.kill("SIGKILL");
      await running.exited;
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("an unwritable --prefix is refused before downloading", async () => {
    const s = scene();
    try {
      // A prefix that cannot be created (its parent is a file): refused even as root.
      writeFileSync(join(s.dir, "file"), "");
      let mark = requests.length;
      const r = await install(["--base", `${base}/good`, "--prefix", join(s.dir, "file/bin")], env(s.home));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot create ${join(s.dir, "file/bin")} (not writable)`);
      expect(requestsSince(mark)).toEqual([]);

      // An existing directory without write permission. Root ignores permission bits, so as root
      // the script runs as nobody (setpriv) when it can.
      const ro = join(s.dir, "ro");
      Bun.spawnSync(["mkdir", "-p", ro]);
      chmodSync(ro, 0o555);
      let argv: string[] = ["sh", "-s", "--", "--base", `${base}/good`, "--prefix", ro];
      if (process.getuid?.() === 0) {
        const setpriv = which("setpriv");
        const probe = setpriv ? Bun.spawnSync([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "true"]) : null;
        if (!probe || probe.exitCode !== 0) {
          console.warn("install.test.ts: running as root without a working setpriv; read-only directory case skipped");
          return;
        }
        chmodSync(s.dir, 0o755);
        argv = [setpriv!, "--reuid=65534", "--regid=65534", "--clear-groups", ...argv];
      }
      mark = requests.length;
      const r2 = await run(argv, { env: env(s.home), cwd: "/", stdin: readFileSync(INSTALL_SCRIPT, "utf8") });
      expect(r2.code).toBe(1);
      expect(r2.stderr).toContain(`${ro} is not writable`);
      expect(requestsSince(mark)).toEqual([]);
      expect(listing(ro)).toEqual([]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("no sha256sum and no shasum: refused, since the download could not be verified", async () => {
    const s = scene();
    try {
      const shims = toolDir(join(s.dir, "tools"), [...BASE_TOOLS, "curl"]);
      const mark = requests.length;
      const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], { PATH: shims, HOME: s.home, LC_ALL: "C" });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("neither sha256sum nor shasum is installed");
      expect(requestsSince(mark)).toEqual([]);
      expect(listing(s.prefix)).toEqual([]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("shasum works when sha256sum is absent", async () => {
    if (!which("shasum")) return;
    const s = scene();
    try {
      const shims = toolDir(join(s.dir, "tools"), [...BASE_TOOLS, "curl", "shasum", "perl"]);
      const r = await install(["--base", `${base}/good`, "--prefix", s.prefix], { PATH: shims, HOME: s.home, LC_ALL: "C" });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(listing(s.prefix)).toEqual(["vigil"]);
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test("usage: --help, unknown flags and bad values", async () => {
    const s = scene();
    try {
      const help = await install(["--help"], env(s.home));
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("--prefix DIR");
      for (const [args, message] of [
        [["--frobnicate"], "unknown argument '--frobnicate'"],
        [["--prefix"], "--prefix needs a value"],
        [["--version", "1.0;rm"], "not a version"],
        [["--base", "ftp://example"], "must be an http(s) URL"],
      ] as const) {
        const r = await install([...args], env(s.home));
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(message);
      }
    } finally {
      rmSync(s.dir, { recursive: true, force: true });
    }
  });
});

describe("shell scripts", () => {
  test("install.sh and release.sh are shellcheck-clean (POSIX sh)", async () => {
    const shellcheck = which("shellcheck");
    if (!shellcheck) {
      console.warn("install.test.ts: shellcheck not installed, lint skipped (apt-get install shellcheck)");
      return;
    }
    const r = await run([shellcheck, "--shell=sh", INSTALL_SCRIPT, RELEASE_SCRIPT]);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  test("install.sh parses under every sh here", async () => {
    for (const shell of ["sh", "dash", "bash", "busybox"]) {
      const p = which(shell);
      if (!p) continue;
      const argv = shell === "busybox" ? [p, "sh", "-n", INSTALL_SCRIPT] : [p, "-n", INSTALL_SCRIPT];
      const r = await run(argv);
      expect({ shell, code: r.code, stderr: r.stderr }).toEqual({ shell, code: 0, stderr: "" });
    }
  });
});
