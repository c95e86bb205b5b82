// What `vigil serve` refuses at start (README "Environment", "Exit status" 2), against the compiled
// binary: every bad knob exits 2 naming the variable (the log level included, and a reconnect
// backoff whose first wait is over its cap), a config value failing two checks is said once, every
// stderr line carries the `vigil: ` prefix, and an out-of-range bound names its range.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { tmpDir } from "../helpers/fixture.ts";

const cleanups = e2eSuite();
const EXIT_BOUND_MS = 15_000;

/** Runs `vigil serve <args>` with stdin at EOF; resolves with its exit code and whole stderr. */
async function serve(args: string[], knobs: Record<string, string> = {}, config: object = { model: { provider: "command", command: ["cat"] } }) {
  const tmp = tmpDir("vigil-serve-refusals");
  cleanups.add(() => tmp.cleanup());
  const configFile = tmp.file("vigil.json");
  writeFileSync(configFile, JSON.stringify(config));
  const proc = Bun.spawn([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", tmp.file("state"), ...args], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: vigilEnv({ K: "x", ...knobs }),
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), EXIT_BOUND_MS);
  cleanups.add(() => {
    clearTimeout(timer);
    proc.kill("SIGKILL");
  });
  const stderr = await new Response(proc.stderr).text();
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stderr, configFile };
}

const lines = (stderr: string) => stderr.split("\n").filter((l) => l !== "");

describe("vigil serve refuses bad knobs and bounds, naming them", () => {
  test("VIGIL_LOG_LEVEL other than info or debug exits 2 naming the variable", async () => {
    const r = await serve([], { VIGIL_LOG_LEVEL: "verbose" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('VIGIL_LOG_LEVEL: expected "info" or "debug" (got "verbose")');
    // The accepted spellings still start (stdin at EOF: stdio mode ends with 0).
    expect((await serve([], { VIGIL_LOG_LEVEL: "DEBUG" })).code).toBe(0);
  });

  test("VIGIL_MCP_RECONNECT_INITIAL_MS over VIGIL_MCP_RECONNECT_CAP_MS exits 2 naming both", async () => {
    const r = await serve([], { VIGIL_MCP_RECONNECT_INITIAL_MS: "5000", VIGIL_MCP_RECONNECT_CAP_MS: "1000" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("VIGIL_MCP_RECONNECT_INITIAL_MS (5000) is larger than VIGIL_MCP_RECONNECT_CAP_MS (1000)");
    // Equal is fine: the first wait is the cap.
    expect((await serve([], { VIGIL_MCP_RECONNECT_INITIAL_MS: "1000", VIGIL_MCP_RECONNECT_CAP_MS: "1000" })).code).toBe(0);
  });

  test("a config value failing two checks is said once, and every line carries the vigil: prefix", async () => {
    const model = { provider: "openai", base_url: "http://127.0.0.1:1/v1", model: "m", api_key_env: "K", context_tokens: 1.5, max_turns: 0.5 };
    const r = await serve([], {}, { model });
    expect(r.code).toBe(2);
    const got = lines(r.stderr);
    expect(got.filter((l) => l.includes("model.max_turns:"))).toHaveLength(1);
    expect(got.filter((l) => l.includes("model.context_tokens:"))).toHaveLength(1);
    for (const line of got) expect(line.startsWith(`vigil: config ${r.configFile}: `)).toBe(true);
  });

  test("several bad knobs: one prefixed line each", async () => {
    const r = await serve([], { VIGIL_EVENTS_POLL_FLOOR_MS: "0", VIGIL_LOG_LEVEL: "loud" });
    expect(r.code).toBe(2);
    const got = lines(r.stderr);
    expect(got).toHaveLength(2);
    for (const line of got) expect(line.startsWith("vigil: VIGIL_")).toBe(true);
  });

  test("--transcript-retain-bytes and --max-sessions beyond their range name the range", async () => {
    const retain = await serve(["--transcript-retain-bytes", "99999999999999999999"]);
    expect(retain.code).toBe(2);
    expect(retain.stderr).toContain(`--transcript-retain-bytes: expected a whole number of bytes from 0 to ${Number.MAX_SAFE_INTEGER}`);
    const sessions = await serve(["--listen", "127.0.0.1:0", "--max-sessions", "99999999999999999999"]);
    expect(sessions.code).toBe(2);
    expect(sessions.stderr).toContain("--max-sessions: expected a whole number from 1 to 1000000");
  });
});
