/**
 * Real captures for the `vigil verify` tests, and ways to damage copies of them.
 *
 * `makeCapture(kind)` runs `vigil wrap --capture-dir` in front of the fixture server with a scripted
 * client (initialize, tools/list, allowed and denied tools/call) and copies the resulting capture
 * into a temp dir of its own, which outlives the wrap session:
 *
 *   clean     client EOF, server exits 0                        → wrap exits 0
 *   exit7     the server exits 7 while the client is connected  → wrap exits 7
 *   sigkill   the server SIGKILLs itself while connected         → wrap exits 137
 *   poisoned  vigil from SOURCE with the test-only fault seam
 *             VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES: the decision log "fills" mid-line,
 *             later decisions are dropped                       → wrap exits 3
 *
 * The committed goldens under test/fixtures/captures/<kind>/ were made by this file:
 *
 *   bun scripts/build.ts --host && bun test/helpers/capture.ts --write-goldens
 *
 * (v1, frozen: today's wrap writes v2, so regenerating them needs the binary of a v1 tree). The v2
 * goldens, unsigned and signed, and a signed serve session are made by test/helpers/goldens-v2.ts.
 *
 * Tampering helpers work on a copy (`copyCapture`). Most tampered variants should be caught by a
 * specific deeper check, not merely by the manifest's hash of the changed file: pass
 * `{ rehash: true }` so the manifest entry of the changed file is recomputed and matches again.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ExitStatus, type TmpDir, tmpDir } from "./fixture.ts";
import { CAPTURE, REPO_ROOT, VIGIL_BIN, VIGIL_SOURCE, type WrapSession, disposeWrapSessions, sha256Hex, startWrap } from "./wrap.ts";

export { CAPTURE, VIGIL_BIN, sha256Hex };

export type CaptureKind = "clean" | "exit7" | "sigkill" | "poisoned";
export const CAPTURE_KINDS: readonly CaptureKind[] = ["clean", "exit7", "sigkill", "poisoned"];

/** Committed golden captures, one directory per kind. */
export const GOLDEN_ROOT = resolve(import.meta.dir, "../fixtures/captures");
export const goldenDir = (kind: CaptureKind) => join(GOLDEN_ROOT, kind);

/** The policy every capture is made with: `exec` and `delete_all` are denied, everything else allowed. */
export const CAPTURE_POLICY = { version: 1, tools: { deny: ["exec", "delete_all"] } };

export const FAULT_ENV = "VIGIL_TEST_DECISION_LOG_FAIL_AFTER_BYTES";
/** One decision line is ~640 bytes: 1000 bytes keeps line 0 whole and cuts line 1 in the middle. */
export const DEFAULT_POISON_BYTES = 1000;

export interface MadeCapture extends Disposable {
  kind: CaptureKind;
  /** The temp dir that holds `dir` (and nothing the verifier reads). */
  root: string;
  /** The capture directory. */
  dir: string;
  /** How `vigil wrap` ended. */
  wrapExit: ExitStatus;
  /** vigil's stderr during the run. */
  wrapStderr: string;
  cleanup(): void;
}

export interface MakeCaptureOptions {
  /** Bytes before the poisoned decision log "fills" (kind poisoned only). */
  poisonBytes?: number;
  /** More `vigil wrap` flags, e.g. `--signing-key FILE --checkpoint-every 2` (goldens-v2.ts). */
  flags?: string[];
}

/** Produces a real capture of the given kind in a fresh temp dir (see the header). */
export async function makeCapture(kind: CaptureKind, options: MakeCaptureOptions = {}): Promise<MadeCapture> {
  const fixture =
    kind === "exit7" ? { FIXTURE_EXIT_AFTER: 4, FIXTURE_EXIT_CODE: 7 } : kind === "sigkill" ? { FIXTURE_SELF_KILL_AFTER: 4 } : {};
  const s = startWrap({
    policy: CAPTURE_POLICY,
    flags: options.flags ?? [],
    fixture,
    ...(kind === "poisoned"
      ? { vigil: VIGIL_SOURCE, env: { ...process.env, [FAULT_ENV]: String(options.poisonBytes ?? DEFAULT_POISON_BYTES) } }
      : {}),
  });
  try {
    const wrapExit = await script(kind, s);
    const out = tmpDir(`vigil-capture-${kind}`);
    const dir = join(out.path, "capture");
    cpSync(s.captureDir!, dir, { recursive: true });
    return {
      kind,
      root: out.path,
      dir,
      wrapExit,
      wrapStderr: s.client.stderrText(),
      cleanup: out.cleanup,
      [Symbol.dispose]: out.cleanup,
    };
  } finally {
    await s.dispose();
  }
}

/** The client side of each kind; resolves with how vigil ended. */
async function script(kind: CaptureKind, s: WrapSession): Promise<ExitStatus> {
  const ok = (r: { result?: any; error?: unknown }, what: string) => {
    if (r.error !== undefined || r.result === undefined) throw new Error(`makeCapture(${kind}): ${what} failed: ${JSON.stringify(r)}`);
    return r.result;
  };
  ok(await s.initialize(), "initialize"); // server answer 1
  ok(await s.request("tools/list"), "tools/list"); // 2
  ok(await s.call("echo", { text: "hello" }), "echo"); // 3 (allowed; in poisoned: decision line 0)
  const denied = ok(await s.call("exec", { cmd: "rm -rf /" }), "exec"); // answered by vigil (poisoned: line 1 cut)
  if (denied.isError !== true) throw new Error(`makeCapture(${kind}): exec was not denied`);
  if (kind === "exit7" || kind === "sigkill") {
    // Answer 4 is the server's last: it then exits 7 / SIGKILLs itself while we are still connected.
    ok(await s.call("read_file", { path: "/workspace/a.txt" }), "read_file");
    const status = await s.client.exited(15_000);
    s.client.closeStdin();
    return status;
  }
  // clean: allowed and denied; poisoned: both refused E_EVIDENCE_UNAVAILABLE and counted as dropped.
  ok(await s.call("read_file", { path: "/workspace/a.txt" }), "read_file");
  ok(await s.call("delete_all", {}), "delete_all");
  return s.finish(15_000);
}

// ---------------------------------------------------------------------------------------------
// Copies and tampering

export interface CaptureCopy extends Disposable {
  /** Temp dir holding `dir`; a place for symlink targets and other files the verifier must not see. */
  root: string;
  dir: string;
  cleanup(): void;
}

/** Copies a capture directory into a fresh temp dir (`<root>/capture`). */
export function copyCapture(src: string): CaptureCopy {
  const t: TmpDir = tmpDir("vigil-verify-copy");
  const dir = join(t.path, "capture");
  mkdirSync(dir, { mode: 0o700 });
  for (const name of readdirSync(src)) cpSync(join(src, name), join(dir, name));
  return { root: t.path, dir, cleanup: t.cleanup, [Symbol.dispose]: t.cleanup };
}

export interface TamperOptions {
  /** Recompute the manifest entry of the changed file so the manifest agrees with the new bytes. */
  rehash?: boolean;
}

/** Rewrites one capture file with `edit(bytes)`; optionally re-hashes it in the manifest. */
export function tamper(dir: string, file: string, edit: (bytes: Buffer) => Uint8Array | string, options: TamperOptions = {}): void {
  const path = join(dir, file);
  writeFileSync(path, edit(readFileSync(path)));
  if (options.rehash) rehashManifest(dir, [file]);
}

/** Parses a JSON record file, lets `edit` change it (or return a replacement), writes it back as one line. */
export function tamperJson(dir: string, file: string, edit: (record: any) => any, options: TamperOptions = {}): void {
  tamper(dir, file, (bytes) => {
    const record = JSON.parse(bytes.toString("utf8"));
    const out = edit(record);
    return `${JSON.stringify(out === undefined ? record : out)}\n`;
  }, options);
}

/** Rewrites the manifest (not itself hashed) with `edit`. */
export function tamperManifest(dir: string, edit: (manifest: any) => void): void {
  const path = join(dir, CAPTURE.manifest);
  const manifest = JSON.parse(readFileSync(path, "utf8"));
  edit(manifest);
  writeFileSync(path, `${JSON.stringify(manifest)}\n`);
}

/**
 * Makes the manifest entries of `files` match what is on disk again: recomputed when the file
 * exists, dropped when it does not. Only regular files are read (a symlink keeps its old entry).
 */
export function rehashManifest(dir: string, files: string[]): void {
  tamperManifest(dir, (m) => {
    for (const name of files) {
      const path = join(dir, name);
      if (!existsSync(path)) {
        delete m.files[name];
        continue;
      }
      const bytes = readFileSync(path);
      m.files[name] = { bytes: bytes.length, sha256: sha256Hex(bytes) };
    }
  });
}

/** Removes a capture file; with `rehash` its manifest entry goes too. */
export function removeFile(dir: string, file: string, options: TamperOptions = {}): void {
  rmSync(join(dir, file), { force: true });
  if (options.rehash) rehashManifest(dir, [file]);
}

/** The complete lines of an NDJSON buffer, each with its "\n", and the bytes after the last newline. */
export function ndjsonLines(bytes: Uint8Array): { lines: Buffer[]; tail: Buffer } {
  const buf = Buffer.from(bytes);
  const lines: Buffer[] = [];
  let start = 0;
  for (let nl = buf.indexOf(0x0a); nl !== -1; nl = buf.indexOf(0x0a, start)) {
    lines.push(buf.subarray(start, nl + 1));
    start = nl + 1;
  }
  return { lines, tail: buf.subarray(start) };
}

// ---------------------------------------------------------------------------------------------
// Running verify

export interface VerifyRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface VerifyJson {
  verdict: "closed" | "incomplete" | "unknown";
  reasons: { code: string; file: string; message: string }[];
  session_id: string | null;
  server: { exit_code: number | null; signal: number | null } | null;
  decisions: { written: number | null; dropped: number | null; verified: number };
  authentication: {
    authenticated: boolean;
    keyid: string | null;
    covered: { files: string[]; logs: Record<string, { count: number; head: string }>; checkpoints: number } | null;
  };
}

/** `dist/vigil verify ARGS…` to completion (bounded). */
export function runVerify(args: string[], timeoutMs = 30_000): VerifyRun {
  const r = Bun.spawnSync([VIGIL_BIN, "verify", ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: timeoutMs });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** `dist/vigil verify DIR --json [extra…]`, parsed; throws with the output when stdout is not one JSON document. */
export function verifyJson(dir: string, extra: string[] = []): VerifyJson & { code: number | null; stderr: string } {
  const r = runVerify([dir, "--json", ...extra]);
  let doc: VerifyJson;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    throw new Error(`verify --json printed no JSON (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return { ...doc, code: r.code, stderr: r.stderr };
}

export const codesOf = (doc: { reasons: { code: string }[] }) => doc.reasons.map((r) => r.code);

// ---------------------------------------------------------------------------------------------
// Regenerating the committed goldens

if (import.meta.main) {
  if (!process.argv.includes("--write-goldens")) {
    console.error("usage: bun test/helpers/capture.ts --write-goldens   (rewrites test/fixtures/captures/*)");
    process.exit(64);
  }
  if (!existsSync(VIGIL_BIN)) throw new Error(`${VIGIL_BIN} is missing: bun scripts/build.ts --host`);
  for (const kind of CAPTURE_KINDS) {
    const made = await makeCapture(kind);
    // The v1 goldens are frozen: a wrap that writes v2 must not overwrite them.
    const format = JSON.parse(readFileSync(join(made.dir, CAPTURE.manifest), "utf8")).format;
    if (format !== "vigil.capture.v1") throw new Error(`${kind}: this vigil writes ${format}; the v1 goldens need a v1 build (v2: test/helpers/goldens-v2.ts)`);
    const dest = goldenDir(kind);
    rmSync(dest, { recursive: true, force: true });
    mkdirSync(dest, { recursive: true });
    for (const name of readdirSync(made.dir)) cpSync(join(made.dir, name), join(dest, name));
    console.log(`${kind}: wrap exit ${made.wrapExit.code ?? made.wrapExit.signal} → ${dest.slice(REPO_ROOT.length + 1)}`);
    made.cleanup();
  }
  await disposeWrapSessions();
}
