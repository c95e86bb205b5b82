// A stdio MCP server's stderr line is scrubbed before it is cut at 4 KiB (issue 11 item 1), against
// the compiled binary: a secret vigil holds for that server (a value of its `env`) printed across
// the cut leaves no prefix in vigil's log — the placeholder stands where it began.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { LineClient, fixtureArgv, tmpDir } from "../helpers/fixture.ts";

const cleanups = e2eSuite();

const SECRET = "zq7-SECRET-straddle-3f9b1c";
/** Bytes of the line before the secret: its first 8 characters fall before the 4096-byte cut. */
const LEAD = 4096 - 8;

describe("a stdio MCP server's long stderr line", () => {
  test("a secret across the 4 KiB cut is scrubbed before the cut: no prefix of it in the log", async () => {
    const tmp = tmpDir("vigil-stderr-cut");
    cleanups.add(() => tmp.cleanup());
    // The line is printed by a shell that then becomes the fixture server; its padding comes as
    // arguments (every `env` value is a secret, the padding must not be one). `$$` is a `$` in args.
    const script = 'printf "%s%s%s\\n" "$$1" "$$LINE_TOKEN" "$$2" >&2; shift 2; exec "$$@"';
    const config = {
      model: { provider: "command", command: ["cat"], timeout_ms: 5000 },
      mcp_servers: [
        { name: "loud", transport: "stdio", command: "sh", args: ["-c", script, "sh", "a".repeat(LEAD), "b".repeat(2000), ...fixtureArgv()], env: { LINE_TOKEN: SECRET } },
      ],
    };
    const configFile = tmp.file("vigil.json");
    writeFileSync(configFile, JSON.stringify(config));
    const client = new LineClient([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", tmp.file("state")], { env: vigilEnv() });
    cleanups.add(() => client.dispose());
    // The fixture says it is ready after the long line, on the same pipe: the line was forwarded by then.
    await client.waitForStderr("fixture-server ready", 20_000);
    client.closeStdin();
    expect((await client.exited(20_000)).code).toBe(0);

    const line = client.stderrText().split("\n").find((l) => l.startsWith("vigil: [loud] aaaa"));
    expect(line).toBeDefined();
    expect(line!).not.toContain(SECRET.slice(0, 6));
    expect(line!).toStartWith(`vigil: [loud] ${"a".repeat(LEAD)}<redacted>…`);
    expect(line!).toEndWith(`(line of ${LEAD + SECRET.length + 2000} bytes cut)`);
  });
});
