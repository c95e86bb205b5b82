// A serve session's signed evidence across restarts whose configuration changes (serve.md
// "Evidence"; issue 14), against the compiled binary, the events fixture and the mock model, each
// checked with `vigil verify sessions/<name> --public-key`:
// - events queued while `evidence` was not configured (the model down, so they stay pending), then
//   a restart with evidence and a key: the ledger records them first (received, delivery_mode
//   "restored"), so their deliveries are accounted for and the session verifies closed;
// - a run with events (the ledger written), then a run without any events configured but with a
//   governed tool call: its checkpoints and its stop still name the ledger — daemon and stdio mode.
import { describe, expect, test } from "bun:test";
import { createHash, generateKeyPairSync } from "node:crypto";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { E2E_WAIT_MS, e2eSuite } from "../helpers/e2e.ts";
import { type LedgerRecord, ledgerOnDisk, ofType } from "../helpers/events-ledger.ts";
import { EVENTS_SESSION, type EventsEnv, StdioServe, eventsEnvironment, httpServer, inBatch, isEventFrame, isStatus, pendingOnDisk, startEventsDaemon, waitRuns } from "../helpers/events-serve.ts";
import { fixtureArgv, tmpDir } from "../helpers/fixture.ts";
import { type Daemon, SseReader, framesUrl, isRunEnd, killServerGroup, post, stopDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();
const SOURCE = "vigil://test/serve-evidence-restarts";

/** An Ed25519 key pair as vigil reads it: `<prefix>.key` (PKCS#8, 0600) and `<prefix>.pub` (SPKI). */
function writeKeyPair(prefix: string): { key: string; pub: string; keyid: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  writeFileSync(`${prefix}.key`, privateKey.export({ type: "pkcs8", format: "pem" }) as string, { mode: 0o600 });
  writeFileSync(`${prefix}.pub`, publicKey.export({ type: "spki", format: "pem" }) as string);
  return { key: `${prefix}.key`, pub: `${prefix}.pub`, keyid: createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex") };
}

/** The config file rewritten: its `mcp_servers` (when given), and `evidence` set (or removed with null). */
function rewriteConfig(env: EventsEnv, o: { servers?: unknown[]; evidence: Record<string, unknown> | null }): void {
  const config = JSON.parse(readFileSync(env.configFile, "utf8"));
  if (o.servers !== undefined) config.mcp_servers = o.servers;
  if (o.evidence === null) delete config.evidence;
  else config.evidence = o.evidence;
  writeFileSync(env.configFile, JSON.stringify(config));
}

async function verifyJson(dir: string, pub: string) {
  const r = await runVigil(["verify", dir, "--json", "--public-key", pub], { timeoutMs: 30_000 });
  return { code: r.code, json: JSON.parse(r.stdout), stderr: r.stderr };
}

const emit = (env: EventsEnv, eventId: string) => env.fixture!.control("emit", { name: "build.finished", event_id: eventId });
const pendingIds = (env: EventsEnv, session: string) => pendingOnDisk(env.stateDir, session).map((p) => String(p.event.eventId));

test("events queued before evidence was configured are recorded when the ledger is first opened: their deliveries verify closed", async () => {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])], knobs: { VIGIL_MODEL_BACKOFF_CAP_MS: "200" } });
  const keys = writeKeyPair(join(env.dir, "serve"));
  const S = EVENTS_SESSION;
  const ids = ["q-1", "q-2", "q-3"];

  // Run 1, no evidence: the model is down, so the events stay pending.
  await env.model.outage("503");
  const first = await startEventsDaemon(cleanups, env);
  await waitFor(async () => (await env.fixture!.state()).polls >= 1, { timeoutMs: E2E_WAIT_MS, label: "the subscription polling" });
  for (const id of ids) await emit(env, id);
  await waitFor(() => pendingIds(env, S), { until: (p) => ids.every((id) => p.includes(id)), timeoutMs: E2E_WAIT_MS, label: "the three events pending" });
  expect((await stopDaemon(first)).code).toBe(0);
  expect(ledgerOnDisk(env.stateDir, S)).toEqual([]);

  // Run 2, with evidence and a key; the model answers.
  rewriteConfig(env, { evidence: { event_source: SOURCE, signing_key: keys.key } });
  await env.model.recover();
  const second = await startEventsDaemon(cleanups, env);
  for (const id of ids) await waitRuns(env.model, inBatch(id), 1, 30_000);
  await waitFor(() => pendingIds(env, S).length === 0 && ofType(ledgerOnDisk(env.stateDir, S), "delivered").length > 0, { timeoutMs: 30_000, label: "the pending log drained, deliveries recorded" });
  expect((await stopDaemon(second)).code).toBe(0);

  const records = ledgerOnDisk(env.stateDir, S);
  const received = ofType(records, "received");
  expect(received.map((r) => [r.data.event_id, r.data.delivery_mode])).toEqual(ids.map((id) => [id, "restored"]));
  // They come first, before anything this run received or delivered.
  expect(records.slice(0, 3).map((r: LedgerRecord) => r.type)).toEqual(Array(3).fill("vigil.mcp.event.received.v1"));
  const delivered = new Set(ofType(records, "delivered").flatMap((r) => r.data.seqs as number[]));
  expect(received.every((r) => delivered.has(r.data.seq))).toBe(true);

  const v = await verifyJson(join(env.stateDir, "sessions", S), keys.pub);
  expect(v.json).toMatchObject({ verdict: "closed", reasons: [], events: { received: 3, pending: [] }, authentication: { authenticated: true, keyid: keys.keyid } });
  expect(v.code).toBe(0);
}, 120_000);

describe("a restart with no events configured: the ledger of the earlier run is still named", () => {
  const SESSION = "ops";

  /** The events fixture (tickets, polled) and the stdio echo fixture (fx), evidence with a key, one checkpoint per record. */
  async function setup() {
    const stdio = tmpDir("vigil-evidence-restarts-fx");
    cleanups.add(() => stdio.cleanup());
    cleanups.add(() => killServerGroup(stdio.file("grandchild.pid")));
    const [command, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: stdio.file("grandchild.pid") });
    const fx = { name: "fx", transport: "stdio", command, args };
    const env = await eventsEnvironment(cleanups, { servers: (f) => [fx, httpServer(f!, "tickets", [{ name: "build.finished" }])] });
    const keys = writeKeyPair(join(env.dir, "serve"));
    const evidence = { event_source: SOURCE, signing_key: keys.key, checkpoint_every: 1 };
    rewriteConfig(env, { evidence });
    return { env, keys, fx, evidence, dir: join(env.stateDir, "sessions", SESSION) };
  }

  /** Closed with the key; the last stop and checkpoint cover both logs. */
  async function expectClosed(dir: string, pub: string) {
    const v = await verifyJson(dir, pub);
    expect(v.json).toMatchObject({ verdict: "closed", reasons: [], events: { received: 1, delivered: 1, pending: [] }, decisions: { written: 1 }, authentication: { authenticated: true, stops: 2 } });
    expect(v.json.authentication.covered.logs["events.ndjson"].count).toBe(2);
    expect(v.json.authentication.covered.logs["decisions.ndjson"].count).toBe(1);
    expect(v.code).toBe(0);
  }

  test("daemon mode", async () => {
    const { env, keys, fx, evidence, dir } = await setup();
    const first = await startEventsDaemon(cleanups, env, ["--mcp-events-session", SESSION]);
    await waitFor(async () => (await env.fixture!.state()).polls >= 1, { timeoutMs: E2E_WAIT_MS, label: "the subscription polling" });
    await emit(env, "d-1");
    await waitFor(() => ofType(ledgerOnDisk(env.stateDir, SESSION), "delivered").length === 1, { timeoutMs: E2E_WAIT_MS, label: "d-1 delivered" });
    expect((await stopDaemon(first)).code).toBe(0);

    rewriteConfig(env, { servers: [fx], evidence });
    const second: Daemon = await startEventsDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(second.base, SESSION));
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "two" } }] }, { text: "done" }]);
    expect((await post(second, SESSION, { type: "prompt", id: "p2", message: "two" })).status).toBe(200);
    const frames = await sse.until(isRunEnd);
    expect(frames.find((f) => f.type === "tool_call")).toMatchObject({ tool: "echo", decision: "allow" });
    sse.close();
    expect((await stopDaemon(second)).code).toBe(0);
    await expectClosed(dir, keys.pub);
  }, 90_000);

  test("daemon mode, after a crash between the pending log's commit and the ledger's append: what the open appends waits for the ledger to be named", async () => {
    const { env, keys, fx, evidence, dir } = await setup();
    const first = await startEventsDaemon(cleanups, env, ["--mcp-events-session", SESSION]);
    await waitFor(async () => (await env.fixture!.state()).polls >= 1, { timeoutMs: E2E_WAIT_MS, label: "the subscription polling" });
    await emit(env, "c-1");
    await waitFor(() => ofType(ledgerOnDisk(env.stateDir, SESSION), "delivered").length === 1, { timeoutMs: E2E_WAIT_MS, label: "c-1 delivered" });
    first.client.killGroup("SIGKILL");
    await first.client.exited(10_000);
    // As a crash right after the commit point leaves it: the delivered record is in the pending log
    // (its `ledger` record, written last in the pass) and not yet in events.ndjson.
    const ledgerFile = join(dir, "events.ndjson");
    const lines = readFileSync(ledgerFile, "utf8").trimEnd().split("\n");
    writeFileSync(ledgerFile, lines.slice(0, -1).map((l) => `${l}\n`).join(""));
    appendFileSync(join(dir, "mcp-events.log"), `${JSON.stringify({ ledger: { from: lines.length - 1, lines: [lines.at(-1)] } })}\n`);

    rewriteConfig(env, { servers: [fx], evidence });
    const second: Daemon = await startEventsDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(second.base, SESSION));
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "two" } }] }, { text: "done" }]);
    expect((await post(second, SESSION, { type: "prompt", id: "p2", message: "two" })).status).toBe(200);
    await sse.until(isRunEnd);
    sse.close();
    expect((await stopDaemon(second)).code).toBe(0);
    expect(readFileSync(ledgerFile, "utf8").trimEnd().split("\n")).toEqual(lines);
    const v = await verifyJson(dir, keys.pub);
    expect(v.json).toMatchObject({ verdict: "closed", reasons: [], events: { received: 1, delivered: 1, pending: [] }, authentication: { authenticated: true } });
    expect(v.json.authentication.covered.logs["events.ndjson"].count).toBe(2);
  }, 90_000);

  test("stdio mode", async () => {
    const { env, keys, fx, evidence, dir } = await setup();
    const first = StdioServe.start(cleanups, env, SESSION);
    await first.until(isStatus("subscribed"));
    await emit(env, "s-1");
    await first.until(isEventFrame("s-1"));
    await waitFor(() => ofType(ledgerOnDisk(env.stateDir, SESSION), "delivered").length === 1, { timeoutMs: E2E_WAIT_MS, label: "s-1 delivered" });
    first.client.closeStdin();
    expect((await first.client.exited(15_000)).code).toBe(0);

    rewriteConfig(env, { servers: [fx], evidence });
    const second = StdioServe.start(cleanups, env, SESSION);
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "two" } }] }, { text: "done" }]);
    second.send({ type: "prompt", id: "p2", message: "two" });
    await second.until((f) => f.type === "run_end");
    expect(second.frames.find((f) => f.type === "tool_call")).toMatchObject({ tool: "echo", decision: "allow" });
    second.client.closeStdin();
    expect((await second.client.exited(15_000)).code).toBe(0);
    await expectClosed(dir, keys.pub);
  }, 90_000);
});
