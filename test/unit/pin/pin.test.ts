import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { canonicalSha256 } from "../../../src/shared/digest.ts";
import { VigilError } from "../../../src/shared/errors.ts";
import { parsePolicy } from "../../../src/policy/load.ts";
import { pinServer, renderPinsYaml } from "../../../src/pin/pin.ts";
import { PIN_SERVER_TOOLS } from "../../fixtures/servers/pin-server.ts";

const SERVER = resolve(import.meta.dir, "../../fixtures/servers/pin-server.ts");
const dir = mkdtempSync(join(tmpdir(), "vigil-policy-pin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** argv running the fixture with env knobs (Bun.spawn via spawnGroup inherits process.env). */
function server(env: Record<string, string> = {}): string[] {
  return ["env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), process.execPath, SERVER];
}

// Computed independently of toolDefinitionDigest: sha256 over canonical JSON of the three fields.
const expected = new Map(
  PIN_SERVER_TOOLS.map((t) => {
    const { name, description, inputSchema } = t as { name: string; description?: string; inputSchema: unknown };
    const projected = description === undefined ? { name, inputSchema } : { name, description, inputSchema };
    return [name, `sha256:${canonicalSha256(projected)}`];
  }),
);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("pinServer", () => {
  test("follows nextCursor across pages and digests each tool", async () => {
    const pins = await pinServer(server(), { timeoutMs: 10_000, graceMs: 2000 });
    expect([...pins.entries()]).toEqual([...expected.entries()]);
  });

  test("skips non-JSON stdout lines and answers the server's ping", async () => {
    const pins = await pinServer(server({ GARBAGE_STDOUT: "1", SERVER_PING: "1" }), { timeoutMs: 10_000, graceMs: 2000 });
    expect(pins.size).toBe(2);
  });

  test("sweeps a server that ignores stdin EOF", async () => {
    const pidFile = join(dir, "pid");
    const pins = await pinServer(server({ IGNORE_STDIN_EOF: "1", PID_FILE: pidFile }), { timeoutMs: 10_000, graceMs: 100 });
    expect(pins.size).toBe(2);
    expect(isAlive(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("a server that never answers is server_unreachable, and is swept", async () => {
    const pidFile = join(dir, "pid-hang");
    const attempt = pinServer(server({ HANG_ON: "tools/list", PID_FILE: pidFile }), { timeoutMs: 300, graceMs: 100 });
    await expect(attempt).rejects.toMatchObject({
      code: "server_unreachable",
      message: "server did not answer tools/list within 300 ms",
    });
    expect(isAlive(Number(readFileSync(pidFile, "utf8")))).toBe(false);
  });

  test("a server that exits early is server_unreachable, with its stderr as a hint", async () => {
    const error = await pinServer(["sh", "-c", "read request; echo 'cannot open database' >&2; exit 3"], { timeoutMs: 5000, graceMs: 100 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(VigilError);
    expect((error as VigilError).message).toBe("server closed its stdout before answering initialize");
    expect((error as VigilError).hint).toContain("cannot open database");
  });

  test("a command that does not exist is spawn_failed", async () => {
    await expect(pinServer([join(dir, "no-such-server")], { timeoutMs: 1000, graceMs: 100 })).rejects.toMatchObject({
      code: "spawn_failed",
    });
  });
});

describe("renderPinsYaml", () => {
  test("renders a pins block that loads back into the same pins, quoting names when needed", () => {
    const pins = new Map([
      ["read_file", `sha256:${"a".repeat(64)}`],
      ["delete file", `sha256:${"b".repeat(64)}`],
      ["true", `sha256:${"c".repeat(64)}`],
      ["a: b # c", `sha256:${"d".repeat(64)}`],
      ["123", `sha256:${"e".repeat(64)}`],
    ]);
    const yaml = renderPinsYaml(pins);
    expect(yaml.startsWith("pins:\n")).toBe(true);
    expect(yaml).toContain(`  read_file: "sha256:${"a".repeat(64)}"\n`);
    expect(yaml).toContain(`  "delete file": "sha256:`);
    expect(yaml).toContain(`  "true": "sha256:`);
    const loaded = parsePolicy(`version: 1\ntools: {}\n${yaml}`, "yaml", "pins.yaml").policy;
    expect(new Map([...loaded.pins].sort())).toEqual(new Map([...pins].sort()));
  });

  test("an empty map renders an empty mapping", () => {
    expect(renderPinsYaml(new Map())).toBe("pins: {}\n");
  });
});
