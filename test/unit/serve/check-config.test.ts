// `vigil serve --check-config` in-process (src/serve/check-config.ts, state/state-dir-check.ts,
// refusables.ts): the flags it adds, the state dir judged without being touched (refused vs
// warned), and the summary built from what loaded — with no secret in it. The compiled binary is
// checked in test/e2e/serve-check-config.test.ts.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateKeyPair } from "../../../src/evidence/keys.ts";
import { checkSummary, renderCheckSummary } from "../../../src/serve/check-config.ts";
import { type ServeFlags, planServe } from "../../../src/serve/flags.ts";
import { loadRefusables } from "../../../src/serve/refusables.ts";
import { inspectStateDir } from "../../../src/serve/state/state-dir-check.ts";
import { type TmpDir, tmpDir } from "../../helpers/fixture.ts";
import { refusalOf } from "../../helpers/refusal.ts";

let tmp: TmpDir;
afterEach(() => tmp?.cleanup());
const fresh = () => (tmp = tmpDir("vigil-check-config"));
const isRoot = process.getuid?.() === 0;

describe("planServe: --check-config and --json", () => {
  test("--check-config plans a check (text by default, --json for JSON); without it serve runs", () => {
    expect(planServe({}).check).toBeNull();
    expect(planServe({ "check-config": true }).check).toEqual({ json: false });
    expect(planServe({ "check-config": true, json: true }).check).toEqual({ json: true });
  });

  test("the other flags are judged as for a start: a bad one is the same usage error", () => {
    const cases: [ServeFlags, string][] = [
      [{ "check-config": true, listen: "localhost" }, "--listen"],
      [{ "check-config": true, listen: "8080", session: "s" }, "--session names the stdio session"],
      [{ "check-config": true, "max-sessions": "3" }, "--max-sessions caps the daemon's sessions"],
      [{ json: true }, "--json formats the --check-config summary: it requires --check-config"],
    ];
    for (const [flags, message] of cases) {
      const e = refusalOf(() => planServe(flags));
      expect(e.exitCode).toBe(2);
      expect(e.message).toContain(message);
    }
  });
});

describe("inspectStateDir: refuses what serve would, creates nothing", () => {
  test("a missing dir under a writable parent passes and is not created (nor its parents)", () => {
    fresh();
    const dir = join(tmp.path, "a", "b", "state");
    expect(inspectStateDir(dir)).toEqual({ path: dir, exists: false, warnings: [] });
    expect(existsSync(join(tmp.path, "a"))).toBe(false);
  });

  test("a missing dir whose nearest ancestor is a file is refused", () => {
    fresh();
    writeFileSync(tmp.file("file"), "");
    const e = refusalOf(() => inspectStateDir(join(tmp.path, "file", "state")));
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain("is not a directory");
  });

  test("0700: passes without a warning; 0750: passes with a warning; 0770, 0707: refused", () => {
    fresh();
    const dir = tmp.file("state");
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700);
    expect(inspectStateDir(dir)).toEqual({ path: dir, exists: true, warnings: [] });
    chmodSync(dir, 0o750);
    const warned = inspectStateDir(dir);
    expect(warned.warnings).toHaveLength(1);
    expect(warned.warnings[0]).toContain("readable by group or others (mode 0750)");
    for (const mode of [0o770, 0o707]) {
      chmodSync(dir, mode);
      expect(refusalOf(() => inspectStateDir(dir)).message).toContain("group- or world-writable");
    }
  });

  test("a symlink, a file and a world-writable sessions/ are refused, as serve refuses them", () => {
    fresh();
    const real = tmp.file("real");
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, tmp.file("link"));
    expect(refusalOf(() => inspectStateDir(tmp.file("link"))).message).toContain("symbolic link");
    writeFileSync(tmp.file("plain"), "");
    expect(refusalOf(() => inspectStateDir(tmp.file("plain"))).message).toContain("not a directory");
    mkdirSync(join(real, "sessions"), { mode: 0o700 });
    chmodSync(join(real, "sessions"), 0o777);
    expect(refusalOf(() => inspectStateDir(real)).message).toContain("refusing sessions directory");
  });

  test.skipIf(!isRoot)("a dir owned by another user is refused (root only: chown)", () => {
    fresh();
    const dir = tmp.file("state");
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 54321, 54321);
    expect(refusalOf(() => inspectStateDir(dir)).message).toContain("owned by uid 54321");
  });

  test.skipIf(isRoot)("a dir we cannot write into is refused, and so is a missing one under it (non-root only)", () => {
    fresh();
    const dir = tmp.file("state");
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o500);
    expect(refusalOf(() => inspectStateDir(dir)).message).toContain("cannot write into it");
    expect(refusalOf(() => inspectStateDir(join(dir, "inner"))).message).toContain(`cannot write into ${dir}`);
    chmodSync(dir, 0o700);
  });
});

describe("the summary", () => {
  const SECRETS = { header: "Bearer hdr-secret-123456", env: "env-secret-abcdef", key: "api-key-secret-987654", url: "https://u:url-pass-55555@mcp.example.com/x" };

  async function loaded(extra: Record<string, unknown> = {}) {
    fresh();
    const key = generateKeyPair(tmp.file("signing"));
    writeFileSync(tmp.file("policy.yaml"), "version: 1\ntools:\n  allow: ['*']\n");
    const config = {
      model: { provider: "openai", base_url: "http://127.0.0.1:9/v1", model: "qwen3", api_key_env: "CHECK_KEY" },
      policy: "policy.yaml",
      evidence: { event_source: "vigil://host/agent", signing_key: "signing.key" },
      mcp_servers: [
        { name: "tickets", transport: "http", url: "https://mcp.example.com:8443/mcp?tenant=1", headers: { Authorization: SECRETS.header }, events: [{ name: "ticket.updated", delivery: "webhook", action: "notify" }, { name: "odd name" }] },
        { name: "creds", transport: "http", url: SECRETS.url },
        { name: "fs", transport: "stdio", command: "npx", args: ["--token", "${ARG_SECRET}"], env: { TOKEN: SECRETS.env } },
      ],
      ...extra,
    };
    writeFileSync(tmp.file("vigil.json"), JSON.stringify(config));
    const env = { CHECK_KEY: SECRETS.key, ARG_SECRET: "arg-secret-24680", VIGIL_EVENTS_COALESCE_MS: "10" };
    const stateDir = tmp.file("state");
    const parts = await loadRefusables({ config: tmp.file("vigil.json"), stateDir }, env, (dir) => inspectStateDir(dir).path);
    expect(existsSync(stateDir)).toBe(false);
    return { parts, env, keyid: key.keyid, stateDir };
  }

  test("names servers, subscriptions, model, policy, key id prefix and state dir", async () => {
    const { parts, env, keyid, stateDir } = await loaded();
    const plan = planServe({ "check-config": true, listen: "127.0.0.1:8080", config: tmp.file("vigil.json") });
    const summary = checkSummary(plan, parts, inspectStateDir(stateDir), env);
    expect(summary.servers).toEqual([
      { name: "tickets", transport: "http", host: "mcp.example.com:8443" },
      { name: "creds", transport: "http", host: "<redacted>" },
      { name: "fs", transport: "stdio", command: "npx" },
    ]);
    expect(summary.subscriptions).toEqual([
      { server: "tickets", event: "ticket.updated", delivery: "webhook", action: "notify" },
      { server: "tickets", event: "odd name", delivery: "negotiate", action: "follow_up" },
    ]);
    expect(summary.model).toEqual({ provider: "openai", description: "openai:qwen3@http://127.0.0.1:9/v1", api_key_env: "CHECK_KEY" });
    expect(summary.policy?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(summary.evidence?.signing_key_id).toBe(keyid.slice(0, 16));
    expect(summary.state_dir).toEqual({ path: stateDir, exists: false });
    expect(summary.tuning).toEqual({ VIGIL_EVENTS_COALESCE_MS: 10 });
    const text = renderCheckSummary(summary);
    expect(text.split("\n")).toEqual([
      "vigil serve --check-config: ok",
      `config: ${tmp.file("vigil.json")}`,
      "mode: daemon, listen http://127.0.0.1:8080, max 1000 sessions, idle timeout 3600 s",
      "model: openai:qwen3@http://127.0.0.1:9/v1, API key from $CHECK_KEY",
      "server: tickets http host mcp.example.com:8443",
      "server: creds http host <redacted>",
      "server: fs stdio command npx",
      "subscription: tickets ticket.updated delivery webhook, action notify",
      'subscription: tickets "odd name" delivery negotiate, action follow_up',
      `policy: ${tmp.file("policy.yaml")} ${summary.policy?.digest}`,
      `evidence: vigil://host/agent, decision log on, signing key ${keyid.slice(0, 16)}`,
      `state: ${stateDir} (will be created)`,
      "tuning: VIGIL_EVENTS_COALESCE_MS=10",
    ]);
    for (const out of [text, JSON.stringify(summary)]) {
      for (const secret of [...Object.values(SECRETS), "url-pass-55555", "arg-secret-24680", "tenant=1"]) expect(out).not.toContain(secret);
    }
  });

  test("stdio mode, no servers, no policy, no evidence", async () => {
    const { parts, env, stateDir } = await loaded({ mcp_servers: [], policy: undefined, evidence: undefined });
    const summary = checkSummary(planServe({ "check-config": true, session: "ops" }), parts, inspectStateDir(stateDir), env);
    const text = renderCheckSummary(summary);
    expect(text).toContain("mode: stdio, session ops");
    expect(text).toContain("servers: none");
    expect(text).toContain("subscriptions: none");
    expect(text).toContain("policy: none");
    expect(text).toContain("evidence: off");
  });
});
