/**
 * A session whose state files cannot be used is a state refusal, not a bug (issue 11 item 9): a
 * corrupt `mcp-events.json` or a transcript damaged before its last line stops stdio mode with
 * exit 2 and one line naming the file — no stack, no "internal error" (exit 70). Daemon mode goes
 * through the same session-opening path: that session answers 503 with the same one line in the
 * log, and the daemon and its other sessions go on.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { tmpDir } from "../helpers/fixture.ts";
import { command, startDaemon, stopDaemon } from "../helpers/serve.ts";
import { runVigil } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

/** A config with the `cat` command model and no MCP servers, and a state dir holding session `name`'s directory. */
function stateWith(name: string) {
  const tmp = tmpDir("vigil-state-refusal");
  cleanups.add(() => tmp.cleanup());
  const configFile = tmp.file("vigil.json");
  writeFileSync(configFile, JSON.stringify({ model: { provider: "command", command: ["cat"], timeout_ms: 5000 } }));
  const stateDir = tmp.file("state");
  const sessionDir = join(stateDir, "sessions", name);
  mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  return { configFile, stateDir, file: (f: string) => join(sessionDir, f) };
}

function writeState(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
}

const record = (seq: number) => `${JSON.stringify({ seq, time: "2030-01-01T00:00:00.000Z", type: "message", role: "user", text: `m${seq}` })}\n`;

/** The damage each case writes into the session's directory, and the file the refusal must name. */
const DAMAGE: [what: string, file: string, text: string][] = [
  ["mcp-events.json that is not JSON", "mcp-events.json", '{"version":"vigil.mcp-events.v1",'],
  ["mcp-events.json of the wrong shape", "mcp-events.json", '{"subscriptions":7}'],
  ["transcript.jsonl damaged before its last line", "transcript.jsonl", `${record(1)}not a record\n${record(3)}`],
];

describe("stdio mode refuses unusable session state with exit 2 and one line naming the file", () => {
  for (const [what, file, text] of DAMAGE) {
    test(what, async () => {
      const s = stateWith("default");
      writeState(s.file(file), text);
      const run = await runVigil(["serve", "--config", s.configFile, "--state-dir", s.stateDir]);
      // The startup line (what was loaded) comes first; the refusal is the one line after it.
      const lines = run.stderr.trimEnd().split("\n").filter((l) => !l.startsWith("vigil: serve: model="));
      expect({ code: run.code, stdout: run.stdout, lines: lines.length }).toEqual({ code: 2, stdout: "", lines: 1 });
      expect(lines[0]).toStartWith("vigil: ");
      expect(lines[0]).toContain(s.file(file));
      expect(run.stderr).not.toContain("internal error");
    });
  }
});

describe("daemon mode opens sessions the same way", () => {
  test("a session with a corrupt mcp-events.json answers 503 and logs one line naming the file; the daemon goes on", async () => {
    const s = stateWith("broken");
    writeState(s.file("mcp-events.json"), "{garbage");
    const d = await startDaemon(cleanups, s);
    const refused = await command(d, "broken", { type: "get_state", id: "g1" });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: "session_unavailable" } });
    // (The boot scan of sessions to restore has said so once already, at start.)
    const log = d.client.stderrText().split("\n").filter((l) => l.startsWith('vigil: serve: session "broken" could not be opened: '));
    expect(log).toHaveLength(1);
    expect(log[0]).toContain(s.file("mcp-events.json"));
    const healthy = await command(d, "other", { type: "get_state", id: "g2" });
    expect(healthy.status).toBe(200);
    expect(d.client.stderrText()).not.toContain("internal error");
    expect((await stopDaemon(d)).code).toBe(0);
  });
});
