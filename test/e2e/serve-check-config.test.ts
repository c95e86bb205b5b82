// `vigil serve --check-config` against the compiled binary (issue 15 item 5): a valid config exits
// 0 with its summary on stdout; each kind of refusal exits 2 with serve's own message on stderr and
// nothing on stdout; and nothing is started or touched either way — the stdio server's command
// (which would create a marker file) is not run, the HTTP MCP server and the model's base URL get
// no request, the state dir is not created — and no configured secret appears in any output.
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { generateKeyPair } from "../../src/evidence/keys.ts";
import { vigilEnv } from "../helpers/bin.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { type TmpDir, tmpDir } from "../helpers/fixture.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();
const EXIT_BOUND_MS = 15_000;

const SECRETS = {
  header: "hdr-secret-0123456789",
  env: "env-secret-abcdefghij",
  apiKey: "api-key-secret-9876543210",
  expanded: "expanded-secret-1357924680",
};

interface Setup {
  tmp: TmpDir;
  marker: string;
  stateDir: string;
  /** Requests the MCP server and the model endpoint received (both must stay at 0). */
  requests: () => number;
  write(config: Record<string, unknown>): string;
  config: Record<string, unknown>;
}

function setup(): Setup {
  const tmp = tmpDir("vigil-check-config-e2e");
  cleanups.add(() => tmp.cleanup());
  let requests = 0;
  const http = Bun.serve({ hostname: "127.0.0.1", port: 0, development: false, fetch: () => {
    requests++;
    return new Response("no", { status: 500 });
  } });
  cleanups.add(() => http.stop(true));
  const base = `http://127.0.0.1:${http.port}`;
  generateKeyPair(tmp.file("signing"));
  writeFileSync(tmp.file("policy.yaml"), "version: 1\ntools:\n  allow: ['*']\n");
  const marker = tmp.file("marker");
  const config = {
    model: { provider: "openai", base_url: `${base}/v1`, model: "qwen3", api_key_env: "CHECK_API_KEY" },
    policy: "policy.yaml",
    evidence: { event_source: "vigil://host/agent", signing_key: "signing.key" },
    mcp_servers: [
      { name: "tickets", transport: "http", url: `${base}/mcp`, headers: { Authorization: `Bearer ${SECRETS.header}`, "X-Other": "${CHECK_EXPANDED}" }, events: [{ name: "ticket.updated", delivery: "poll" }] },
      { name: "fs", transport: "stdio", command: "/bin/sh", args: ["-c", `touch ${marker}`], env: { TOKEN: SECRETS.env } },
    ],
  };
  const write = (c: Record<string, unknown>) => {
    writeFileSync(tmp.file("vigil.json"), JSON.stringify(c));
    return tmp.file("vigil.json");
  };
  write(config);
  return { tmp, marker, stateDir: tmp.file("state"), requests: () => requests, write, config };
}

const SECRET_ENV = { CHECK_API_KEY: SECRETS.apiKey, CHECK_EXPANDED: SECRETS.expanded };

/** Runs `vigil serve --check-config …`; resolves with the exit code, stdout and stderr. */
function check(s: Setup, args: string[] = [], env: Record<string, string> = SECRET_ENV) {
  return runVigil(["serve", "--check-config", "--config", s.tmp.file("vigil.json"), "--state-dir", s.stateDir, ...args], { env: vigilEnv(env), timeoutMs: EXIT_BOUND_MS });
}

/** Nothing was started, contacted or created, and no secret was printed. */
function expectUntouched(s: Setup, outputs: string[]): void {
  expect(existsSync(s.marker)).toBe(false);
  expect(s.requests()).toBe(0);
  for (const out of outputs) for (const secret of Object.values(SECRETS)) expect(out).not.toContain(secret);
}

describe("vigil serve --check-config", () => {
  test("a valid config: exit 0, the summary on stdout, nothing started, no state dir created, no secret shown", async () => {
    const s = setup();
    const r = await check(s, ["--listen", "127.0.0.1:8080"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("vigil serve --check-config: ok");
    expect(lines).toContain(`config: ${s.tmp.file("vigil.json")}`);
    expect(lines).toContain("mode: daemon, listen http://127.0.0.1:8080, max 1000 sessions, idle timeout 3600 s");
    expect(lines.find((l) => l.startsWith("model: "))).toMatch(/^model: openai:qwen3@http:\/\/127\.0\.0\.1:\d+\/v1, API key from \$CHECK_API_KEY$/);
    expect(lines.find((l) => l.startsWith("server: tickets"))).toMatch(/^server: tickets http host 127\.0\.0\.1:\d+$/);
    expect(lines).toContain("server: fs stdio command /bin/sh");
    expect(lines).toContain("subscription: tickets ticket.updated delivery poll, action follow_up");
    expect(lines.find((l) => l.startsWith("policy: "))).toMatch(new RegExp(`^policy: ${s.tmp.file("policy.yaml")} sha256:[0-9a-f]{64}$`));
    expect(lines.find((l) => l.startsWith("evidence: "))).toMatch(/^evidence: vigil:\/\/host\/agent, decision log on, signing key [0-9a-f]{16}$/);
    expect(lines).toContain(`state: ${s.stateDir} (will be created)`);
    expect(existsSync(s.stateDir)).toBe(false);
    expectUntouched(s, [r.stdout, r.stderr]);
  });

  test("--json: one JSON object; an existing state dir readable by others passes with a warning on stderr", async () => {
    const s = setup();
    mkdirSync(s.stateDir);
    chmodSync(s.stateDir, 0o755);
    const r = await check(s, ["--json"]);
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.mode).toEqual({ kind: "stdio", session: "default" });
    expect(summary.servers.map((x: { name: string }) => x.name)).toEqual(["tickets", "fs"]);
    expect(summary.state_dir).toEqual({ path: s.stateDir, exists: true });
    expect(summary.warnings).toHaveLength(1);
    expect(r.stderr).toContain("warning: state directory");
    expect(r.stderr).toContain("readable by group or others (mode 0755)");
    expectUntouched(s, [r.stdout, r.stderr]);
  });

  test("each kind of refusal: exit 2, serve's message on stderr, nothing on stdout, nothing started", async () => {
    const cases: { name: string; arrange: (s: Setup) => { args?: string[]; env?: Record<string, string> }; message: string | RegExp }[] = [
      { name: "config: unknown key", arrange: (s) => (s.write({ ...s.config, modle: {} }), {}), message: /config .*vigil\.json: modle:/ },
      { name: "config: not JSON", arrange: (s) => (writeFileSync(s.tmp.file("vigil.json"), "{"), {}), message: "not valid JSON" },
      { name: "config: missing file", arrange: (s) => (rmSync(s.tmp.file("vigil.json")), {}), message: "cannot read: no such file" },
      { name: "the API key variable is unset", arrange: () => ({ env: { CHECK_EXPANDED: SECRETS.expanded } }), message: "model.api_key_env: environment variable CHECK_API_KEY is not set" },
      { name: "a ${VAR} is unset", arrange: () => ({ env: { CHECK_API_KEY: SECRETS.apiKey } }), message: "CHECK_EXPANDED" },
      { name: "a tuning knob", arrange: () => ({ env: { ...SECRET_ENV, VIGIL_EVENTS_POLL_FLOOR_MS: "0" } }), message: "VIGIL_EVENTS_POLL_FLOOR_MS: expected an integer" },
      { name: "the policy", arrange: (s) => (writeFileSync(s.tmp.file("policy.yaml"), "version: 7\n"), {}), message: /policy .*policy\.yaml: / },
      { name: "signing key readable by others", arrange: (s) => (chmodSync(s.tmp.file("signing.key"), 0o644), {}), message: "readable or writable by group/others (mode 0644)" },
      { name: "signing key: the public key given", arrange: (s) => (s.write({ ...s.config, evidence: { event_source: "vigil://h/a", signing_key: "signing.pub" } }), {}), message: "a public key; give its private key" },
      { name: "state dir world-writable", arrange: (s) => (mkdirSync(s.stateDir), chmodSync(s.stateDir, 0o777), {}), message: "group- or world-writable (mode 0777)" },
      { name: "state dir under a file", arrange: (s) => (writeFileSync(s.tmp.file("file"), ""), (s.stateDir = `${s.tmp.file("file")}/state`), {}), message: "is not a directory" },
      { name: "a bad --listen", arrange: () => ({ args: ["--listen", "127.0.0.1:99999"] }), message: "--listen" },
      { name: "a flag for the other mode", arrange: () => ({ args: ["--max-sessions", "5"] }), message: "--max-sessions caps the daemon's sessions: it requires --listen" },
    ];
    for (const c of cases) {
      const s = setup();
      const { args = [], env = SECRET_ENV } = c.arrange(s);
      const r = await check(s, args, env);
      expect({ name: c.name, code: r.code, stdout: r.stdout }).toEqual({ name: c.name, code: 2, stdout: "" });
      if (typeof c.message === "string") expect(r.stderr).toContain(c.message);
      else expect(r.stderr).toMatch(c.message);
      for (const line of r.stderr.trimEnd().split("\n")) expect(line.startsWith("vigil: ")).toBe(true);
      expectUntouched(s, [r.stdout, r.stderr]);
    }
  });

  test("--json without --check-config is a usage error, before anything is loaded", async () => {
    const s = setup();
    const { code, stderr } = await runVigil(["serve", "--json", "--config", s.tmp.file("vigil.json"), "--state-dir", s.stateDir], { env: vigilEnv(SECRET_ENV), timeoutMs: EXIT_BOUND_MS });
    expect(code).toBe(2);
    expect(stderr).toContain("--json formats the --check-config summary: it requires --check-config");
    expectUntouched(s, [stderr]);
    expect(existsSync(s.stateDir)).toBe(false);
  });
});
