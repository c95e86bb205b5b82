// Edge cases of a SIGHUP reload of `vigil serve --listen` (issue 15 item 4), against the compiled
// binary: a SIGTERM while a reload waits on a server it just started still exits promptly and
// sweeps that server's group; a config file that disappears is refused and the one in force stays;
// a burst of SIGHUPs runs at most two reloads; a removed policy turns enforcement off with a warn
// line; a server removed by a reload leaves no series behind in /metrics.
import { describe, expect, test } from "bun:test";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { startMockModel } from "../fixtures/mock-model.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { fixtureArgv, procStat, tmpDir, waitForFile } from "../helpers/fixture.ts";
import { type Daemon, killServerGroup, startDaemon } from "../helpers/serve.ts";
import { waitFor } from "../helpers/wait.ts";
import { groupAlive } from "../../src/shared/process-group.ts";

const cleanups = e2eSuite();

async function reloadEnv() {
  const tmp = tmpDir("vigil-serve-reload-edges");
  cleanups.add(() => tmp.cleanup());
  const model = await startMockModel();
  cleanups.add(() => model.close());
  const configFile = tmp.file("vigil.json");
  const policyFile = tmp.file("policy.yaml");
  writeFileSync(policyFile, "version: 1\ntools:\n  deny: []\n");
  const pidFile = (tag: string) => tmp.file(`${tag}.pid`);
  return {
    configFile,
    policyFile,
    stateDir: tmp.file("state"),
    pidFile,
    write(servers: Record<string, unknown>[], more: Record<string, unknown> = { policy: "policy.yaml" }) {
      writeFileSync(configFile, JSON.stringify({ model: { provider: "openai", base_url: model.url, model: "mock-model", timeout_ms: 20_000 }, mcp_servers: servers, ...more }));
    },
    fixture(name: string, tag: string): Record<string, unknown> {
      const [cmd, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: pidFile(tag) });
      cleanups.add(() => killServerGroup(pidFile(tag)));
      return { name, transport: "stdio", command: cmd, args };
    },
    /** A stdio server that starts (its pid in `<tag>.pid`) and never answers `initialize`. */
    silent(name: string, tag: string): Record<string, unknown> {
      cleanups.add(() => killServerGroup(pidFile(tag)));
      return { name, transport: "stdio", command: "/bin/sh", args: ["-c", `echo $$$$ > '${pidFile(tag)}'; exec /bin/sleep 300`] };
    },
  };
}

const linesWith = (d: Daemon, needle: string) => d.client.stderrText().split("\n").filter((l) => l.includes(needle));

async function hangUp(d: Daemon, needle: string): Promise<string> {
  const before = linesWith(d, needle).length;
  process.kill(d.client.pid, "SIGHUP");
  const lines = await waitFor(() => linesWith(d, needle), { until: (l) => l.length > before, timeoutMs: 20_000, label: `a new ${JSON.stringify(needle)} line`, show: () => d.client.stderrText() });
  return lines.at(-1)!;
}

/** The process group of the pid written to `pidFile` (waited for: a shell creates the file before it writes it). */
async function pgrpOf(pidFile: string): Promise<number> {
  await waitForFile(pidFile, 15_000);
  const stat = await waitFor(() => procStat(Number(readFileSync(pidFile, "utf8").trim())), { timeoutMs: 5000, label: `the pid in ${pidFile}` });
  return stat.pgrp;
}

describe("vigil serve --listen: SIGHUP reload edges", () => {
  test("SIGTERM while a reload waits on the server it just started: exit 0 well before that server's connect bound, its group swept", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fk", "fk")]);
    const d = await startDaemon(cleanups, env);
    const fk = await pgrpOf(env.pidFile("fk"));
    env.write([env.fixture("fk", "fk"), env.silent("mute", "mute")]);
    process.kill(d.client.pid, "SIGHUP");
    // The new server runs, and the reload waits for its first attempt (20 s connect bound).
    const mute = await pgrpOf(env.pidFile("mute"));
    expect(linesWith(d, "serve: reloaded: ")).toEqual([]);
    process.kill(d.client.pid, "SIGTERM");
    // Shutdown is bounded by its own steps (sessions, grace), not by the reload's wait.
    expect(await d.client.exited(12_000)).toEqual({ code: 0, signal: null });
    expect(await waitFor(() => !groupAlive(mute), { timeoutMs: 5000, label: "the reload's new server group to be gone" })).toBe(true);
    expect(await waitFor(() => !groupAlive(fk), { timeoutMs: 5000, label: "the kept server group to be gone" })).toBe(true);
    expect(linesWith(d, "reload failed")).toEqual([]);
  });

  test("SIGTERM while a reload is closing a removed server that ignores EOF and SIGTERM: exit 0, that group swept too", async () => {
    const env = await reloadEnv();
    const [cmd, ...args] = fixtureArgv({ FIXTURE_GRANDCHILD: env.pidFile("stubborn"), FIXTURE_IGNORE_EOF: true, FIXTURE_IGNORE_SIGTERM: true });
    cleanups.add(() => killServerGroup(env.pidFile("stubborn")));
    const stubborn = { name: "stubborn", transport: "stdio", command: cmd, args };
    env.write([env.fixture("fk", "fk"), stubborn]);
    const d = await startDaemon(cleanups, env);
    const group = await pgrpOf(env.pidFile("stubborn"));
    env.write([env.fixture("fk", "fk")]);
    process.kill(d.client.pid, "SIGHUP");
    // The reload now waits out the server's grace and escalation; shutdown must not leave it behind.
    await d.client.waitForStderr("[stubborn] fixture-server stdin eof", 10_000);
    process.kill(d.client.pid, "SIGTERM");
    expect(await d.client.exited(15_000)).toEqual({ code: 0, signal: null });
    expect(await waitFor(() => !groupAlive(group), { timeoutMs: 5000, label: "the removed server's group to be gone" })).toBe(true);
  });

  test("a config file that disappears is refused (the one in force stays); back again, it is applied", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fk", "fk")]);
    const d = await startDaemon(cleanups, env);
    renameSync(env.configFile, `${env.configFile}.away`);
    const refused = await hangUp(d, "serve: reload refused: ");
    expect(refused).toContain(env.configFile);
    renameSync(`${env.configFile}.away`, env.configFile);
    expect(await hangUp(d, "serve: reloaded: ")).toContain("servers +0 ~0 -0");
    process.kill(d.client.pid, "SIGTERM");
    expect((await d.client.exited(15_000)).code).toBe(0);
  });

  test("a burst of SIGHUPs: one reload runs and one more is queued, never more", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fk", "fk")]);
    const d = await startDaemon(cleanups, env);
    for (let i = 0; i < 8; i++) process.kill(d.client.pid, "SIGHUP");
    await waitFor(() => linesWith(d, "serve: reloaded: ").length, { until: (n) => n >= 1, timeoutMs: 15_000, label: "a reload" });
    // A marker reload after the burst: once it is logged, everything the burst caused is too.
    writeFileSync(env.policyFile, 'version: 1\ntools:\n  deny: ["x"]\n');
    const before = linesWith(d, "serve: reloaded: ").length;
    await hangUp(d, "serve: reloaded: ");
    expect(before).toBeLessThanOrEqual(2);
    const health = (await fetch(`${d.base}/v1/health`).then((r) => r.json())) as { ok: boolean };
    expect(health.ok).toBe(true);
    process.kill(d.client.pid, "SIGTERM");
    expect((await d.client.exited(15_000)).code).toBe(0);
  });

  test("a policy removed by a reload: enforcement is off from now on, and a warn line says so", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fk", "fk")]);
    const d = await startDaemon(cleanups, env);
    env.write([env.fixture("fk", "fk")], {});
    const line = await hangUp(d, "serve: reloaded: ");
    expect(line).toContain("policy none");
    const warned = linesWith(d, "policy enforcement is off");
    expect(warned).toHaveLength(1);
    process.kill(d.client.pid, "SIGTERM");
    expect((await d.client.exited(15_000)).code).toBe(0);
  });

  test("a server removed by a reload: its state and reconnect series are gone from /metrics", async () => {
    const env = await reloadEnv();
    env.write([env.fixture("fk", "fk"), env.fixture("fz", "fz")]);
    const d = await startDaemon(cleanups, env);
    await pgrpOf(env.pidFile("fz"));
    const scrape = () => fetch(`${d.base}/metrics`).then((r) => r.text());
    await waitFor(scrape, { until: (t) => t.includes('vigil_mcp_server_state{server="fz",state="connected"} 1'), timeoutMs: 15_000, label: "fz connected in /metrics" });
    expect(await scrape()).toContain('vigil_mcp_server_reconnects_total{server="fz"} 0');
    env.write([env.fixture("fk", "fk")]);
    expect(await hangUp(d, "serve: reloaded: ")).toContain("servers +0 ~0 -1");
    const after = await scrape();
    expect(after).toContain('vigil_mcp_server_state{server="fk",state="connected"} 1');
    expect(after).not.toContain('server="fz"');
    process.kill(d.client.pid, "SIGTERM");
    expect((await d.client.exited(15_000)).code).toBe(0);
  });
});
