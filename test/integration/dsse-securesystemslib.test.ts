/**
 * Independent verification (issue 14): vigil's DSSE envelopes and checkpoints checked by an
 * implementation that is not ours — Debian's python3-securesystemslib (0.26, `SSlibKey` Ed25519
 * over a PAE built in Python, test/fixtures/dsse_verify.py) — and the Statement's subjects checked
 * by coreutils' `sha256sum -c`.
 *
 * `make debian-tools` (and .ci/run, as root) installs the package. Where it is missing the tests
 * skip with a printed reason — except under CI, where they fail: CI must have it.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { chainAnchor } from "../../src/evidence/chain.ts";
import { ChainedLog } from "../../src/evidence/chained-log.ts";
import { Checkpointer } from "../../src/evidence/checkpoints.ts";
import { CHECKPOINT_PAYLOAD_TYPE, type DsseEnvelope, IN_TOTO_PAYLOAD_TYPE, signEnvelope } from "../../src/evidence/dsse.ts";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { generateKeyPair, loadSigningKey } from "../../src/evidence/keys.ts";
import { CHECKPOINT_TYPE, STATEMENT_TYPE, WRAP_SESSION_PREDICATE, statement } from "../../src/evidence/statement.ts";
import { FakeScheduler } from "../helpers/fake-scheduler.ts";
import { type TmpDir, tmpDir } from "../helpers/fixture.ts";
import { VIGIL_BIN, requireBinary } from "../helpers/bin.ts";
import { skipWithout } from "../helpers/debian-tools.ts";
import { disposeWrapSessions, sha256Hex, startWrap } from "../helpers/wrap.ts";

const VERIFIER = resolve(import.meta.dir, "../fixtures/dsse_verify.py");

/**
 * The interpreter that imports securesystemslib.signer: VIGIL_PYTHON when set (only it), else the
 * first of Debian's own /usr/bin/python3 (where the Debian package installs; a pyenv/venv `python3`
 * first on PATH would not see it) and `python3` on PATH.
 */
function findPython(): { python: string; version: string } | { python: null; reason: string } {
  const override = process.env.VIGIL_PYTHON;
  const candidates = (override ? [override] : ["/usr/bin/python3", Bun.which("python3")]).filter(
    (p): p is string => typeof p === "string" && p !== "",
  );
  if (candidates.length === 0) return { python: null, reason: "no python3 found" };
  const tried: string[] = [];
  for (const python of candidates) {
    if (!existsSync(python)) {
      tried.push(`${python}: missing`);
      continue;
    }
    const r = Bun.spawnSync([python, "-c", "import securesystemslib, securesystemslib.signer; print(securesystemslib.__version__)"], {
      stdout: "pipe",
      stderr: "pipe",
      timeout: 20_000,
    });
    if (r.exitCode === 0) return { python, version: r.stdout.toString().trim() };
    tried.push(`${python}: ${r.stderr.toString().trim().split("\n").at(-1) ?? `exit ${r.exitCode}`}`);
  }
  return { python: null, reason: `no python3 with securesystemslib (${tried.join("; ")})` };
}

const found = findPython();
const MISSING = found.python === null ? found.reason : null;
const SKIP = skipWithout("dsse-securesystemslib", MISSING, "install it with `sudo make debian-tools`");

/** The interpreter; under CI a missing one fails the test that needs it (never a silent skip). */
function python(): string {
  if (found.python === null) throw new Error(`${found.reason}: run \`make debian-tools\` as root (CI must have python3-securesystemslib)`);
  return found.python;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(argv: string[], cwd?: string): Run {
  const r = Bun.spawnSync(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 30_000, ...(cwd ? { cwd } : {}) });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** dsse_verify.py PUB FILE under Debian's securesystemslib. */
const pyVerify = (pub: string, file: string) => run([python(), VERIFIER, pub, file]);

/** `sha256sum --strict -c SUMS` run inside `dir`. */
const sha256sumCheck = (sums: string, dir: string) => run(["sha256sum", "--strict", "-c", sums], dir);

const temps: TmpDir[] = [];
afterAll(() => {
  for (const t of temps) t.cleanup();
});
function temp(prefix: string): TmpDir {
  const t = tmpDir(prefix);
  temps.push(t);
  return t;
}

/** A fresh key pair in its own temp dir: the signer (our side) and the public key file (theirs). */
function keyPair(name = "signer") {
  const t = temp(`vigil-sslib-key-${name}`);
  const made = generateKeyPair(t.file(name));
  return { signer: loadSigningKey(made.keyPath), pub: made.pubPath, keyid: made.keyid };
}

/** A capture-like dir of real files and a signed in-toto statement over them (our code). */
function signedStatement(signer = keyPair()) {
  const t = temp("vigil-sslib-capture");
  const dir = t.file("capture");
  mkdirSync(dir, { mode: 0o700 });
  const files: Record<string, string> = {
    "capture.json": `${JSON.stringify({ type: "vigil.capture.v2", files: {} })}\n`,
    "decisions.ndjson": `${JSON.stringify({ vigilseq: 0, data: { tool: "echo" } })}\n${JSON.stringify({ vigilseq: 1, data: { tool: "exec" } })}\n`,
    "server-stderr.log": "fixture-server ready pid=1\n",
    "session-stop.json": `${JSON.stringify({ type: "vigil.mcp.session.stop.v2" })}\n`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text, { mode: 0o600 });
  const subjects = Object.entries(files).map(([name, text]) => ({ name, digest: { sha256: sha256Hex(text) } }));
  const st = statement(subjects, WRAP_SESSION_PREDICATE, { session_id: "s-1", event_source: "vigil://test/sslib" });
  const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(st)), signer.signer);
  const envFile = join(dir, "capture.dsse.json");
  writeFileSync(envFile, `${JSON.stringify(envelope)}\n`, { mode: 0o600 });
  return { root: t.path, dir, envFile, envelope, names: Object.keys(files).sort(), key: signer };
}

/** A log's chain head as coreutils sees it: `wc -l` lines, `sha256sum` of the last line with its newline. */
function coreutilsHead(dir: string, name: string): { count: number; head: string } {
  const r = run(["sh", "-c", 'wc -l <"$1"; tail -n 1 "$1" | sha256sum', "sh", name], dir);
  const [count, sum] = r.stdout.trim().split("\n");
  return { count: Number(count), head: sum!.split(" ")[0]! };
}

const writeEnvelope = (file: string, env: DsseEnvelope) => writeFileSync(file, `${JSON.stringify(env)}\n`);

describe.skipIf(SKIP)("DSSE verified by Debian's python3-securesystemslib", () => {
  test("securesystemslib is the Debian 0.26 line or later, with the signer API", () => {
    expect(found.python).not.toBeNull();
    const r = run([python(), "-c", "from securesystemslib.signer import SSlibKey, Signature; print('ok')"]);
    expect(r.stdout.trim()).toBe("ok");
  });

  test("a signed in-toto statement verifies, and sha256sum -c checks its subjects against the files", () => {
    const c = signedStatement();
    const r = pyVerify(c.key.pub, c.envFile);
    expect(r.stderr).toContain(`envelope 1: ok keyid=${c.key.keyid} payloadType=${IN_TOTO_PAYLOAD_TYPE}`);
    expect(r.stderr).toContain(`_type=${STATEMENT_TYPE} predicateType=${WRAP_SESSION_PREDICATE}`);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.map((l) => l.split("  ")[1])).toEqual(c.names);

    const sums = join(c.root, "SHA256SUMS");
    writeFileSync(sums, r.stdout);
    const ok = sha256sumCheck(sums, c.dir);
    expect(ok.stdout.trimEnd().split("\n")).toEqual(c.names.map((n) => `${n}: OK`));
    expect(ok.code).toBe(0);

    // The check is real: one changed byte of a subject file and sha256sum refuses it.
    const target = join(c.dir, "decisions.ndjson");
    writeFileSync(target, readFileSync(target, "utf8").replace("echo", "ech0"));
    const bad = sha256sumCheck(sums, c.dir);
    expect(bad.stdout).toContain("decisions.ndjson: FAILED");
    expect(bad.code).toBe(1);
  });

  test("checkpoints.ndjson written by the Checkpointer over chained logs verifies line by line", () => {
    const key = keyPair("checkpoints");
    const t = temp("vigil-sslib-checkpoints");
    const source = "vigil://test/sslib";
    const session = "sess-sslib-1";
    const scheduler = new FakeScheduler();
    const failures: string[] = [];
    const cp = new Checkpointer({
      file: EvidenceLog.createNew(t.file("checkpoints.ndjson")),
      signer: key.signer,
      eventSource: source,
      sessionId: session,
      every: 2,
      seconds: 60,
      scheduler,
      onFailure: (m) => failures.push(m),
    });
    const logs = ["decisions.ndjson", "receipts.ndjson"].map((name) => {
      const log = EvidenceLog.createNew(t.file(name));
      const chained = new ChainedLog(log, name, { count: 0, head: chainAnchor(source, session, name) }, () => cp.noteWritten());
      cp.add({ name, head: () => chained.head(), sync: () => chained.sync() });
      return { log, chained };
    });
    const [decisions, receipts] = logs as [(typeof logs)[0], (typeof logs)[0]];
    for (let i = 0; i < 3; i++) {
      expect(decisions.chained.append({ type: "vigil.mcp.decision.v1", data: { seq: i } })).toBe(true);
      expect(receipts.chained.append({ type: "vigil.mcp.receipt.v1", data: { n: i } })).toBe(true);
    }
    expect(decisions.chained.append({ type: "vigil.mcp.decision.v1", data: { seq: 3 } })).toBe(true);
    scheduler.advance(60_000); // the 7th record is covered by the timer's checkpoint
    cp.close();
    for (const l of logs) l.log.close();
    expect(failures).toEqual([]);
    expect(cp.written).toBe(4);

    const r = pyVerify(key.pub, t.file("checkpoints.ndjson"));
    for (let n = 1; n <= 4; n++) {
      expect(r.stderr).toContain(`envelope ${n}: ok keyid=${key.keyid} payloadType=${CHECKPOINT_PAYLOAD_TYPE} _type=${CHECKPOINT_TYPE}`);
    }
    expect(r.stdout).toBe(""); // a checkpoint is not an in-toto statement: no subjects
    expect(r.code).toBe(0);

    // What the last (verified) checkpoint names is each log's last line, hashed by coreutils.
    const lines = readFileSync(t.file("checkpoints.ndjson"), "utf8").trimEnd().split("\n");
    const last = JSON.parse(Buffer.from(JSON.parse(lines.at(-1)!).payload, "base64").toString("utf8"));
    for (const name of ["decisions.ndjson", "receipts.ndjson"]) expect(last.logs[name]).toEqual(coreutilsHead(t.path, name));

    // One tampered checkpoint line among good ones: refused (exit 1), the others still verified.
    const tampered = lines.map((l, i) => {
      if (i !== 1) return l;
      const env = JSON.parse(l) as DsseEnvelope;
      const payload = Buffer.from(env.payload, "base64").toString("utf8").replace(/"count":(\d+)/, (_, n) => `"count":${Number(n) + 1}`);
      return JSON.stringify({ ...env, payload: Buffer.from(payload).toString("base64") });
    });
    writeFileSync(t.file("tampered.ndjson"), `${tampered.join("\n")}\n`);
    const bad = pyVerify(key.pub, t.file("tampered.ndjson"));
    expect(bad.stderr).toContain("envelope 2: REFUSED signature 0: UnverifiedSignatureError");
    expect(bad.stderr).toContain("envelope 1: ok");
    expect(bad.stderr).toContain("envelope 3: ok");
    expect(bad.code).toBe(1);
  });

  test("a payload with one byte changed is refused", () => {
    const c = signedStatement();
    const payload = Buffer.from(c.envelope.payload, "base64");
    const at = payload.indexOf("s-1");
    payload[at + 2] = "2".charCodeAt(0); // session_id s-1 → s-2: still valid JSON, no longer what was signed
    writeEnvelope(c.envFile, { ...c.envelope, payload: payload.toString("base64") });
    const r = pyVerify(c.key.pub, c.envFile);
    expect(r.stderr).toContain("envelope 1: REFUSED signature 0: UnverifiedSignatureError");
    expect(r.stdout).toBe(""); // no subjects are vouched for
    expect(r.code).toBe(1);
  });

  test("a signature by another key is refused, named by its own key id or relabelled as the trusted one", () => {
    const trusted = keyPair("trusted");
    const c = signedStatement(keyPair("other"));
    // As written: the signature names the other key, which is not the given one.
    const named = pyVerify(trusted.pub, c.envFile);
    expect(named.stderr).toContain(`keyid ${c.key.keyid} is not the given key's (${trusted.keyid})`);
    expect(named.code).toBe(1);
    // Relabelled with the trusted key's id: securesystemslib's Ed25519 check itself refuses it.
    writeEnvelope(c.envFile, { ...c.envelope, signatures: [{ keyid: trusted.keyid, sig: c.envelope.signatures[0]!.sig }] });
    const relabelled = pyVerify(trusted.pub, c.envFile);
    expect(relabelled.stderr).toContain("REFUSED signature 0: UnverifiedSignatureError");
    expect(relabelled.stdout).toBe("");
    expect(relabelled.code).toBe(1);
    // The same envelope under its real key verifies: the refusals above are about the key.
    writeEnvelope(c.envFile, c.envelope);
    expect(pyVerify(c.key.pub, c.envFile).code).toBe(0);
  });

  test("bad input is exit 2, not a verdict", () => {
    const c = signedStatement();
    writeFileSync(c.envFile, "{not json");
    expect(pyVerify(c.key.pub, c.envFile).code).toBe(2);
    writeEnvelope(c.envFile, c.envelope);
    expect(pyVerify(c.envFile, c.envFile).code).toBe(2); // not a PEM public key
  });
});

/** Every file of a signed wrap capture except the envelope (the envelope's subjects). */
const SIGNED_CAPTURE_FILES = [
  "capture.json",
  "checkpoints.ndjson",
  "decisions.ndjson",
  "receipts.ndjson",
  "server-stderr.log",
  "session-context.json",
  "session-stop.json",
];

describe.skipIf(SKIP)("a signed capture of the compiled binary, verified by securesystemslib and sha256sum", () => {
  afterEach(disposeWrapSessions);

  test("vigil keygen + wrap --signing-key: capture.dsse.json and checkpoints.ndjson verify, subjects check", async () => {
    requireBinary();
    const keys = temp("vigil-sslib-e2e-key");
    const gen = run([VIGIL_BIN, "keygen", "--out", keys.file("vigil")]);
    expect(gen.code).toBe(0);
    const keyid = gen.stdout.trim();
    expect(keyid).toMatch(/^[0-9a-f]{64}$/);

    const s = startWrap({
      policy: { version: 1, tools: { deny: ["exec"] } },
      flags: ["--signing-key", keys.file("vigil.key"), "--checkpoint-every", "2"],
    });
    expect((await s.initialize()).result).toBeDefined();
    expect((await s.request("tools/list")).result).toBeDefined();
    expect((await s.call("echo", { text: "hello" })).result).toBeDefined();
    expect((await s.call("exec", { cmd: "rm -rf /" })).result?.isError).toBe(true);
    expect((await s.call("echo", { text: "again" })).result).toBeDefined();
    const exit = await s.finish(15_000);
    if (exit.code !== 0) throw new Error(`wrap exited ${exit.code ?? exit.signal}; stderr:\n${s.client.stderrText()}`);
    const dir = s.captureDir!;

    const env = pyVerify(keys.file("vigil.pub"), join(dir, "capture.dsse.json"));
    expect(env.stderr).toContain(`envelope 1: ok keyid=${keyid} payloadType=${IN_TOTO_PAYLOAD_TYPE}`);
    expect(env.stderr).toContain(`_type=${STATEMENT_TYPE} predicateType=${WRAP_SESSION_PREDICATE}`);
    expect(env.code).toBe(0);
    expect(env.stdout.trimEnd().split("\n").map((l) => l.split("  ")[1])).toEqual(SIGNED_CAPTURE_FILES);

    const sums = keys.file("SHA256SUMS"); // outside the capture dir: sha256sum -c reads only the subjects
    writeFileSync(sums, env.stdout);
    const check = sha256sumCheck(sums, dir);
    expect(check.stdout.trimEnd().split("\n")).toEqual(SIGNED_CAPTURE_FILES.map((n) => `${n}: OK`));
    expect(check.code).toBe(0);

    // The verified predicate names each log's chain head: the hash of its last line, per coreutils.
    const predicate = JSON.parse(Buffer.from(JSON.parse(readFileSync(join(dir, "capture.dsse.json"), "utf8")).payload, "base64").toString("utf8")).predicate;
    for (const name of ["decisions.ndjson", "receipts.ndjson"]) expect(predicate.logs[name]).toEqual(coreutilsHead(dir, name));

    const cps = pyVerify(keys.file("vigil.pub"), join(dir, "checkpoints.ndjson"));
    const lines = readFileSync(join(dir, "checkpoints.ndjson"), "utf8").trimEnd().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(2); // 8 records, a checkpoint every 2
    expect(predicate.checkpoints).toEqual({ written: lines.length });
    for (let n = 1; n <= lines.length; n++) {
      expect(cps.stderr).toContain(`envelope ${n}: ok keyid=${keyid} payloadType=${CHECKPOINT_PAYLOAD_TYPE} _type=${CHECKPOINT_TYPE}`);
    }
    expect(cps.code).toBe(0);
  });
});
