// The applying part of a SIGHUP reload (src/serve/reload.ts), in process against real files and
// recording fakes of the pool and the events service: refusals change nothing, the policy is
// replaced only when its digest changed, and reloads run one at a time (one asked for meanwhile
// queues exactly one more).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConfiguredChange } from "../../../src/events/hub-configured.ts";
import { loadPolicyFile } from "../../../src/policy/load.ts";
import { loadServeConfig } from "../../../src/serve/config/load.ts";
import type { ServeConfig } from "../../../src/serve/config/schema.ts";
import { PolicyHolder } from "../../../src/serve/policy-holder.ts";
import { ServeReloader } from "../../../src/serve/reload.ts";
import { sha256Hex } from "../../../src/shared/digest.ts";
import { CONFIG } from "../../../src/shared/metrics/catalog.ts";
import type { LogFields } from "../../../src/shared/log.ts";
import { waitFor } from "../../helpers/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "vigil-reload-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ENV = { OPENAI_API_KEY: "k" };

function files(name: string) {
  const configPath = join(dir, `${name}.json`);
  const policyPath = join(dir, `${name}.yaml`);
  const writeConfig = (servers: Record<string, unknown>[], more: Record<string, unknown> = {}) =>
    writeFileSync(configPath, JSON.stringify({ model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" }, policy: `${name}.yaml`, mcp_servers: servers, ...more }));
  return { configPath, policyPath, writeConfig, writePolicy: (text: string) => writeFileSync(policyPath, text) };
}

async function setup(name: string) {
  const f = files(name);
  f.writePolicy("version: 1\ntools:\n  deny: []\n");
  f.writeConfig([{ name: "a", transport: "stdio", command: "srv-a" }]);
  const config = await loadServeConfig(f.configPath, ENV);
  const holder = new PolicyHolder(await loadPolicyFile(f.policyPath));
  const lines: { message: string; fields: LogFields | undefined }[] = [];
  const calls: { servers: string[]; replace: string[]; change: ConfiguredChange }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const reloader = new ServeReloader({
    configPath: f.configPath,
    env: ENV,
    config,
    policy: holder,
    pool: {
      reconfigure: async (configs, replace) => {
        calls.at(-1)!.servers = configs.map((c) => c.name);
        calls.at(-1)!.replace = [...replace];
        await gate;
      },
    },
    events: {
      reconfigure: async (_config: ServeConfig, change: ConfiguredChange, servers: () => Promise<void>) => {
        calls.push({ servers: [], replace: [], change });
        await servers();
      },
    },
    log: (message, fields) => void lines.push({ message, fields }),
  });
  return { ...f, holder, lines, calls, reloader, hold: (p: Promise<void>) => void (gate = p) };
}

describe("ServeReloader", () => {
  test("a broken policy or config: one error line (reload_refused), nothing applied", async () => {
    const s = await setup("refused");
    const digest = s.holder.digest;
    s.writePolicy("version: 1\ntools: [\n");
    await s.reloader.reload();
    expect(s.lines).toHaveLength(1);
    expect(s.lines[0]!.fields).toEqual({ level: "error", code: "reload_refused" });
    expect(s.lines[0]!.message).toStartWith(`serve: reload refused: policy ${s.policyPath}: `);
    expect(s.lines[0]!.message).not.toContain("\n");
    expect(s.calls).toEqual([]);
    expect(s.holder.digest).toBe(digest);

    s.writePolicy("version: 1\ntools:\n  deny: [x]\n");
    writeFileSync(s.configPath, "{ not json");
    await s.reloader.reload();
    expect(s.lines).toHaveLength(2);
    expect(s.lines[1]!.message).toStartWith(`serve: reload refused: config ${s.configPath}: not valid JSON`);
    expect(s.calls).toEqual([]);
    expect(s.holder.digest).toBe(digest);
    expect(CONFIG.lastReloadSuccessful.at().value).toBe(0);
  });

  test("the reload metrics: counted by outcome; the last-reload gauge follows the last outcome", async () => {
    const s = await setup("metered");
    const refused = CONFIG.reloads.at("refused").value;
    const applied = CONFIG.reloads.at("applied").value;
    s.writePolicy("version: 1\ntools: [\n");
    await s.reloader.reload();
    expect(CONFIG.reloads.at("refused").value).toBe(refused + 1);
    expect(CONFIG.lastReloadSuccessful.at().value).toBe(0);
    s.writePolicy("version: 1\ntools:\n  deny: [x]\n");
    const before = CONFIG.lastReloadSuccessTime.at().value;
    await s.reloader.reload();
    expect(CONFIG.reloads.at("applied").value).toBe(applied + 1);
    expect(CONFIG.lastReloadSuccessful.at().value).toBe(1);
    expect(CONFIG.lastReloadSuccessTime.at().value).toBeGreaterThanOrEqual(before);
  });

  test("applied: the policy is replaced only when its digest changed; one line says what is in force", async () => {
    const s = await setup("applied");
    const first = s.holder.current;
    await s.reloader.reload();
    expect(s.holder.current).toBe(first); // same digest: the same object (limits and rate buckets go on)
    s.writePolicy("version: 1\ntools:\n  deny: [exec]\n");
    s.writeConfig([{ name: "a", transport: "stdio", command: "srv-a2" }, { name: "b", transport: "stdio", command: "srv-b" }], { system_prompt: "new" });
    await s.reloader.reload();
    expect(s.holder.current).not.toBe(first);
    expect(s.holder.digest).toBe((await loadPolicyFile(s.policyPath)).digest);
    expect(s.calls.at(-1)).toMatchObject({ servers: ["a", "b"], replace: ["a"] });
    expect(s.reloader.config.system_prompt).toBeUndefined();
    expect(s.reloader.config.mcp_servers.map((x) => x.name)).toEqual(["a", "b"]);
    const configSha = sha256Hex(await Bun.file(s.configPath).bytes());
    expect(s.lines.slice(-2)).toEqual([
      { message: "serve: not reloaded: system_prompt — restart to apply", fields: { level: "warn", code: "reload_partial" } },
      { message: `serve: reloaded: policy ${s.holder.digest} config sha256:${configSha} servers +1 ~1 -0 subscriptions +0 ~0 -0`, fields: { code: "reloaded" } },
    ]);
  });

  test("a policy removed from the config: applied (enforcement off, as a restart would run it), with one warn line saying so", async () => {
    const s = await setup("unpolicied");
    writeFileSync(s.configPath, JSON.stringify({ model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "m" }, mcp_servers: [{ name: "a", transport: "stdio", command: "srv-a" }] }));
    await s.reloader.reload();
    expect(s.holder.current).toBeNull();
    expect(s.lines.filter((l) => l.fields?.code === "policy_removed")).toEqual([
      { message: "serve: reload: the config names no policy any more: policy enforcement is off, every tool call is allowed (no_policy)", fields: { level: "warn", code: "policy_removed" } },
    ]);
    expect(s.lines.at(-1)!.message).toStartWith("serve: reloaded: policy none ");
    // Still none on the next reload: said once, when it went.
    await s.reloader.reload();
    expect(s.lines.filter((l) => l.fields?.code === "policy_removed")).toHaveLength(1);
  });

  test("serialized: reloads asked for while one runs make exactly one more, after it", async () => {
    const s = await setup("serial");
    let open!: () => void;
    s.hold(new Promise<void>((resolve) => (open = resolve)));
    const first = s.reloader.reload();
    await waitFor(() => s.calls.length === 1, { timeoutMs: 5000, label: "the first reload to reach the pool" });
    const asked = [s.reloader.reload(), s.reloader.reload(), s.reloader.reload()];
    expect(s.calls).toHaveLength(1); // the others wait
    s.hold(Promise.resolve());
    open();
    await Promise.all([first, ...asked]);
    expect(s.calls).toHaveLength(2);
    expect(s.lines.filter((l) => l.fields?.code === "reloaded")).toHaveLength(2);
  });

  test("stopped (shutdown): no reload starts", async () => {
    const s = await setup("stopped");
    s.reloader.stop();
    await s.reloader.reload();
    expect(s.calls).toEqual([]);
    expect(s.lines).toEqual([]);
  });
});
