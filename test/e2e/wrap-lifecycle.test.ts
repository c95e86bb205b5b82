/**
 * How a `vigil wrap` session ends (wrap.md §2, §3, §7–§9): the stop record and vigil's exit status
 * for every way out, the group sweep that leaves no orphan, discover-only runs, the context/stop
 * pair, file modes and the capture manifest.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { type FixtureEnv, isProcessAlive, procStat, tmpDir } from "../helpers/fixture.ts";
import {
  CAPTURE,
  EVENT_SOURCE,
  VIGIL_BIN,
  type WrapSession,
  completeLines,
  readJson,
  sha256Hex,
  startWrap,
} from "../helpers/wrap.ts";

e2eSuite();

const NON_CLAIMS = ["execution_proof", "authentication", "global_coverage", "durable_storage_proof"];

/** initialize and one allowed call. */
async function openSession(s: WrapSession): Promise<void> {
  await s.initialize();
  expect((await s.call("echo", { text: "hello" })).result).toEqual({ content: [{ type: "text", text: "hello" }] });
}

function expectCompleteLog(s: WrapSession): void {
  const cap = s.capture();
  const raw = cap.decisionsRaw!;
  const { count, tail } = completeLines(raw);
  expect(tail.length).toBe(0);
  expect(cap.stop.data).toMatchObject({
    decision_log: "complete",
    decision_events_written: count,
    decision_events_dropped: 0,
    decision_prefix_sha256: sha256Hex(raw),
  });
}

describe("stop record and exit status", () => {
  test("client EOF: client_closed, exited 0, complete decision log", async () => {
    const s = startWrap();
    await openSession(s);
    await s.call("read_file", { path: "/x" });
    expect(await s.finish()).toEqual({ code: 0, signal: null });
    const cap = s.capture();
    expect(cap.stop.type).toBe("vigil.mcp.session.stop.v2");
    expect(cap.stop.data).toMatchObject({
      session_end: "client_closed",
      termination: "exited",
      exit_code: 0,
      signal: null,
      kill_requested: false,
      assertion_basis: "producer_observation",
      non_claims: NON_CLAIMS,
    });
    expect(cap.decisions).toHaveLength(2);
    expect(cap.decisions.map((d) => d.data.seq)).toEqual([0, 1]);
    expectCompleteLog(s);
    const receipts = readFileSync(join(s.captureDir!, CAPTURE.receipts));
    expect(cap.stop.data.receipts).toEqual({
      written: completeLines(receipts).count,
      dropped: 0,
      prefix_sha256: sha256Hex(receipts),
    });
    expect(cap.stop.data.counts).toMatchObject({ rejected_frames: 0, server_garbage_lines: 0, oversized: 0 });
    expect(cap.stop.data.counts.client_messages).toBe(4); // initialize, initialized, 2 calls
    expect(cap.stop.data.counts.server_messages).toBe(3);
  });

  test("server exits with code 7 mid-session: in-flight request errors, server_exited, vigil exits 7", async () => {
    const s = startWrap({ fixture: { FIXTURE_EXIT_AFTER: 2, FIXTURE_EXIT_CODE: 7 } });
    await s.initialize(); // answer 1
    s.client.send({ jsonrpc: "2.0", id: "slow-1", method: "tools/call", params: { name: "slow", arguments: { ms: 600000 } } });
    await s.request("ping"); // answer 2: the server exits with the slow call in flight
    const failed = JSON.parse((await s.client.next(10_000))!);
    expect(failed).toMatchObject({ jsonrpc: "2.0", id: "slow-1", error: { code: -32000 } });
    expect(failed.error.message).toContain("MCP server exited (code 7)");
    expect(await s.client.next(10_000)).toBeNull(); // vigil closed its stdout
    expect((await s.client.exited(15_000)).code).toBe(7);
    expect(s.capture().stop.data).toMatchObject({
      session_end: "server_exited",
      termination: "exited",
      exit_code: 7,
      signal: null,
      kill_requested: false,
    });
    // A nonzero exit can have a complete log; the request the server never answered has no response.
    expectCompleteLog(s);
    const receipt = s.capture().receipts.find((r) => r.data.request_id === "slow-1");
    expect(receipt.data).toMatchObject({ method: "tools/call", tool: "slow", outcome: "no_response" });
  });

  test("server killed by SIGKILL: signaled, signal 9, vigil exits 137", async () => {
    const s = startWrap({ fixture: { FIXTURE_SELF_KILL_AFTER: 2 } });
    await openSession(s); // the echo answer is the second: the server SIGKILLs itself
    expect((await s.client.exited(15_000)).code).toBe(137);
    expect(s.capture().stop.data).toMatchObject({
      session_end: "server_exited",
      termination: "signaled",
      exit_code: null,
      signal: 9,
      kill_requested: false,
    });
    expectCompleteLog(s);
  });

  test("server ignoring EOF and SIGTERM: killed after the grace, kill_requested, signal 9", async () => {
    const s = startWrap({
      flags: ["--allow-all", "--shutdown-grace-ms", "300"],
      fixture: { FIXTURE_IGNORE_EOF: true, FIXTURE_IGNORE_SIGTERM: true },
    });
    await openSession(s);
    const pid = await s.serverPid();
    const { code } = await s.finish(20_000);
    expect(code).toBe(137);
    expect(isProcessAlive(pid)).toBe(false);
    const cap = s.capture();
    expect(cap.stop.data).toMatchObject({
      session_end: "client_closed",
      termination: "signaled",
      exit_code: null,
      signal: 9,
      kill_requested: true,
    });
    // SIGTERM came first; the server's stderr was kept in the capture.
    expect(cap.serverStderr).toContain("fixture-server ignored SIGTERM");
    expectCompleteLog(s);
  });

  test("server ignoring only EOF: SIGTERM after the grace ends it, kill_requested, signal 15", async () => {
    const s = startWrap({ flags: ["--allow-all", "--shutdown-grace-ms", "300"], fixture: { FIXTURE_IGNORE_EOF: true } });
    await openSession(s);
    expect((await s.finish(20_000)).code).toBe(143);
    expect(s.capture().stop.data).toMatchObject({ session_end: "client_closed", termination: "signaled", signal: 15, kill_requested: true });
  });

  test("vigil receives SIGTERM while the server ignores EOF and SIGTERM: the server is killed, vigil exits 143", async () => {
    const s = startWrap({ fixture: { FIXTURE_IGNORE_EOF: true, FIXTURE_IGNORE_SIGTERM: true } });
    await openSession(s);
    const pid = await s.serverPid();
    process.kill(s.client.pid, "SIGTERM");
    expect((await s.client.exited(20_000)).code).toBe(143);
    expect(isProcessAlive(pid)).toBe(false);
    expect(s.capture().stop.data).toMatchObject({ session_end: "proxy_signaled", termination: "signaled", signal: 9, kill_requested: true });
  });

  for (const [signal, signo] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]] as const) {
    test(`vigil receives ${signal}: proxy_signaled, vigil exits ${128 + signo}, server gone`, async () => {
      const s = startWrap();
      await openSession(s);
      const pid = await s.serverPid();
      process.kill(s.client.pid, signal); // vigil only, not its group
      expect((await s.client.exited(15_000)).code).toBe(128 + signo);
      expect(isProcessAlive(pid)).toBe(false);
      const stop = s.capture().stop.data;
      expect(stop).toMatchObject({ session_end: "proxy_signaled", kill_requested: true });
      // `signal` describes the server, which got SIGTERM from vigil.
      if (stop.termination === "signaled") expect(stop.signal).toBe(15);
      else expect(stop.termination).toBe("exited");
      expectCompleteLog(s);
    });
  }

  test("client EOF with a call in flight: its response is still relayed, then the server's exit code", async () => {
    const s = startWrap({ fixture: { FIXTURE_EXIT_ON_EOF_CODE: 4 } });
    await s.initialize();
    s.client.send({ jsonrpc: "2.0", id: "slow-eof", method: "tools/call", params: { name: "slow", arguments: { ms: 50 } } });
    s.client.closeStdin();
    expect(JSON.parse((await s.client.next(10_000))!)).toMatchObject({ id: "slow-eof", result: { content: [{ text: "slept 50 ms" }] } });
    expect(await s.client.next(10_000)).toBeNull();
    expect((await s.client.exited(15_000)).code).toBe(4);
    expect(s.capture().stop.data).toMatchObject({ session_end: "client_closed", termination: "exited", exit_code: 4, kill_requested: false });
    const receipt = s.capture().receipts.find((r) => r.data.request_id === "slow-eof");
    expect(receipt.data).toMatchObject({ method: "tools/call", tool: "slow", outcome: "response" });
  });

  test("a stop record without a decision log: accounting is absent/null, no context link", async () => {
    const tmp = tmpDir("vigil-e2e");
    const stopFile = tmp.file("stop.json");
    const s = startWrap({ capture: false, flags: ["--allow-all", "--event-source", EVENT_SOURCE, "--session-stop-out", stopFile] }, tmp);
    await openSession(s);
    expect((await s.finish()).code).toBe(0);
    expect(statSync(stopFile).mode & 0o777).toBe(0o600);
    expect(readJson(stopFile).data).toMatchObject({
      session_end: "client_closed",
      session_context_id: null,
      decision_log: "absent",
      decision_events_written: null,
      decision_events_dropped: null,
      decision_prefix_sha256: null,
      receipts: null,
    });
  });
});

describe("no orphan survives vigil (double-forked grandchild)", () => {
  const ways: [string, FixtureEnv, (s: WrapSession) => Promise<void>, number][] = [
    ["client EOF", {}, async (s) => s.client.closeStdin(), 0],
    ["server exit", { FIXTURE_EXIT_AFTER: 2, FIXTURE_EXIT_CODE: 5 }, async (s) => void (await s.request("ping")), 5],
    ["vigil SIGTERM", {}, async (s) => void process.kill(s.client.pid, "SIGTERM"), 143],
  ];
  for (const [name, fixture, end, exitCode] of ways) {
    test(`grandchild is gone after ${name}`, async () => {
      const tmp = tmpDir("vigil-e2e");
      const s = startWrap({ fixture: { ...fixture, FIXTURE_GRANDCHILD: tmp.file("grandchild.pid") } }, tmp);
      await s.initialize();
      const grandchild = await s.grandchildPid();
      const server = await s.serverPid();
      expect(isProcessAlive(grandchild)).toBe(true);
      expect(procStat(grandchild)?.pgrp).toBe(server); // in the server's group, not its child any more
      await end(s);
      expect((await s.client.exited(15_000)).code).toBe(exitCode);
      expect(isProcessAlive(grandchild)).toBe(false);
      expect(isProcessAlive(server)).toBe(false);
      expect(s.capture().stop).not.toBeNull();
    });
  }
});

describe("sessions that never started", () => {
  test("a client that only sends server/discover leaves no stop or context record", async () => {
    const s = startWrap();
    s.client.send({ jsonrpc: "2.0", id: 1, method: "server/discover" });
    const answer = JSON.parse((await s.client.next(10_000))!);
    expect(answer.id).toBe(1);
    expect((await s.finish()).code).toBe(0);
    const cap = s.capture();
    expect(cap.names).not.toContain(CAPTURE.stop);
    expect(cap.names).not.toContain(CAPTURE.context);
    expect(cap.decisions).toEqual([]);
    expect(s.record()).toEqual(['{"jsonrpc":"2.0","id":1,"method":"server/discover"}']);
  });

  test("a client that sends nothing leaves no stop or context record", async () => {
    const s = startWrap();
    await s.serverPid();
    expect((await s.finish()).code).toBe(0);
    const cap = s.capture();
    expect(cap.names).not.toContain(CAPTURE.stop);
    expect(cap.names).not.toContain(CAPTURE.context);
    if (cap.manifest) expect(cap.manifest.session_id).toBeNull();
  });
});

describe("capture directory", () => {
  test("the context record pairs with the stop record", async () => {
    const s = startWrap({ flags: ["--allow-all", "--server-id", "fixture-e2e"] });
    await openSession(s);
    const pid = await s.serverPid();
    expect((await s.finish()).code).toBe(0);
    const { context, stop, manifest } = s.capture();
    const sid = context.data.session_id;
    expect(sid).toMatch(/^[0-9a-f]{16,}$/);
    expect(context).toMatchObject({ specversion: "1.0", type: "vigil.mcp.session.context.v1", source: EVENT_SOURCE, id: `evt_context_${sid}` });
    expect(stop).toMatchObject({ specversion: "1.0", type: "vigil.mcp.session.stop.v2", source: EVENT_SOURCE, id: `evt_stop_${sid}` });
    expect(stop.data.session_context_id).toBe(context.id);
    for (const key of ["session_id", "server_id", "server_pid"]) expect(stop.data[key]).toEqual(context.data[key]);
    expect(context.data).toMatchObject({
      server_id: "fixture-e2e",
      server_pid: pid,
      event_source: EVENT_SOURCE,
      policy_digest: null,
      dry_run: false,
      protocol_version: "2025-11-25",
      client_info: { name: "vigil-e2e", version: "1.0.0" },
      server_info: { name: "fixture-server", version: "1.0.0" },
      outputs: { decision_log: "new", receipts: true, session_stop: true },
    });
    expect(manifest).toMatchObject({ format: "vigil.capture.v2", event_source: EVENT_SOURCE, server_id: "fixture-e2e", session_id: sid });
    for (const d of s.capture().decisions) expect(d.data.session_id).toBe(sid);
  });

  test("files are 0600, the directory 0700, and capture.json hashes match the disk", async () => {
    const s = startWrap();
    await openSession(s);
    expect((await s.finish()).code).toBe(0);
    const cap = s.capture();
    expect(statSync(cap.dir).mode & 0o777).toBe(0o700);
    expect(cap.names).toEqual(
      [CAPTURE.manifest, CAPTURE.context, CAPTURE.stop, CAPTURE.decisions, CAPTURE.receipts, CAPTURE.serverStderr].sort(),
    );
    for (const name of cap.names) expect(statSync(join(cap.dir, name)).mode & 0o777).toBe(0o600);
    const listed = Object.keys(cap.manifest.files).sort();
    expect(listed).toEqual(cap.names.filter((n) => n !== CAPTURE.manifest));
    for (const name of listed) {
      const bytes = readFileSync(join(cap.dir, name));
      expect(cap.manifest.files[name]).toEqual({ bytes: bytes.length, sha256: sha256Hex(bytes) });
    }
    expect(cap.manifest.vigil.binary_sha256).toBe(sha256Hex(readFileSync(VIGIL_BIN)));
    expect(cap.serverStderr).toContain("fixture-server ready pid=");
  });

  test("an existing empty capture directory is used and tightened to 0700", async () => {
    const tmp = tmpDir("vigil-e2e");
    mkdirSync(tmp.file("capture"), { mode: 0o755 });
    const s = startWrap({}, tmp);
    await openSession(s);
    expect((await s.finish()).code).toBe(0);
    expect(statSync(s.captureDir!).mode & 0o777).toBe(0o700);
    expect(s.capture().names).toContain(CAPTURE.stop);
  });
});
