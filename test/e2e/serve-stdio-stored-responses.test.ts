// Every frame stdio mode writes is in the transcript (issue 11 items 2 and 8), against the compiled
// binary: a response too large to store is answered with a stored `response_too_large` (with its
// seq) — the path daemon mode takes — never written straight to stdout without a seq; the
// refusal of a line that is no command is stored the same way.
import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN, vigilEnv } from "../helpers/bin.ts";
import { LineClient, tmpDir } from "../helpers/fixture.ts";

const cleanups = e2eSuite();

/** The transcript's per-record cap (serve.md §3; state/transcript.ts). */
const RECORD_CAP = 8 * 1024 * 1024;

type Frame = Record<string, unknown> & { type: string; seq?: number };

describe("stdio mode stores every response it writes", () => {
  test("a get_transcript page too large to store is answered with a stored response_too_large", async () => {
    const tmp = tmpDir("vigil-stdio-stored");
    cleanups.add(() => tmp.cleanup());
    const configFile = tmp.file("vigil.json");
    writeFileSync(configFile, JSON.stringify({ model: { provider: "command", command: ["cat"], timeout_ms: 5000 } }));
    // One stored record just under the cap: the page that carries it (plus the response around it) is over.
    const stateDir = tmp.file("state");
    const sessionDir = join(stateDir, "sessions", "default");
    mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    const empty = JSON.stringify({ seq: 1, time: "2030-01-01T00:00:00.000Z", type: "message", role: "user", text: "" });
    const big = `${empty.slice(0, -2)}${"x".repeat(RECORD_CAP - 64 - empty.length)}"}\n`;
    writeFileSync(join(sessionDir, "transcript.jsonl"), big, { mode: 0o600 });

    const client = new LineClient([VIGIL_BIN, "serve", "--config", configFile, "--state-dir", stateDir], { env: vigilEnv() });
    cleanups.add(() => client.dispose());
    client.send({ type: "get_transcript", id: "t1", since: 0, limit: 1 });
    client.send("{not json\n");
    client.closeStdin();
    const frames: Frame[] = [];
    for (let line = await client.next(20_000); line !== null; line = await client.next(20_000)) frames.push(JSON.parse(line) as Frame);
    expect((await client.exited(20_000)).code).toBe(0);

    expect(frames.map((f) => ({ id: f.id, success: f.success, code: (f.error as { code?: string } | undefined)?.code, seq: f.seq }))).toEqual([
      { id: "t1", success: false, code: "response_too_large", seq: 2 },
      { id: null, success: false, code: "invalid_json", seq: 3 },
    ]);
    // What the client saw is what a restart finds.
    const stored = readFileSync(join(sessionDir, "transcript.jsonl"), "utf8").trimEnd().split("\n").slice(1).map((l) => JSON.parse(l) as Frame);
    expect(stored).toEqual(frames);
  });
});
