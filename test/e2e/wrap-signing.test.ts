/**
 * `vigil wrap` chains and signatures (wrap.md §12, issue 14), against the compiled binary. Nothing
 * here uses vigil's own chain or DSSE code: anchors, line hashes, the PAE encoding and the Ed25519
 * checks are recomputed with node:crypto, and the statement's subjects with `sha256sum`.
 *
 * - every record of decisions.ndjson and receipts.ndjson carries `vigilseq` (contiguous from 0)
 *   and `vigilprev` (the anchor, then the SHA-256 of the line before with its newline), just before
 *   `data`; the v2 stop record names each log's count and head;
 * - with `--signing-key`: checkpoints.ndjson (every `--checkpoint-every` records, each line a DSSE
 *   envelope over the logs' heads) and, last, capture.dsse.json (an in-toto statement over every
 *   other file), both 0600; a session killed with SIGKILL keeps verifiable checkpoints;
 * - a key readable by group/others, or not an Ed25519 PKCS#8 key, is refused before anything is
 *   spawned (exit 2); the key never reaches the server's environment or descriptors;
 * - without a key: the chains and the v2 stop record, no checkpoints, no envelope.
 */
import { describe, expect, test } from "bun:test";
import { type KeyObject, generateKeyPairSync, verify } from "node:crypto";
import { chmodSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CAPTURE_POLICY, ndjsonLines } from "../helpers/capture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, fixtureArgv, tmpDir, waitUntil } from "../helpers/fixture.ts";
import { CAPTURE, EVENT_SOURCE, VIGIL_BIN, type WrapSession, readJson, runVigil, sha256Hex, startWrap } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

// The public names of the format, pinned here independently of src/.
const CHECKPOINTS = "checkpoints.ndjson";
const ENVELOPE = "capture.dsse.json";
const IN_TOTO = "application/vnd.in-toto+json";
const CHECKPOINT_TYPE = "application/vnd.vigil.checkpoint.v1+json";
const LOGS = [CAPTURE.decisions, CAPTURE.receipts] as const;

interface TestKey {
  path: string;
  pub: KeyObject;
  keyid: string;
}

/** An Ed25519 key written by the test (not by vigil keygen) as PKCS#8 PEM with `mode`. */
function writeKey(dir: string, mode = 0o600, name = "signing.key"): TestKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const path = join(dir, name);
  writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }), { mode });
  chmodSync(path, mode);
  return { path, pub: publicKey, keyid: sha256Hex(publicKey.export({ type: "spki", format: "der" })) };
}

function scratch(): TmpDir {
  const t = tmpDir("vigil-e2e");
  cleanups.add(() => t.cleanup());
  return t;
}

/** What a chain is, recomputed: the documented anchor, then SHA-256 of each complete line with its newline. */
/** `role`: the log's capture file name, which names its chain wherever the file is written. */
function readChain(dir: string, name: string, sid: string, role = name): { records: any[]; heads: string[] } {
  const { lines, tail } = ndjsonLines(readFileSync(join(dir, name)));
  expect(tail.length).toBe(0);
  let head = sha256Hex(`vigil.chain.v1\n${EVENT_SOURCE}\n${sid}\n${role}`);
  const heads = [head];
  const records = lines.map((line, i) => {
    const record = JSON.parse(line.toString("utf8"));
    expect({ name, i, vigilseq: record.vigilseq, vigilprev: record.vigilprev }).toEqual({ name, i, vigilseq: i, vigilprev: head });
    expect(Object.keys(record).slice(-3)).toEqual(["vigilseq", "vigilprev", "data"]);
    head = sha256Hex(line);
    heads.push(head);
    return record;
  });
  return { records, heads };
}

/** Checks a DSSE envelope's shape and Ed25519 signature over the PAE built here; returns the payload, parsed. */
function openEnvelope(envelope: any, payloadType: string, key: TestKey): any {
  expect(Object.keys(envelope).sort()).toEqual(["payload", "payloadType", "signatures"]);
  expect(envelope.payloadType).toBe(payloadType);
  expect(envelope.signatures).toHaveLength(1);
  expect(envelope.signatures[0].keyid).toBe(key.keyid);
  const body = Buffer.from(envelope.payload, "base64");
  const pae = Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(payloadType)} ${payloadType} ${body.length} `), body]);
  expect(verify(null, pae, key.pub, Buffer.from(envelope.signatures[0].sig, "base64"))).toBe(true);
  // One flipped byte of the body no longer verifies (the check above is not vacuous).
  const forged = Buffer.from(pae);
  forged[forged.length - 2]! ^= 1;
  expect(verify(null, forged, key.pub, Buffer.from(envelope.signatures[0].sig, "base64"))).toBe(false);
  return JSON.parse(body.toString("utf8"));
}

/** `sha256sum` of the named files in `dir`, by name. */
function sha256sum(dir: string, names: string[]): Record<string, string> {
  const r = Bun.spawnSync(["sha256sum", "--", ...names], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  expect(r.exitCode).toBe(0);
  const out: Record<string, string> = {};
  for (const line of r.stdout.toString().trim().split("\n")) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line)!;
    out[m[2]!] = m[1]!;
  }
  return out;
}

/** initialize, tools/list, four calls (one denied by CAPTURE_POLICY); resolves once vigil has exited. */
async function runSession(s: WrapSession): Promise<{ code: number | null }> {
  await s.initialize();
  await s.request("tools/list");
  await s.call("echo", { text: "one" });
  await s.call("exec", { cmd: "rm -rf /" });
  await s.call("echo", { text: "two" });
  await s.call("read_file", { path: "/workspace/a.txt" });
  return s.finish();
}

describe("signed capture", () => {
  test("chains, stop v2, checkpoints every 2 records and the signed statement all check out", async () => {
    const tmp = scratch();
    const key = writeKey(tmp.path);
    const s = startWrap({ policy: CAPTURE_POLICY, flags: ["--signing-key", key.path, "--checkpoint-every", "2"] }, tmpDir("vigil-e2e"));
    expect((await runSession(s)).code).toBe(0);
    const dir = s.captureDir!;
    const stop = readJson(join(dir, CAPTURE.stop));
    const context = readJson(join(dir, CAPTURE.context));
    const manifest = readJson(join(dir, CAPTURE.manifest));
    const sid = stop.data.session_id;

    // Chains, recomputed; the stop record names their heads.
    const chains = Object.fromEntries(LOGS.map((name) => [name, readChain(dir, name, sid)]));
    expect(chains[CAPTURE.decisions]!.records).toHaveLength(4);
    expect(chains[CAPTURE.receipts]!.records).toHaveLength(6);
    expect(stop.type).toBe("vigil.mcp.session.stop.v2");
    const total = 4 + 6;
    expect(stop.data.chains).toEqual({
      [CAPTURE.decisions]: { count: 4, head: chains[CAPTURE.decisions]!.heads[4] },
      [CAPTURE.receipts]: { count: 6, head: chains[CAPTURE.receipts]!.heads[6] },
    });
    expect(stop.data.checkpoints).toEqual({ written: total / 2 });

    // Checkpoints: one per 2 records, numbered from 0, each naming heads the logs really had.
    const lines = readFileSync(join(dir, CHECKPOINTS), "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(total / 2);
    lines.forEach((line, i) => {
      const payload = openEnvelope(JSON.parse(line), CHECKPOINT_TYPE, key);
      expect(payload).toMatchObject({ _type: "vigil.checkpoint.v1", event_source: EVENT_SOURCE, session_id: sid, checkpoint: i });
      expect(Object.keys(payload.logs).sort()).toEqual([...LOGS].sort());
      let covered = 0;
      for (const name of LOGS) {
        const { count, head } = payload.logs[name];
        expect(head).toBe(chains[name]!.heads[count]);
        covered += count;
      }
      expect(covered).toBe(2 * (i + 1));
    });

    // The statement: every other file, digests as sha256sum sees them; the predicate repeats the stop.
    const names = readdirSync(dir).sort();
    expect(names).toEqual([ENVELOPE, CAPTURE.manifest, CHECKPOINTS, CAPTURE.decisions, CAPTURE.receipts, CAPTURE.serverStderr, CAPTURE.context, CAPTURE.stop].sort());
    const statement = openEnvelope(readJson(join(dir, ENVELOPE)), IN_TOTO, key);
    const covered = names.filter((n) => n !== ENVELOPE);
    const sums = sha256sum(dir, covered);
    expect(statement._type).toBe("https://in-toto.io/Statement/v1");
    expect(statement.subject).toEqual(covered.map((name) => ({ name, digest: { sha256: sums[name] } })));
    expect(statement.predicateType).toBe("https://vigil.dev/attestation/mcp-session/v1");
    const d = stop.data;
    expect(statement.predicate).toEqual({
      session_id: sid,
      event_source: EVENT_SOURCE,
      server_id: d.server_id,
      policy_digest: context.data.policy_digest,
      producer: { name: "vigil", version: context.data.vigil_version, binary_sha256: sha256Hex(readFileSync(VIGIL_BIN)) },
      stop: {
        session_end: "client_closed", termination: "exited", exit_code: 0, signal: null, decision_log: "complete",
        decision_events_written: 4, decision_events_dropped: 0, receipts: { written: 6, dropped: 0 },
      },
      logs: d.chains,
      checkpoints: { written: total / 2 },
    });
    expect(context.data.policy_digest).toMatch(/^sha256:[0-9a-f]{64}$/);

    // The manifest: v2, hashes the checkpoints, never lists the envelope written after it.
    expect(manifest.format).toBe("vigil.capture.v2");
    expect(Object.keys(manifest.files).sort()).toEqual(covered.filter((n) => n !== CAPTURE.manifest));
    expect(manifest.files[CHECKPOINTS].sha256).toBe(sums[CHECKPOINTS]);
    for (const name of names) expect({ name, mode: statSync(join(dir, name)).mode & 0o777 }).toEqual({ name, mode: 0o600 });
  });

  test("a session killed with SIGKILL keeps its checkpoints, each covering a prefix of the logs", async () => {
    const tmp = scratch();
    const key = writeKey(tmp.path);
    const s = startWrap({ policy: CAPTURE_POLICY, flags: ["--signing-key", key.path, "--checkpoint-every", "2"] }, tmpDir("vigil-e2e"));
    await s.initialize();
    await s.request("tools/list");
    await s.call("echo", { text: "one" });
    await s.call("echo", { text: "two" });
    const dir = s.captureDir!;
    // initialize, tools/list and one call are complete (3 receipts, 1 decision at least): 2 checkpoints.
    expect(await waitUntil(() => existsSync(join(dir, CHECKPOINTS)) && readFileSync(join(dir, CHECKPOINTS), "utf8").split("\n").length > 2, 10_000)).toBe(true);
    process.kill(s.client.pid, "SIGKILL");
    expect((await s.client.exited(10_000)).signal).toBe("SIGKILL");
    expect(existsSync(join(dir, CAPTURE.stop))).toBe(false);
    expect(existsSync(join(dir, ENVELOPE))).toBe(false);

    const first = JSON.parse(readFileSync(join(dir, CHECKPOINTS), "utf8").split("\n")[0]!);
    const sid = openEnvelope(first, CHECKPOINT_TYPE, key).session_id;
    const chains = Object.fromEntries(LOGS.map((name) => [name, readChain(dir, name, sid)]));
    const lines = readFileSync(join(dir, CHECKPOINTS), "utf8").trimEnd().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(2);
    lines.forEach((line, i) => {
      const payload = openEnvelope(JSON.parse(line), CHECKPOINT_TYPE, key);
      expect(payload.checkpoint).toBe(i);
      for (const name of LOGS) expect(payload.logs[name].head).toBe(chains[name]!.heads[payload.logs[name].count]);
    });
  });

  test("--checkpoint-seconds: a checkpoint follows a quiet spell after something was written", async () => {
    const key = writeKey(scratch().path);
    const s = startWrap({ flags: ["--allow-all", "--signing-key", key.path, "--checkpoint-seconds", "0.05"] }, tmpDir("vigil-e2e"));
    await s.initialize();
    await s.call("echo", { text: "one" });
    const file = join(s.captureDir!, CHECKPOINTS);
    // Far fewer records than the default 1,000: only the timer can have written it.
    expect(await waitUntil(() => readFileSync(file, "utf8").length > 0, 10_000)).toBe(true);
    expect((await s.finish()).code).toBe(0);
    const stop = readJson(join(s.captureDir!, CAPTURE.stop));
    const first = openEnvelope(JSON.parse(readFileSync(file, "utf8").split("\n")[0]!), CHECKPOINT_TYPE, key);
    expect(first).toMatchObject({ checkpoint: 0, session_id: stop.data.session_id });
    expect(stop.data.checkpoints.written).toBeGreaterThanOrEqual(1);
  });

  test("the key stays in vigil: not in the server's environment, argv or open files", async () => {
    const tmp = scratch();
    const key = writeKey(tmp.path);
    const pem = readFileSync(key.path, "utf8");
    const seen = tmp.file("server-view.txt");
    // The server's view of itself, written before it becomes the fixture server (exec keeps the pid).
    const command = ["/bin/sh", "-c", '{ cat /proc/$$/environ | tr "\\0" "\\n"; echo ---; cat /proc/$$/cmdline | tr "\\0" " "; echo; echo ---; for f in /proc/$$/fd/*; do readlink "$f"; done; } > "$0"; exec "$@"', seen, ...fixtureArgv()];
    const s = startWrap({ flags: ["--allow-all", "--signing-key", key.path], command }, tmpDir("vigil-e2e"));
    await s.initialize();
    expect((await s.finish()).code).toBe(0);
    const view = readFileSync(seen, "utf8");
    // Not vacuous: the environment, the command line and the descriptors were all read.
    expect(view).toContain("\nPATH=");
    expect(view).toContain("exec \"$@\"");
    expect(view).toContain("socket:[");
    expect(view).not.toContain(key.path);
    expect(view).not.toContain("PRIVATE KEY");
    for (const line of pem.split("\n").filter((l) => l.length > 20)) expect(view).not.toContain(line);
    expect(existsSync(join(s.captureDir!, ENVELOPE))).toBe(true);
  });
});

describe("a signed capture that cannot be finished", () => {
  test("capture.dsse.json is created exclusively: a file already there stays, and the run exits 3", async () => {
    const key = writeKey(scratch().path);
    const s = startWrap({ flags: ["--allow-all", "--signing-key", key.path] }, tmpDir("vigil-e2e"));
    await s.initialize();
    const planted = join(s.captureDir!, ENVELOPE);
    writeFileSync(planted, "not ours\n");
    expect((await s.finish()).code).toBe(3);
    expect(readFileSync(planted, "utf8")).toBe("not ours\n");
    const lines = s.client.stderrText().split("\n").filter((l) => l.includes(ENVELOPE) || l.includes("capture envelope"));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toStartWith("vigil: evidence: cannot write the signed capture statement: ");
    expect(lines[0]).toContain("EEXIST");
    expect(lines[1]).toStartWith("vigil: evidence write failed (capture envelope); server ");
    // Everything before the envelope was written.
    for (const name of [CAPTURE.stop, CAPTURE.manifest, CHECKPOINTS]) expect(existsSync(join(s.captureDir!, name))).toBe(true);
  });
});

describe("refused keys: exit 2, nothing spawned", () => {
  async function refused(keyPath: string): Promise<{ stderr: string; tmp: TmpDir }> {
    const tmp = scratch();
    const marker = tmp.file("spawned");
    const capture = tmp.file("capture");
    const run = await runVigil([
      "wrap", "--allow-all", "--capture-dir", capture, "--event-source", EVENT_SOURCE, "--signing-key", keyPath,
      "--", "/bin/sh", "-c", `: > ${marker}`,
    ]);
    expect({ code: run.code, stdout: run.stdout, spawned: existsSync(marker), capture: existsSync(capture) }).toEqual({ code: 2, stdout: "", spawned: false, capture: false });
    return { stderr: run.stderr, tmp };
  }

  test("a key readable by group/others", async () => {
    const key = writeKey(scratch().path, 0o644);
    const { stderr } = await refused(key.path);
    expect(stderr).toBe(`vigil: signing key ${key.path}: readable or writable by group/others (mode 0644); chmod 600 it\n`);
  });

  test("a file that is not a PKCS#8 PEM key, and an RSA key: named, never quoted", async () => {
    const tmp = scratch();
    const junk = tmp.file("junk.key");
    writeFileSync(junk, "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNlY3JldA==\n-----END PRIVATE KEY-----\n", { mode: 0o600 });
    const a = await refused(junk);
    expect(a.stderr).toBe(`vigil: signing key ${junk}: not a PKCS#8 PEM private key\n`);
    expect(a.stderr).not.toContain("c2VjcmV0");

    const rsa = tmp.file("rsa.key");
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(rsa, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    expect((await refused(rsa)).stderr).toBe(`vigil: signing key ${rsa}: not an Ed25519 key (its type is rsa); create one with vigil keygen\n`);
  });

  test("a missing key file", async () => {
    const path = join(scratch().path, "absent.key");
    expect((await refused(path)).stderr).toBe(`vigil: signing key ${path}: no such file\n`);
  });
});

describe("unsigned capture", () => {
  test("chains and the v2 stop record, but no checkpoints and no envelope", async () => {
    const s = startWrap({ policy: CAPTURE_POLICY, flags: [] });
    expect((await runSession(s)).code).toBe(0);
    const dir = s.captureDir!;
    const names = readdirSync(dir);
    expect(names).not.toContain(CHECKPOINTS);
    expect(names).not.toContain(ENVELOPE);
    const stop = readJson(join(dir, CAPTURE.stop));
    expect(stop.type).toBe("vigil.mcp.session.stop.v2");
    const sid = stop.data.session_id;
    const heads = Object.fromEntries(LOGS.map((name) => {
      const chain = readChain(dir, name, sid);
      return [name, { count: chain.records.length, head: chain.heads.at(-1) }];
    }));
    expect(stop.data.chains).toEqual(heads);
    expect(stop.data.checkpoints).toBeNull();
    expect(Object.keys(stop.data).slice(-5)).toEqual(["counts", "chains", "checkpoints", "assertion_basis", "non_claims"]);
    const manifest = readJson(join(dir, CAPTURE.manifest));
    expect(manifest.format).toBe("vigil.capture.v2");
    expect(Object.keys(manifest.files)).not.toContain(CHECKPOINTS);
  });

  test("individual outputs: each log's chain is named by its role (the capture file name), whatever the file is called", async () => {
    const tmp = scratch();
    const decisions = tmp.file("audit.log");
    const receipts = tmp.file("calls.ndjson");
    const stopFile = tmp.file("stop.json");
    const s = startWrap({
      policy: CAPTURE_POLICY,
      capture: false,
      flags: ["--event-source", EVENT_SOURCE, "--decision-log", decisions, "--decision-log-new", "--receipts-out", receipts, "--session-stop-out", stopFile],
    });
    await s.initialize();
    await s.call("echo", { text: "x" });
    expect((await s.finish()).code).toBe(0);
    const stop = readJson(stopFile);
    const sid = stop.data.session_id;
    const d = readChain(tmp.path, "audit.log", sid, "decisions.ndjson");
    const r = readChain(tmp.path, "calls.ndjson", sid, "receipts.ndjson");
    expect(stop.data.chains).toEqual({
      "decisions.ndjson": { count: d.records.length, head: d.heads.at(-1) },
      "receipts.ndjson": { count: r.records.length, head: r.heads.at(-1) },
    });
    expect(d.records).toHaveLength(1);
  });
});
