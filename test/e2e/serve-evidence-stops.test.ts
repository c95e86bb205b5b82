// serve's signed evidence across restarts (serve.md "Evidence"), against the compiled binary: a
// daemon with `evidence.signing_key` records a governed tool call, is stopped (SIGTERM), started
// again on the same state, records another, is stopped again. The decision log's chain links
// across the restart (vigilseq contiguous, ids unique), checkpoints number on, and every stop left
// stops/<n>.dsse.json whose Ed25519 signature over the DSSE PAE (computed here with node:crypto,
// not with vigil's code) verifies and whose subjects hash the files as they stood at that stop.
// A key file readable by the group is refused with exit 2 before any MCP server starts.
import { describe, expect, test } from "bun:test";
import { createHash, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { copyFileSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { LineClient, fixtureArgv, tmpDir } from "../helpers/fixture.ts";
import { type Daemon, type ServeEnv, SseReader, framesUrl, isRunEnd, killServerGroup, post, serveEnvironment, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();
const SOURCE = "vigil://test/serve-evidence";
const SESSION = "ops";
const FILES = ["checkpoints.ndjson", "decisions.ndjson", "events.ndjson"] as const;

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const anchor = (log: string) => sha256(`vigil.chain.v1\n${SOURCE}\n${SESSION}\n${log}`);

/** An Ed25519 key pair written as vigil reads it (PKCS#8 PEM, `mode`); its key id and public key. */
function writeKey(path: string, mode = 0o600) {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }) as string, { mode });
  return { keyid: sha256(publicKey.export({ type: "spki", format: "der" })), publicKey };
}

function pae(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${body.length} `), body]);
}

/** The envelope's statement, once its one signature verified under `key` (our own PAE and node's Ed25519). */
function openEnvelope(path: string, key: { keyid: string; publicKey: ReturnType<typeof createPublicKey> }, payloadType: string) {
  const env = JSON.parse(readFileSync(path, "utf8")) as { payload: string; payloadType: string; signatures: { keyid: string; sig: string }[] };
  expect(env.payloadType).toBe(payloadType);
  expect(env.signatures).toHaveLength(1);
  expect(env.signatures[0]!.keyid).toBe(key.keyid);
  const body = Buffer.from(env.payload, "base64");
  expect(verify(null, pae(env.payloadType, body), key.publicKey, Buffer.from(env.signatures[0]!.sig, "base64"))).toBe(true);
  return JSON.parse(body.toString("utf8"));
}

const ndjson = (text: string) => text.split("\n").filter((l) => l !== "");

async function oneToolCall(env: ServeEnv, d: Daemon, text: string): Promise<void> {
  const sse = await SseReader.open(cleanups, framesUrl(d.base, SESSION));
  env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text } }] }, { text: "done" }]);
  expect((await post(d, SESSION, { type: "prompt", id: text, message: text })).status).toBe(200);
  const frames = await sse.until(isRunEnd);
  expect(frames.find((f) => f.type === "tool_call")).toMatchObject({ tool: "echo", decision: "allow" });
  sse.close();
}

describe("serve: signed stops and chains continued across restarts", () => {
  test("two daemon runs: one chain, checkpoints numbered on, stops/1 and stops/2 verify over the files of their time", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-evidence" });
    const key = writeKey(join(env.dir, "serve.key"));
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    config.evidence = { event_source: SOURCE, signing_key: "serve.key", checkpoint_every: 1 };
    writeFileSync(env.configFile, JSON.stringify(config));
    const dir = join(env.stateDir, "sessions", SESSION);
    const aside = join(env.dir, "after-stop-1");

    const first = await startDaemon(cleanups, env);
    expect(first.client.stderrText()).toContain(`signing_key=${key.keyid.slice(0, 16)}`);
    expect(first.client.stderrText()).not.toContain("serve.key");
    await oneToolCall(env, first, "one");
    expect(await stopDaemon(first)).toEqual({ code: 0, signal: null });
    const atStop1: Record<string, string> = {};
    for (const f of FILES) if (existsSync(join(dir, f))) atStop1[f] = readFileSync(join(dir, f), "utf8");
    for (const f of Object.keys(atStop1)) copyFileSync(join(dir, f), `${aside}-${f}`);
    expect(readdirSync(join(dir, "stops"))).toEqual(["1.dsse.json"]);

    const second = await startDaemon(cleanups, env);
    await oneToolCall(env, second, "two");
    expect(await stopDaemon(second)).toEqual({ code: 0, signal: null });

    // The decision log: one chain from the anchor across both runs, seq and ids going on.
    const lines = ndjson(readFileSync(join(dir, "decisions.ndjson"), "utf8"));
    const records = lines.map((l) => JSON.parse(l) as { id: string; vigilseq: number; vigilprev: string; data: { seq: number } });
    expect(records.map((r) => r.vigilseq)).toEqual([0, 1]);
    expect(records.map((r) => r.data.seq)).toEqual([0, 1]);
    expect(new Set(records.map((r) => r.id)).size).toBe(2);
    expect(records[0]!.vigilprev).toBe(anchor("decisions.ndjson"));
    expect(records[1]!.vigilprev).toBe(sha256(`${lines[0]}\n`));
    expect(lines[0]).toBe(ndjson(atStop1["decisions.ndjson"]!)[0]!);

    // Checkpoints: every line signed, numbered 0, 1, … across the restart.
    const checkpoints = ndjson(readFileSync(join(dir, "checkpoints.ndjson"), "utf8"));
    const numbers = checkpoints.map((l) => {
      const path = join(env.dir, "one-checkpoint.json");
      writeFileSync(path, l);
      const p = openEnvelope(path, key, "application/vnd.vigil.checkpoint.v1+json");
      expect(p).toMatchObject({ _type: "vigil.checkpoint.v1", event_source: SOURCE, session_id: SESSION });
      return p.checkpoint as number;
    });
    expect(numbers).toEqual(checkpoints.map((_, i) => i));
    const firstRun = ndjson(atStop1["checkpoints.ndjson"]!).length;
    expect(firstRun).toBeGreaterThan(0);
    expect(checkpoints.length).toBeGreaterThan(firstRun);

    // The stops: 0700 dir, 0600 files, each verifying, its subjects the files as they stood then.
    expect(statSync(join(dir, "stops")).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(dir, "stops")).sort()).toEqual(["1.dsse.json", "2.dsse.json"]);
    const now: Record<string, string> = {};
    for (const f of FILES) if (existsSync(join(dir, f))) now[f] = readFileSync(join(dir, f), "utf8");
    for (const [n, files] of [[1, atStop1], [2, now]] as const) {
      const path = join(dir, "stops", `${n}.dsse.json`);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const s = openEnvelope(path, key, "application/vnd.in-toto+json");
      expect(s._type).toBe("https://in-toto.io/Statement/v1");
      expect(s.predicateType).toBe("https://vigil.dev/attestation/mcp-serve-session-stop/v1");
      expect(s.subject).toEqual(Object.keys(files).sort().map((name) => ({ name, digest: { sha256: sha256(files[name]!) } })));
      const decisions = ndjson(files["decisions.ndjson"]!);
      expect(s.predicate).toMatchObject({
        session_id: SESSION,
        event_source: SOURCE,
        policy_digest: null,
        producer: { name: "vigil", version: expect.any(String) },
        stop: n,
        reason: "shutdown",
        checkpoints: { written: ndjson(files["checkpoints.ndjson"]!).length },
        events: { pending: [] },
      });
      expect(s.predicate.logs["decisions.ndjson"]).toEqual({ count: decisions.length, head: sha256(`${decisions.at(-1)}\n`) });
    }
    // The copies taken after the first stop are what stops/1 covered.
    for (const f of Object.keys(atStop1)) expect(readFileSync(`${aside}-${f}`, "utf8")).toBe(atStop1[f]!);
  });

  test("a reaped session's stop is signed with reason reaped; the reopened session continues", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-evidence-reap" });
    const key = writeKey(join(env.dir, "serve.key"));
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    config.evidence = { event_source: SOURCE, signing_key: join(env.dir, "serve.key") };
    writeFileSync(env.configFile, JSON.stringify(config));
    const d = await startDaemon(cleanups, env, ["--session-idle-timeout", "1"]);
    const dir = join(env.stateDir, "sessions", SESSION);
    const stop = (n: number) => join(dir, "stops", `${n}.dsse.json`);
    await oneToolCall(env, d, "one");
    await waitFor(() => existsSync(stop(1)), { timeoutMs: 15_000, label: "stops/1.dsse.json after the reap" });
    expect(openEnvelope(stop(1), key, "application/vnd.in-toto+json").predicate).toMatchObject({ stop: 1, reason: "reaped", logs: { "decisions.ndjson": { count: 1 } } });
    await oneToolCall(env, d, "two");
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
    // Reaped again before the SIGTERM, or stopped by it: either way stop 2 covers both records.
    const s2 = openEnvelope(stop(2), key, "application/vnd.in-toto+json").predicate;
    expect(["reaped", "shutdown"]).toContain(s2.reason);
    expect(s2.logs["decisions.ndjson"].count).toBe(2);
  });

  test("stdio mode: the session's stop at EOF is signed too", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-serve-evidence-stdio" });
    const key = writeKey(join(env.dir, "serve.key"));
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    config.evidence = { event_source: SOURCE, signing_key: "${VIGIL_SIGNING_KEY_FILE}" };
    writeFileSync(env.configFile, JSON.stringify(config));
    const client = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir, "--session", SESSION], {
      env: vigilEnv({ VIGIL_SIGNING_KEY_FILE: join(env.dir, "serve.key") }),
    });
    cleanups.add(() => client.dispose());
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "x" } }] }, { text: "done" }]);
    client.send({ type: "prompt", id: "p1", message: "x" });
    for (;;) {
      const line = await client.next(15_000);
      if (line === null) throw new Error(`stdout closed; stderr:\n${client.stderrText()}`);
      if ((JSON.parse(line) as { type: string }).type === "run_end") break;
    }
    client.closeStdin();
    expect(await client.exited(15_000)).toEqual({ code: 0, signal: null });
    const dir = join(env.stateDir, "sessions", SESSION);
    const s = openEnvelope(join(dir, "stops", "1.dsse.json"), key, "application/vnd.in-toto+json");
    expect(s.predicate).toMatchObject({ stop: 1, reason: "shutdown", logs: { "decisions.ndjson": { count: 1 } } });
    const decisions = readFileSync(join(dir, "decisions.ndjson"));
    expect(s.subject.find((x: { name: string }) => x.name === "decisions.ndjson").digest.sha256).toBe(sha256(decisions));
  });
});

describe("serve: a bad signing key starts nothing", () => {
  /** A config whose stdio MCP server leaves `marker` when it starts; the key from $VIGIL_SIGNING_KEY_FILE. */
  function setup(keyMode: number) {
    const tmp = tmpDir("vigil-serve-badkey");
    cleanups.add(() => tmp.cleanup());
    const marker = tmp.file("server-started");
    const grandchild = tmp.file("grandchild.pid");
    cleanups.add(() => killServerGroup(grandchild));
    const server = { name: "fx", transport: "stdio", command: "sh", args: ["-c", ': > "$$0"; exec "$$@"', marker, ...fixtureArgv({ FIXTURE_GRANDCHILD: grandchild })] };
    const configFile = tmp.file("vigil.json");
    writeFileSync(configFile, JSON.stringify({
      model: { provider: "command", command: ["cat"], timeout_ms: 5000 },
      mcp_servers: [server],
      evidence: { event_source: SOURCE, signing_key: "${VIGIL_SIGNING_KEY_FILE}" },
    }));
    const keyFile = tmp.file("serve.key");
    writeKey(keyFile, keyMode);
    const env = vigilEnv({ VIGIL_SIGNING_KEY_FILE: keyFile });
    const serve = (extra: string[] = []) => runVigil(["serve", "--config", configFile, "--state-dir", tmp.file("state"), ...extra], { env, timeoutMs: 30_000 });
    return { marker, keyFile, serve };
  }

  for (const [mode, extra] of [["stdio", []], ["daemon", ["--listen", "127.0.0.1:0"]]] as const) {
    test(`${mode} mode: a key file with mode 0640 exits 2 naming it, and no MCP server was spawned`, async () => {
      const s = setup(0o640);
      const run = await s.serve([...extra]);
      expect({ code: run.code, serverStarted: existsSync(s.marker) }).toEqual({ code: 2, serverStarted: false });
      expect(run.stderr).toContain(`signing key ${s.keyFile}: readable or writable by group/others (mode 0640)`);
      expect(run.stderr).not.toContain("PRIVATE KEY");
    });
  }

  test("the same setup with a 0600 key starts the server (the marker works)", async () => {
    const s = setup(0o600);
    const run = await s.serve();
    expect(run.code).toBe(0);
    expect(existsSync(s.marker)).toBe(true);
  });
});
