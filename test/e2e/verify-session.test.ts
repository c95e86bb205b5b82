// `vigil verify sessions/<name>` against the compiled binary, on a session directory written by a
// real `vigil serve` daemon with `evidence.signing_key`: a governed tool call, a stop (SIGTERM).
// Closed with the daemon's public key, "not authenticated" without one, and the tamper set on
// copies of the directory: a changed byte, a removed line, another key, a session's logs swapped.
import { describe, expect, test } from "bun:test";
import { createHash, generateKeyPairSync } from "node:crypto";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { vigilEnv } from "../helpers/bin.ts";
import { StdioServe, eventsEnvironment, httpServer, isEventFrame, isStatus, pendingOnDisk, waitRuns } from "../helpers/events-serve.ts";
import { type Daemon, type ServeEnv, SseReader, framesUrl, isRunEnd, post, serveEnvironment, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();
const ledgerTypes = (dir: string) => readFileSync(join(dir, "events.ndjson"), "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).type as string);
const SOURCE = "vigil://test/verify-session";
const SESSION = "ops";

/** An Ed25519 key pair as vigil reads it: `<prefix>.key` (PKCS#8, 0600) and `<prefix>.pub` (SPKI). */
function writeKeyPair(prefix: string): { keyid: string; pub: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  writeFileSync(`${prefix}.key`, privateKey.export({ type: "pkcs8", format: "pem" }) as string, { mode: 0o600 });
  writeFileSync(`${prefix}.pub`, publicKey.export({ type: "spki", format: "pem" }) as string);
  return { keyid: createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex"), pub: `${prefix}.pub` };
}

async function oneToolCall(env: ServeEnv, d: Daemon, text: string): Promise<void> {
  const sse = await SseReader.open(cleanups, framesUrl(d.base, SESSION));
  env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text } }] }, { text: "done" }]);
  expect((await post(d, SESSION, { type: "prompt", id: text, message: text })).status).toBe(200);
  await sse.until(isRunEnd);
  sse.close();
}

const verify = async (dir: string, ...flags: string[]) => {
  const r = await runVigil(["verify", dir, ...flags], { env: vigilEnv() });
  return { ...r, json: flags.includes("--json") ? JSON.parse(r.stdout) : null };
};

/** A copy of the session directory under `name` (the copy's base name is the session it claims to be). */
function copySession(from: string, to: string): string {
  cpSync(from, to, { recursive: true });
  return to;
}

describe("vigil verify sessions/<name>", () => {
  test("a signed serve session: closed with its key, not authenticated without, and the tamper set", async () => {
    const env = await serveEnvironment(cleanups, { prefix: "vigil-verify-session" });
    const key = writeKeyPair(join(env.dir, "serve"));
    const other = writeKeyPair(join(env.dir, "other"));
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    config.evidence = { event_source: SOURCE, signing_key: join(env.dir, "serve.key"), checkpoint_every: 1 };
    writeFileSync(env.configFile, JSON.stringify(config));
    const d = await startDaemon(cleanups, env);
    await oneToolCall(env, d, "one");
    await oneToolCall(env, d, "two");
    expect(await stopDaemon(d)).toEqual({ code: 0, signal: null });
    const dir = join(env.stateDir, "sessions", SESSION);

    const signed = await verify(dir, "--json", "--public-key", key.pub);
    expect(signed.json).toMatchObject({
      verdict: "closed",
      reasons: [],
      kind: "serve_session",
      session_id: SESSION,
      decisions: { written: 2, verified: 2 },
      authentication: { authenticated: true, keyid: key.keyid, stops: 1 },
    });
    expect(signed.json.authentication.covered.logs["decisions.ndjson"].count).toBe(2);
    expect(signed.code).toBe(0);

    const text = await verify(dir);
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n")[0]).toBe("closed");
    expect(text.stdout).toContain("not authenticated");

    // Signed by a key that is not trusted.
    const untrusted = await verify(dir, "--json", "--public-key", other.pub);
    expect(untrusted.code).toBe(2);
    expect(untrusted.json.reasons.map((r: { code: string }) => r.code)).toContain("key_untrusted");

    // One byte changed in the first decision record.
    const changed = copySession(dir, join(env.dir, "changed", SESSION));
    const log = join(changed, "decisions.ndjson");
    writeFileSync(log, readFileSync(log, "utf8").replace('"fx"', '"fy"'));
    const c = await verify(changed, "--json", "--public-key", key.pub);
    expect(c.code).toBe(2);
    expect(c.json.reasons.map((r: { code: string }) => r.code)).toContain("chain_broken");

    // The last decision record removed: the chain still links, but the signatures name two.
    const cut = copySession(dir, join(env.dir, "cut", SESSION));
    const cutLog = join(cut, "decisions.ndjson");
    writeFileSync(cutLog, `${readFileSync(cutLog, "utf8").split("\n")[0]}\n`);
    const k = await verify(cut, "--json", "--public-key", key.pub);
    expect(k.code).toBe(2);
    expect(k.json.reasons.map((r: { code: string }) => r.code)).toEqual(expect.arrayContaining(["chain_head_mismatch", "checkpoint_mismatch"]));
    // …which, without a key, nothing can tell.
    expect((await verify(cut)).code).toBe(0);

    // The same files claimed by another session name.
    const renamed = copySession(dir, join(env.dir, "renamed", "night"));
    const n = await verify(renamed, "--json", "--public-key", key.pub);
    expect(n.code).toBe(2);
    expect(n.json.reasons.map((r: { code: string }) => r.code)).toEqual(expect.arrayContaining(["decision_session_mismatch", "chain_broken"]));

    // A stop envelope removed: what the checkpoints cover still holds.
    const stopless = copySession(dir, join(env.dir, "stopless", SESSION));
    rmSync(join(stopless, "stops"), { recursive: true });
    expect((await verify(stopless, "--json", "--public-key", key.pub)).json).toMatchObject({ verdict: "closed", authentication: { authenticated: true, stops: 0 } });

    // A usage error: --require-receipts is for wrap captures.
    expect((await verify(dir, "--require-receipts")).code).toBe(64);
  });

  test("a session's event ledger: a polled event delivered → closed with its accounting; a pending one → incomplete, listed", async () => {
    const env = await eventsEnvironment(cleanups, {
      servers: (fx) => [httpServer(fx!, "tickets", [{ name: "ticket.updated", delivery: "poll", instructions: "Reply." }])],
    });
    const key = writeKeyPair(join(env.dir, "serve"));
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    config.evidence = { event_source: SOURCE, signing_key: join(env.dir, "serve.key") };
    writeFileSync(env.configFile, JSON.stringify(config));
    const fx = env.fixture!;
    const serve = StdioServe.start(cleanups, env, "inbox");
    await serve.until((f) => isStatus("subscribed")(f));
    await fx.control("emit", { name: "ticket.updated", event_id: "t-1", data: { ticket_id: "T-1" } });
    await serve.until(isEventFrame("t-1"));
    await waitRuns(env.model, "t-1");
    await serve.until((f) => f.type === "run_end");
    serve.client.closeStdin();
    expect(await serve.client.exited(15_000)).toMatchObject({ code: 0 });
    const dir = join(env.stateDir, "sessions", "inbox");
    expect(ledgerTypes(dir)).toEqual(["vigil.mcp.event.received.v1", "vigil.mcp.event.delivered.v1"]);

    const r = await verify(dir, "--json", "--public-key", key.pub);
    expect(r.json).toMatchObject({
      verdict: "closed",
      reasons: [],
      kind: "serve_session",
      session_id: "inbox",
      events: { received: 1, delivered: 1, dropped: 0, gaps: 0, pending: [] },
      authentication: { authenticated: true, keyid: key.keyid, stops: 1 },
    });
    expect(r.code).toBe(0);

    // The delivery record removed (and the stop with it, which would name it): the chain still
    // links up to there, and the event is pending.
    const undelivered = copySession(dir, join(env.dir, "undelivered", "inbox"));
    const ledger = join(undelivered, "events.ndjson");
    writeFileSync(ledger, `${readFileSync(ledger, "utf8").split("\n")[0]}\n`);
    rmSync(join(undelivered, "stops"), { recursive: true });
    const u = await verify(undelivered, "--json");
    expect(u.code).toBe(1);
    expect(u.json.reasons.map((x: { code: string }) => x.code)).toEqual(["events_pending"]);
    expect(u.json.events.pending).toEqual([{ seq: expect.any(Number), event_id: "t-1" }]);
    expect(pendingOnDisk(env.stateDir, "inbox")).toEqual([]);
  });
});
