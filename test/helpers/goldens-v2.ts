/**
 * The committed v2 goldens (vigil.capture.v2, chained logs), made by real runs of the compiled
 * binary, and how to remake them:
 *
 *   test/fixtures/captures-v2/<kind>/          `vigil wrap --capture-dir`, no key (kinds of capture.ts:
 *                                              clean, exit7, sigkill, poisoned)
 *   test/fixtures/captures-v2-signed/<kind>/   the same with `--signing-key K --checkpoint-every 2`,
 *                                              plus `died`: vigil itself SIGKILLed once its signed
 *                                              checkpoints cover every record (no stop record,
 *                                              manifest or envelope)
 *   test/fixtures/sessions-signed/inbox/       a `vigil serve --session inbox` (stdio) run with
 *                                              `evidence.signing_key`, `checkpoint_every: 2`: one
 *                                              governed tool call, one polled event delivered, then
 *                                              EOF (stops/1.dsse.json); the evidence files only
 *   test/fixtures/keys/golden.pub              the public key all of them are signed with
 *
 *   bun scripts/build.ts --host && bun test/helpers/goldens-v2.ts --write-goldens-v2
 *
 * Each run makes a fresh key pair with `vigil keygen` in a temp dir and rewrites golden.pub; the
 * private key is never kept (nothing can be re-signed with it later, which is the point). As with
 * capture.ts, `poisoned` runs vigil from source for its test-only fault seam. Only files vigil
 * writes as evidence are copied: a serve session's transcript and pending log stay behind.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { CAPTURE_KINDS, CAPTURE_POLICY, type CaptureKind, type MadeCapture, makeCapture } from "./capture.ts";
import { tmpDir } from "./fixture.ts";
import { waitFor } from "./wait.ts";
import { CAPTURE, REPO_ROOT, VIGIL_BIN, disposeWrapSessions, startWrap } from "./wrap.ts";

const FIXTURES = resolve(import.meta.dir, "../fixtures");
export const GOLDEN_V2_ROOT = join(FIXTURES, "captures-v2");
export const GOLDEN_V2_SIGNED_ROOT = join(FIXTURES, "captures-v2-signed");
export const GOLDEN_SESSIONS_ROOT = join(FIXTURES, "sessions-signed");
/** The public key of every signed v2 golden; its private half was thrown away. */
export const GOLDEN_PUBLIC_KEY = join(FIXTURES, "keys", "golden.pub");
export const GOLDEN_CHECKPOINT_EVERY = 2;

export type SignedKind = CaptureKind | "died";
export const SIGNED_KINDS: readonly SignedKind[] = [...CAPTURE_KINDS, "died"];
export const GOLDEN_SESSION = "inbox";
export const GOLDEN_SESSION_SOURCE = "vigil://test/golden-session";

export const goldenV2Dir = (kind: CaptureKind) => join(GOLDEN_V2_ROOT, kind);
export const goldenV2SignedDir = (kind: SignedKind) => join(GOLDEN_V2_SIGNED_ROOT, kind);
export const goldenSessionDir = () => join(GOLDEN_SESSIONS_ROOT, GOLDEN_SESSION);

const CHECKPOINTS = "checkpoints.ndjson";
const ndjsonCount = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").split("\n").length - 1 : 0);
const lastLine = (path: string) => readFileSync(path, "utf8").trimEnd().split("\n").at(-1)!;

/** The payload of the last complete line of checkpoints.ndjson, or null. */
function lastCheckpoint(dir: string): { logs: Record<string, { count: number }> } | null {
  const path = join(dir, CHECKPOINTS);
  if (ndjsonCount(path) === 0) return null;
  return JSON.parse(Buffer.from(JSON.parse(lastLine(path)).payload, "base64").toString("utf8"));
}

/**
 * A signed wrap session whose vigil is SIGKILLed after its answers, once the last checkpoint names
 * every complete record of both logs (the scripted session writes an even number of records, so a
 * checkpoint every 2 records reaches them all): verify says incomplete, stop_missing_checkpointed.
 */
export async function makeDiedCapture(signingKey: string): Promise<Omit<MadeCapture, "kind">> {
  const s = startWrap({ policy: CAPTURE_POLICY, flags: ["--signing-key", signingKey, "--checkpoint-every", String(GOLDEN_CHECKPOINT_EVERY)] });
  try {
    await s.initialize();
    await s.request("tools/list");
    await s.call("echo", { text: "hello" });
    await s.call("exec", { cmd: "rm -rf /" });
    const dir = s.captureDir!;
    const covered = () => {
      const cp = lastCheckpoint(dir);
      if (cp === null) return false;
      const logs = [CAPTURE.decisions, CAPTURE.receipts];
      return logs.every((log) => (cp.logs[log]?.count ?? 0) === ndjsonCount(join(dir, log))) && ndjsonCount(join(dir, CAPTURE.receipts)) >= 4;
    };
    await waitFor(covered, { timeoutMs: 10_000, label: "a checkpoint covering every record", show: () => s.client.stderrText() });
    process.kill(s.client.pid, "SIGKILL");
    const wrapExit = await s.client.exited(10_000);
    const out = tmpDir("vigil-capture-died");
    const copy = join(out.path, "capture");
    cpSync(dir, copy, { recursive: true });
    return { root: out.path, dir: copy, wrapExit, wrapStderr: s.client.stderrText(), cleanup: out.cleanup, [Symbol.dispose]: out.cleanup };
  } finally {
    await s.dispose();
  }
}

/** `vigil keygen --out PREFIX`; the key id it printed. */
export function keygen(prefix: string): { key: string; pub: string; keyid: string } {
  const r = Bun.spawnSync([VIGIL_BIN, "keygen", "--out", prefix], { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 15_000 });
  if (r.exitCode !== 0) throw new Error(`vigil keygen failed (${r.exitCode}): ${r.stderr.toString()}`);
  return { key: `${prefix}.key`, pub: `${prefix}.pub`, keyid: r.stdout.toString().trim() };
}

/**
 * A signed serve session (see the header) in `dest`: decisions.ndjson, events.ndjson,
 * checkpoints.ndjson and stops/. The serve helpers are loaded here only (they start servers).
 */
export async function makeSessionGolden(signingKey: string, dest: string): Promise<void> {
  const { Cleanups } = await import("./cleanups.ts");
  const { StdioServe, eventsEnvironment, httpServer, isEventFrame, isStatus, waitRuns } = await import("./events-serve.ts");
  const { fixtureArgv } = await import("./fixture.ts");
  const { killServerGroup } = await import("./serve.ts");
  const cleanups = new Cleanups();
  try {
    const stdio = tmpDir("vigil-golden-session");
    cleanups.add(() => stdio.cleanup());
    cleanups.add(() => killServerGroup(stdio.file("grandchild.pid")));
    const [command, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: stdio.file("grandchild.pid") });
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [
        { name: "fx", transport: "stdio", command, args },
        httpServer(fx!, "tickets", [{ name: "ticket.updated", delivery: "poll", instructions: "Reply." }]),
      ],
      config: { evidence: { event_source: GOLDEN_SESSION_SOURCE, signing_key: signingKey, checkpoint_every: GOLDEN_CHECKPOINT_EVERY } },
    });
    const serve = StdioServe.start(cleanups, env, GOLDEN_SESSION);
    await serve.until(isStatus("subscribed"));
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "hello" } }] }, { text: "done" }]);
    serve.send({ type: "prompt", id: "p1", message: "say hello" });
    await serve.until((f) => f.type === "run_end");
    await env.fixture!.control("emit", { name: "ticket.updated", event_id: "t-1", data: { ticket_id: "T-1" } });
    await serve.until(isEventFrame("t-1"));
    await waitRuns(env.model, "t-1");
    await waitFor(() => serve.count((f) => f.type === "run_end") >= 2, { timeoutMs: 15_000, label: "the event's run ends" });
    serve.client.closeStdin();
    const exit = await serve.client.exited(15_000);
    if (exit.code !== 0) throw new Error(`serve exited ${JSON.stringify(exit)}:\n${serve.client.stderrText()}`);
    const dir = join(env.stateDir, "sessions", GOLDEN_SESSION);
    mkdirSync(join(dest, "stops"), { recursive: true });
    for (const name of ["decisions.ndjson", "events.ndjson", CHECKPOINTS]) copyAsFixture(join(dir, name), join(dest, name));
    for (const name of readdirSync(join(dir, "stops"))) copyAsFixture(join(dir, "stops", name), join(dest, "stops", name));
  } finally {
    await cleanups.run();
  }
}

/** vigil writes evidence 0600; committed, a golden is an ordinary file (as a checkout makes it). */
function copyAsFixture(from: string, to: string): void {
  cpSync(from, to);
  chmodSync(to, 0o644);
}

function replaceDir(made: Omit<MadeCapture, "kind">, dest: string): void {
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const name of readdirSync(made.dir)) copyAsFixture(join(made.dir, name), join(dest, name));
  console.log(`wrap exit ${made.wrapExit.code ?? made.wrapExit.signal} → ${dest.slice(REPO_ROOT.length + 1)}`);
  made.cleanup();
}

if (import.meta.main) {
  if (!process.argv.includes("--write-goldens-v2")) {
    console.error("usage: bun test/helpers/goldens-v2.ts --write-goldens-v2   (rewrites test/fixtures/{captures-v2,captures-v2-signed,sessions-signed}/*, keys/golden.pub)");
    process.exit(64);
  }
  if (!existsSync(VIGIL_BIN)) throw new Error(`${VIGIL_BIN} is missing: bun scripts/build.ts --host`);
  const keys = tmpDir("vigil-golden-key");
  try {
    const key = keygen(join(keys.path, "golden"));
    const signed = ["--signing-key", key.key, "--checkpoint-every", String(GOLDEN_CHECKPOINT_EVERY)];
    for (const kind of CAPTURE_KINDS) replaceDir(await makeCapture(kind), goldenV2Dir(kind));
    for (const kind of CAPTURE_KINDS) replaceDir(await makeCapture(kind, { flags: signed }), goldenV2SignedDir(kind));
    replaceDir(await makeDiedCapture(key.key), goldenV2SignedDir("died"));
    await disposeWrapSessions();
    rmSync(goldenSessionDir(), { recursive: true, force: true });
    await makeSessionGolden(key.key, goldenSessionDir());
    console.log(`serve session → ${goldenSessionDir().slice(REPO_ROOT.length + 1)}`);
    mkdirSync(join(FIXTURES, "keys"), { recursive: true });
    copyAsFixture(key.pub, GOLDEN_PUBLIC_KEY);
    console.log(`key ${key.keyid} → ${GOLDEN_PUBLIC_KEY.slice(REPO_ROOT.length + 1)} (private key discarded)`);
  } finally {
    keys.cleanup();
    await disposeWrapSessions();
  }
}
