// SIGHUP reload of `vigil serve` (issue 15 item 4) against the compiled binary: in daemon mode the
// policy, `mcp_servers` and configured subscriptions are re-read and applied without dropping a
// session or an SSE client; a bad reload is refused with one line and nothing changes; in stdio
// mode SIGHUP still ends serve.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startMockModel } from "../fixtures/mock-model.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import type { FixtureState } from "../helpers/events-fixture.ts";
import { eventsEnvironment, httpServer, isStatus, startEventsDaemon } from "../helpers/events-serve.ts";
import { LineClient, fixtureArgv, procStat, tmpDir, waitForFile } from "../helpers/fixture.ts";
import { type Daemon, type Frame, SseReader, command, framesUrl, killServerGroup, promptAndWait, startDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { groupAlive } from "../../src/shared/process-group.ts";

const cleanups = e2eSuite();

const ALLOW_ALL = "version: 1\ntools:\n  deny: []\n";
const DENY_ECHO = 'version: 1\ntools:\n  deny: ["echo"]\n';

interface ReloadEnv {
  dir: string;
  configFile: string;
  stateDir: string;
  policyFile: string;
  model: Awaited<ReturnType<typeof startMockModel>>;
  /** Rewrites the config: the mock model, the policy file and evidence, and these servers. */
  write(servers: Record<string, unknown>[], more?: Record<string, unknown>): void;
  /** A stdio fixture server entry whose grandchild pid (and so its process group) lands in `<tag>.pid`. */
  fixture(name: string, tag: string): Record<string, unknown>;
  pidFile(tag: string): string;
}

async function reloadEnv(): Promise<ReloadEnv> {
  const tmp = tmpDir("vigil-serve-reload");
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.add(() => model.close());
  const configFile = tmp.file("vigil.json");
  const policyFile = tmp.file("policy.yaml");
  writeFileSync(policyFile, ALLOW_ALL);
  const pidFile = (tag: string) => tmp.file(`${tag}.pid`);
  return {
    dir: tmp.path,
    configFile,
    stateDir: tmp.file("state"),
    policyFile,
    model,
    pidFile,
    write(servers, more = {}) {
      const config = {
        model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 20_000 },
        policy: "policy.yaml",
        evidence: { event_source: "vigil://test/reload", decision_log: true },
        mcp_servers: servers,
        ...more,
      };
      writeFileSync(configFile, JSON.stringify(config));
    },
    fixture(name, tag) {
      const [cmd, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: pidFile(tag) });
      cleanups.add(() => killServerGroup(pidFile(tag)));
      return { name, transport: "stdio", command: cmd, args };
    },
  };
}

/** The stderr lines of `d` that contain `needle`. */
const linesWith = (d: Daemon, needle: string) => d.client.stderrText().split("\n").filter((l) => l.includes(needle));

/** SIGHUP, then waits (bounded) for the n-th stderr line containing `needle`; returns it. */
async function hangUp(d: Daemon, needle: string): Promise<string> {
  const before = linesWith(d, needle).length;
  process.kill(d.client.pid, "SIGHUP");
  const lines = await waitFor(() => linesWith(d, needle), {
    until: (l) => l.length > before,
    timeoutMs: 20_000,
    label: `a new ${JSON.stringify(needle)} line after SIGHUP`,
    show: () => d.client.stderrText(),
  });
  return lines.at(-1)!;
}

const RELOADED = "serve: reloaded: ";
const REFUSED = "serve: reload refused: ";

/** The decision records of a session, oldest first. */
function decisions(stateDir: string, session: string): Record<string, unknown>[] {
  const file = join(stateDir, "sessions", session, "decisions.ndjson");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { data: Record<string, unknown> }).data);
}

/** The policy digest a reload line names. */
const digestIn = (line: string) => /policy (sha256:[0-9a-f]{64}|none)/.exec(line)?.[1];

let states = 0;
async function servers(d: Daemon, session: string): Promise<{ name: string; state: string; restarts: number }[]> {
  const r = await command(d, session, { type: "get_state", id: `g${++states}` });
  return r.body.data!.servers as { name: string; state: string; restarts: number }[];
}

const pgrpOf = async (pidFile: string) => procStat(Number((await waitForFile(pidFile, 15_000)).trim()))!.pgrp;

describe("vigil serve --listen: SIGHUP reloads", () => {
  test("a changed policy applies to the next decision of an open session (new digest), the SSE client and the session go on", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fx", "fx")]);
    const d = await startDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "ops"));

    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "one" } }] }, { text: "done" }]);
    await promptAndWait(d, sse, "ops", "first");
    const before = decisions(env.stateDir, "ops");
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ tool: "echo", decision: "allow" });
    const oldDigest = before[0]!.policy_digest as string;
    const lastSeqBefore = sse.frames.at(-1)!.seq;

    writeFileSync(env.policyFile, DENY_ECHO);
    const line = await hangUp(d, RELOADED);
    expect(line).toMatch(/serve: reloaded: policy sha256:[0-9a-f]{64} config sha256:[0-9a-f]{64} servers \+0 ~0 -0 subscriptions \+0 ~0 -0/);
    const newDigest = digestIn(line)!;
    expect(newDigest).not.toBe(oldDigest);
    expect(linesWith(d, "not reloaded")).toEqual([]);

    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "two" } }] }, { text: "done" }]);
    await promptAndWait(d, sse, "ops", "second");
    const after = decisions(env.stateDir, "ops");
    expect(after).toHaveLength(2);
    // The same session's chain goes on (seq 1 after 0), under the new policy: the call allowed before is denied.
    expect(after[1]).toMatchObject({ session_id: "ops", seq: 1, tool: "echo", decision: "deny", reason_code: "E_TOOL_DENIED", policy_digest: newDigest });
    expect(sse.frames.filter((f) => f.type === "tool_call").map((f) => f.decision)).toEqual(["allow", "deny"]);

    // The SSE client connected before the reload stayed connected and got the frames after it, numbered on.
    expect(sse.closed).toBe(false);
    const later = sse.frames.filter((f) => f.seq > lastSeqBefore);
    expect(later.length).toBeGreaterThan(0);
    const seqs = sse.frames.map((f) => f.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(sse.problems).toEqual([]);
    expect((await fetch(`${d.base}/v1/health`).then((r) => r.json())) as { sessions: number }).toMatchObject({ sessions: 1 });

    process.kill(d.client.pid, "SIGTERM");
    expect(await d.client.exited(15_000)).toEqual({ code: 0, signal: null });
  });

  test("a broken policy, then an invalid config, are refused with one line each; the old policy stays in force", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fx", "fx")]);
    const d = await startDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "ops"));
    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "one" } }] }, { text: "done" }]);
    await promptAndWait(d, sse, "ops", "first");
    const digest = decisions(env.stateDir, "ops")[0]!.policy_digest;

    writeFileSync(env.policyFile, 'version: 1\ntools:\n  deny: ["echo"\n');
    const refusal = await hangUp(d, REFUSED);
    expect(refusal).toContain(env.policyFile);
    expect(linesWith(d, "reload refused")).toHaveLength(1);
    expect(linesWith(d, RELOADED)).toEqual([]);

    // A config that fails validation (an unknown key) is refused the same way, the policy file fixed meanwhile.
    writeFileSync(env.policyFile, DENY_ECHO);
    const config = JSON.parse(readFileSync(env.configFile, "utf8"));
    writeFileSync(env.configFile, JSON.stringify({ ...config, mcp_servers: [{ ...config.mcp_servers[0], colour: "red" }] }));
    const second = await hangUp(d, REFUSED);
    expect(second).toContain(`config ${env.configFile}: mcp_servers[0]`);
    expect(linesWith(d, "reload refused")).toHaveLength(2);
    expect(linesWith(d, RELOADED)).toEqual([]);

    env.model.script([{ toolCalls: [{ name: "fx__echo", arguments: { text: "two" } }] }, { text: "done" }]);
    await promptAndWait(d, sse, "ops", "second");
    // The old policy decided, and its digest is on the record.
    expect(decisions(env.stateDir, "ops")[1]).toMatchObject({ seq: 1, decision: "allow", policy_digest: digest });
    expect(sse.closed).toBe(false);
  });

  test("mcp_servers: an added server connects and its tools are offered, a changed one reconnects, a removed stdio server's group is gone", async () => {
    const env = await reloadEnv();
    const kept = env.fixture("fk", "fk");
    env.write([kept, env.fixture("fx", "fx-1"), env.fixture("fz", "fz")]);
    const d = await startDaemon(cleanups, env);
    const sse = await SseReader.open(cleanups, framesUrl(d.base, "ops"));
    const fk = await pgrpOf(env.pidFile("fk"));
    const fxOld = await pgrpOf(env.pidFile("fx-1"));
    const fz = await pgrpOf(env.pidFile("fz"));
    expect((await servers(d, "ops")).map((s) => [s.name, s.state])).toEqual([["fk", "connected"], ["fx", "connected"], ["fz", "connected"]]);

    // fk stays as it is, fx changes (another grandchild file: new args), fy is added, fz is removed.
    env.write([kept, env.fixture("fx", "fx-2"), env.fixture("fy", "fy")]);
    const line = await hangUp(d, RELOADED);
    expect(line).toContain("servers +1 ~1 -1");
    expect(await waitFor(() => !groupAlive(fz), { timeoutMs: 10_000, label: "the removed server's group to be gone" })).toBe(true);
    expect(await waitFor(() => !groupAlive(fxOld), { timeoutMs: 10_000, label: "the changed server's old group to be gone" })).toBe(true);
    const fxNew = await pgrpOf(env.pidFile("fx-2"));
    expect(fxNew).not.toBe(fxOld);
    expect(groupAlive(fxNew)).toBe(true);
    expect(groupAlive(await pgrpOf(env.pidFile("fy")))).toBe(true);
    const states = await waitFor(() => servers(d, "ops"), {
      until: (s) => s.length === 3 && s.every((x) => x.state === "connected"),
      timeoutMs: 15_000,
      label: "fk, fx and fy connected",
    });
    expect(states.map((s) => s.name)).toEqual(["fk", "fx", "fy"]);
    // The unchanged server was not touched: the same process group, never restarted.
    expect(groupAlive(fk)).toBe(true);
    expect(await pgrpOf(env.pidFile("fk"))).toBe(fk);
    expect(states[0]).toMatchObject({ name: "fk", restarts: 0 });

    // The open session's next run is offered the new server's tools and can call them.
    env.model.script([{ toolCalls: [{ name: "fy__echo", arguments: { text: "via fy" } }] }, { text: "done" }]);
    await promptAndWait(d, sse, "ops", "use fy");
    const chats = env.model.requests.filter((r) => r.path.endsWith("/chat/completions"));
    const offered = ((chats.at(-2)!.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
    expect(offered.some((n) => n.startsWith("fy__"))).toBe(true);
    expect(offered.some((n) => n.startsWith("fz__"))).toBe(false);
    expect(sse.frames.filter((f) => f.type === "tool_call").at(-1)).toMatchObject({ server: "fy", tool: "echo", decision: "allow" });
    expect(sse.frames.filter((f) => f.type === "tool_result").at(-1)).toMatchObject({ is_error: false });
    expect(sse.closed).toBe(false);
  });

  test("configured subscriptions: added ones subscribe (the events session starts for the first), removed ones unsubscribe", async () => {
    // No configured subscription at boot: the events session is not started.
    const env = await eventsEnvironment(cleanups, { servers: (fixture) => [httpServer(fixture!, "tickets", [])] });
    const fx = env.fixture!;
    const write = (events: Record<string, unknown>[]) => env.writeConfig([httpServer(fx, "tickets", events)]);
    const push = (project: string) => ({ name: "ticket.updated", arguments: { project }, delivery: "push", action: "notify" });
    const openStreams = (s: FixtureState, project: string) => s.streams.filter((x) => x.project === project && x.end === null).length;
    const stateWhen = (done: (s: FixtureState) => boolean, label: string) =>
      waitFor(() => fx.state(), { until: done, timeoutMs: 15_000, label, show: (s) => s.streams });

    const d = await startEventsDaemon(cleanups, env);
    write([push("alpha")]);
    expect(await hangUp(d, RELOADED)).toContain("subscriptions +1 ~0 -0");
    await stateWhen((s) => openStreams(s, "alpha") === 1, "a stream for alpha (the events session started and subscribed)");

    const sse = await SseReader.open(cleanups, framesUrl(d.base, "mcp-events"));
    const subscribedTo = (project: string) => (f: Frame) =>
      isStatus("subscribed")(f) && (f.subscription as { arguments?: { project?: string } } | undefined)?.arguments?.project === project;
    write([push("beta")]);
    expect(await hangUp(d, RELOADED)).toContain("subscriptions +1 ~0 -1");
    await sse.until(subscribedTo("beta"));
    const ended = await stateWhen((s) => openStreams(s, "alpha") === 0 && openStreams(s, "beta") === 1, "alpha's stream cancelled, beta's open");
    // Ended by vigil: over HTTP the stream's request is cancelled by dropping its response.
    const alpha = ended.streams.filter((x) => x.project === "alpha");
    expect(alpha).toHaveLength(1);
    expect(["cancelled", "disconnected"]).toContain(alpha[0]!.end!);

    await fx.control("emit", { name: "ticket.updated", project: "beta", event_id: "b-1" });
    await sse.until((f) => f.type === "mcp_event" && (f.event as { eventId?: string }).eventId === "b-1");
    const list = await command(d, "mcp-events", { type: "mcp_events_list", id: "l1" });
    const subs = (list.body.data!.subscriptions as { arguments: { project: string } }[]).map((s) => s.arguments.project);
    expect(subs).toEqual(["beta"]);
    expect(sse.closed).toBe(false);
  });
});

describe("vigil serve (stdio): SIGHUP", () => {
  test("still hangs up: serve ends with 129 and the server group is gone", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fx", "fx")]);
    const client = new LineClient([VIGIL_BIN, "serve", "--config", env.configFile, "--state-dir", env.stateDir], { env: vigilEnv() });
    cleanups.add(() => client.dispose());
    await client.waitForStderr("fixture-server ready", 20_000);
    const pgrp = await pgrpOf(env.pidFile("fx"));
    client.send({ type: "get_state", id: "g1" });
    expect(await client.next(15_000)).toContain('"g1"');
    process.kill(client.pid, "SIGHUP");
    expect(await client.exited(15_000)).toEqual({ code: 129, signal: null });
    expect(await waitFor(() => !groupAlive(pgrp), { timeoutMs: 5000, label: "the server group to be gone" })).toBe(true);
    expect(client.stderrText()).not.toContain("serve: reload");
  });
});
