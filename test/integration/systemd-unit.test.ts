/**
 * examples/systemd/vigil-serve.service (issue 15 item 6), checked three ways:
 *
 * 1. `systemd-analyze verify` (Debian's `systemd` package; `make debian-tools` installs it where
 *    missing) on a copy whose commands point at the compiled binary (verify refuses a command that
 *    does not exist). verify only warns, and exits 0, on an unknown directive or a bad value, so
 *    the test fails on ANY output line that names the unit (its path, or `vigil-serve.service:`).
 *    Lines that name neither are about the machine, not the unit (a container without a running
 *    systemd may print some): they are printed and ignored. A control copy with a bogus directive
 *    must draw a line naming it, or verify is not checking anything here: then, as when
 *    systemd-analyze is missing, the test skips with the reason — and fails under CI.
 * 2. The unit's commands: ExecStartPre= is ExecStart= plus --check-config (the check judges
 *    exactly what starts), reload checks and then sends SIGHUP, and the check line, run with the
 *    compiled binary against a real config, passes.
 * 3. MemoryDenyWriteExecute=: the compiled binary run under the restriction, applied both ways
 *    systemd applies it (PR_SET_MDWE; its seccomp filter) by test/fixtures/mdwe_exec.py. serve
 *    still runs, and JavaScriptCore's JIT is probed (`bun:jsc` numberOfDFGCompiles, through the
 *    binary's BUN_BE_BUN=1 mode): the unit sets MemoryDenyWriteExecute=yes exactly when the JIT
 *    survives it. Where the kernel cannot apply the restriction, that part skips with the reason.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { VIGIL_BIN, requireBinary } from "../helpers/bin.ts";
import { skipWithout } from "../helpers/debian-tools.ts";
import { tmpDir } from "../helpers/fixture.ts";

const UNIT = resolve(import.meta.dir, "../../examples/systemd/vigil-serve.service");
const MDWE_EXEC = resolve(import.meta.dir, "../fixtures/mdwe_exec.py");
const INSTALLED_BIN = "/usr/local/bin/vigil";
const RUN_BOUND_MS = 60_000;

const tmp = tmpDir("vigil-systemd-unit");
afterAll(() => tmp.cleanup());

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(argv: string[], env: Record<string, string | undefined> = process.env): Run {
  const r = Bun.spawnSync(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: RUN_BOUND_MS, env });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** The unit's `[Service]` settings, in order (comments and blank lines dropped; a key may repeat). */
function serviceSettings(text: string): [string, string][] {
  const out: [string, string][] = [];
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.startsWith("[")) section = line;
    else if (section === "[Service]") {
      const eq = line.indexOf("=");
      out.push([line.slice(0, eq), line.slice(eq + 1)]);
    }
  }
  return out;
}

const unitText = readFileSync(UNIT, "utf8");
const settings = serviceSettings(unitText);
const values = (key: string) => settings.filter(([k]) => k === key).map(([, v]) => v);
const one = (key: string) => {
  const all = values(key);
  expect({ key, count: all.length }).toEqual({ key, count: 1 });
  return all[0]!;
};

/** A copy of the unit named vigil-serve.service whose commands run the compiled binary, with `edit` applied. */
function unitCopy(dir: string, edit: (text: string) => string = (t) => t): string {
  mkdirSync(tmp.file(dir));
  const path = tmp.file(`${dir}/vigil-serve.service`);
  writeFileSync(path, edit(unitText.replaceAll(INSTALLED_BIN, resolve(VIGIL_BIN))));
  return path;
}

/** verify's output split into lines naming the unit file and the others. */
function verify(analyze: string, path: string): { code: number | null; unit: string[]; other: string[] } {
  const r = run([analyze, "verify", path], { ...process.env, SYSTEMD_PAGER: "", SYSTEMD_COLORS: "0", SYSTEMD_LOG_COLOR: "0" });
  const lines = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => l.trim() !== "");
  const names = (l: string) => l.includes(path) || l.includes(`${basename(path)}:`);
  return { code: r.code, unit: lines.filter(names), other: lines.filter((l) => !names(l)) };
}

// ---- 1. systemd-analyze verify -------------------------------------------------------------

function verifyProblem(): { analyze: string; reason: null } | { analyze: null; reason: string } {
  const analyze = Bun.which("systemd-analyze");
  if (analyze === null) return { analyze: null, reason: "systemd-analyze is not installed (the systemd package)" };
  const control = verify(analyze, unitCopy("control", (t) => t.replace("[Service]\n", "[Service]\nNoSuchDirective=1\n")));
  if (!control.unit.some((l) => l.includes("NoSuchDirective"))) {
    return { analyze: null, reason: `systemd-analyze verify does not check units here (a bogus directive drew no warning; exit ${control.code}: ${control.other.slice(0, 3).join(" | ")})` };
  }
  return { analyze, reason: null };
}

const analyzer = verifyProblem();
const SKIP_VERIFY = skipWithout("systemd-unit", analyzer.reason === null ? null : `systemd-analyze verify: ${analyzer.reason}`, "install it with `sudo make debian-tools`");

describe.skipIf(SKIP_VERIFY)("systemd-analyze verify", () => {
  test("the unit draws no warning at all (unknown directive, bad value, missing command)", () => {
    if (analyzer.analyze === null) throw new Error(`${analyzer.reason}: run \`make debian-tools\` as root`);
    requireBinary();
    const r = verify(analyzer.analyze, unitCopy("real"));
    if (r.other.length > 0) console.warn(`systemd-unit: verify lines not naming the unit (about the machine, ignored):\n  ${r.other.join("\n  ")}`);
    expect(r.unit).toEqual([]);
  });

  test("the filter sees a bad value and a missing command (the control for the test above)", () => {
    if (analyzer.analyze === null) throw new Error(`${analyzer.reason}: run \`make debian-tools\` as root`);
    const bad = verify(analyzer.analyze, unitCopy("bad", (t) => t.replace("UMask=0077", "UMask=0099").replaceAll(resolve(VIGIL_BIN), "/nonexistent/vigil")));
    expect(bad.unit.some((l) => l.includes("0099"))).toBe(true);
    expect(bad.unit.some((l) => l.includes("/nonexistent/vigil"))).toBe(true);
  });
});

// ---- 2. the unit's commands ----------------------------------------------------------------

describe("the unit's commands and settings", () => {
  test("ExecStartPre= is ExecStart= plus --check-config; reload checks, then sends SIGHUP", () => {
    const start = one("ExecStart");
    expect(start.startsWith(`${INSTALLED_BIN} serve `)).toBe(true);
    expect(one("ExecStartPre")).toBe(start.replace(`${INSTALLED_BIN} serve `, `${INSTALLED_BIN} serve --check-config `));
    expect(values("ExecReload")).toEqual([one("ExecStartPre"), "/bin/kill -HUP $MAINPID"]);
    expect(start).toContain("--listen 127.0.0.1:8080");
    expect(start).toContain("--state-dir /var/lib/vigil");
  });

  test("the settings the issue asks for", () => {
    const expected: [string, string][] = [
      ["Type", "simple"],
      ["Restart", "on-failure"],
      ["StateDirectory", "vigil"],
      ["NoNewPrivileges", "yes"],
      ["ProtectSystem", "strict"],
      ["ProtectHome", "yes"],
      ["PrivateTmp", "yes"],
      ["RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"],
      ["LockPersonality", "yes"],
      ["EnvironmentFile", "-/etc/vigil/vigil.env"],
    ];
    for (const [key, value] of expected) expect({ key, value: one(key) }).toEqual({ key, value });
  });

  test("the check line, run with the compiled binary on a real config and state dir, passes", () => {
    requireBinary();
    const dir = tmpDir("vigil-unit-check");
    try {
      writeFileSync(dir.file("vigil.json"), JSON.stringify({ model: { provider: "command", command: ["cat"] } }));
      const argv = one("ExecStartPre")
        .split(" ")
        .map((a) => (a === INSTALLED_BIN ? resolve(VIGIL_BIN) : a === "/etc/vigil/vigil.json" ? dir.file("vigil.json") : a === "/var/lib/vigil" ? dir.file("state") : a));
      const r = run(argv);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(r.stdout).toStartWith("vigil serve --check-config: ok\n");
      expect(r.stdout).toContain("mode: daemon, listen http://127.0.0.1:8080");
    } finally {
      dir.cleanup();
    }
  });
});

// ---- 3. MemoryDenyWriteExecute -------------------------------------------------------------

/** Prints whether JSC's DFG JIT compiled a hot function: numberOfDFGCompiles answers 1000000 when the JIT is off. */
const JIT_PROBE = `
const { numberOfDFGCompiles } = require("bun:jsc");
function hot(i) { return (i * 7) % 1000003; }
let s = 0;
const t0 = performance.now();
for (let i = 0; i < 5000000; i++) s = (s + hot(i)) % 1000003;
console.log(JSON.stringify({ dfg: numberOfDFGCompiles(hot), ms: Math.round(performance.now() - t0), s }));
`;
const JIT_OFF = 1_000_000;

function python(): string | null {
  for (const p of ["/usr/bin/python3", Bun.which("python3")]) if (p !== null && p !== undefined && run([p, "-c", "import ctypes"]).code === 0) return p;
  return null;
}

const py = python();
const SKIP_MDWE = skipWithout("systemd-unit", py === null ? "no python3 with ctypes for the MemoryDenyWriteExecute probe" : null, "install python3");

describe.skipIf(SKIP_MDWE)("MemoryDenyWriteExecute= matches what Bun's JIT does under it", () => {
  const probe = tmp.file("jit-probe.js");
  writeFileSync(probe, JIT_PROBE);
  const jit = (prefix: string[]) => {
    const r = run([...prefix, resolve(VIGIL_BIN), probe], { ...process.env, BUN_BE_BUN: "1" });
    if (r.code !== 0) return { ok: false as const, r };
    return { ok: true as const, r, ...(JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { dfg: number; ms: number }) };
  };

  for (const mode of ["prctl", "seccomp"] as const) {
    test(`${mode === "prctl" ? "PR_SET_MDWE (systemd 254+)" : "the seccomp filter (systemd 252)"}: serve runs; the unit's setting follows the JIT`, () => {
      if (py === null) throw new Error("no python3 with ctypes");
      requireBinary();
      const wrap = [py, MDWE_EXEC, mode];
      const applied = run([...wrap, "/bin/true"]);
      if (applied.code === 97) {
        console.warn(`systemd-unit: MemoryDenyWriteExecute (${mode}) not testable here: ${applied.stderr.trim()}`);
        return;
      }
      expect(applied.code).toBe(0);

      // serve itself runs under it: the check, and a stdio session that ends at stdin EOF.
      const dir = tmpDir(`vigil-mdwe-${mode}`);
      try {
        writeFileSync(dir.file("vigil.json"), JSON.stringify({ model: { provider: "command", command: ["cat"] } }));
        const serve = [resolve(VIGIL_BIN), "serve", "--config", dir.file("vigil.json"), "--state-dir", dir.file("state")];
        const checked = run([...wrap, ...serve, "--check-config"]);
        expect({ code: checked.code, stderr: checked.stderr }).toEqual({ code: 0, stderr: "" });
        const served = run([...wrap, ...serve]);
        expect(served.code).toBe(0);
      } finally {
        dir.cleanup();
      }

      const free = jit([]);
      expect(free.ok).toBe(true);
      if (!free.ok) return;
      // Without the restriction the JIT must be on, or the probe says nothing (BUN_JSC_useJIT=0 in the environment?).
      expect(free.dfg).toBeLessThan(JIT_OFF);
      const held = jit(wrap);
      expect(held.ok).toBe(true);
      if (!held.ok) return;
      const jitSurvives = held.dfg < JIT_OFF;
      console.log(`systemd-unit: MemoryDenyWriteExecute (${mode}): serve runs; JIT ${jitSurvives ? "on" : "off"} (hot loop ${held.ms} ms vs ${free.ms} ms without)`);
      expect({ mode, jitSurvives, unitSetsIt: values("MemoryDenyWriteExecute").includes("yes") }).toEqual({ mode, jitSurvives, unitSetsIt: jitSurvives });
    });
  }
});
