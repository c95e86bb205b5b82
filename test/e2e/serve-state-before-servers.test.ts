// stdio mode opens its session's state before any MCP server starts (issue 11 item 3; README
// "Exit codes": exit 2, "no MCP server was started"), against the compiled binary: a stdio MCP
// server that leaves a marker file when it starts is never started when the state is refused.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { vigilEnv } from "../helpers/bin.ts";
import { fixtureArgv, tmpDir } from "../helpers/fixture.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

/** A config whose stdio MCP server writes `marker` as it starts (then is the fixture server); the session's directory. */
function setup() {
  const tmp = tmpDir("vigil-state-first");
  cleanups.add(() => tmp.cleanup());
  const marker = tmp.file("server-started");
  // `$$` is a `$` in config args; the marker path is the shell's $0.
  const server = { name: "fx", transport: "stdio", command: "sh", args: ["-c", ': > "$$0"; exec "$$@"', marker, ...fixtureArgv()] };
  const configFile = tmp.file("vigil.json");
  writeFileSync(configFile, JSON.stringify({ model: { provider: "command", command: ["cat"], timeout_ms: 5000 }, mcp_servers: [server] }));
  const stateDir = tmp.file("state");
  const sessionDir = join(stateDir, "sessions", "default");
  mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  const serve = () => runVigil(["serve", "--config", configFile, "--state-dir", stateDir], { env: vigilEnv(), timeoutMs: 30_000 });
  return { marker, serve, file: (f: string) => join(sessionDir, f) };
}

const record = (seq: number) => `${JSON.stringify({ seq, time: "2030-01-01T00:00:00.000Z", type: "message", role: "user", text: `m${seq}` })}\n`;

describe("a refused session state starts no MCP server", () => {
  for (const [what, file, text] of [
    ["a corrupt mcp-events.json", "mcp-events.json", '{"version":"vigil.mcp-events.v1",'],
    ["a transcript damaged before its last line", "transcript.jsonl", `${record(1)}not a record\n${record(3)}`],
  ] as const) {
    test(`${what}: exit 2 naming the file, and the server never started`, async () => {
      const s = setup();
      writeFileSync(s.file(file), text, { mode: 0o600 });
      const run = await s.serve();
      expect({ code: run.code, serverStarted: existsSync(s.marker) }).toEqual({ code: 2, serverStarted: false });
      expect(run.stderr).toContain(s.file(file));
    });
  }

  test("with healthy state the same server is started (the marker works)", async () => {
    const s = setup();
    const run = await s.serve();
    expect(run.code).toBe(0);
    expect(existsSync(s.marker)).toBe(true);
  });
});
