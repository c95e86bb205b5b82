/**
 * A client that stops reading for a while (wrap.md §2: one serialized writer, lines never
 * interleave; forwarding is byte-exact). While a large server result waits for the client's pipe
 * between slices, vigil's own reply to another client frame must come after that result, never in
 * the middle of it.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { vigilEnv } from "../helpers/bin.ts";
import { fixtureArgv, tmpDir, waitUntil } from "../helpers/fixture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

test("an own reply sent while a large result waits for a paused client comes after the result, not inside it", async () => {
  const tmp = tmpDir("vigil-e2e-slow-client");
  cleanups.add(() => tmp.cleanup());
  const record = tmp.file("record.txt");
  const out = tmp.file("client-out.ndjson");
  const wrap = [VIGIL_BIN, "wrap", "--allow-all", "--", ...fixtureArgv({ FIXTURE_RECORD: record, FIXTURE_ANSWER_MARKERS: true })].map(shellQuote).join(" ");
  // The client's end of vigil's stdout: nothing is read for two seconds, then everything.
  const proc = Bun.spawn(["sh", "-c", `${wrap} | { sleep 2; cat > ${shellQuote(out)}; }`], { stdin: "pipe", stdout: "ignore", stderr: "pipe", env: vigilEnv() });
  cleanups.add(() => proc.kill("SIGKILL"));
  let stderr = "";
  void (async () => {
    for await (const chunk of proc.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  const text = "x".repeat(2_000_000);
  proc.stdin.write(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}}}\n`);
  proc.stdin.flush();
  expect(await waitUntil(() => existsSync(record) && readFileSync(record, "utf8").includes('"id":"big"'), 10_000)).toBe(true);
  // The server's 2 MB answer is in its pipe: vigil has read all but the pipe's last 64 KiB of it, and
  // its slices to the paused client (whose pipe holds 64 KiB) wait there.
  expect(await waitUntil(() => stderr.includes('fixture-server answered "big"'), 10_000)).toBe(true);
  // Refused by vigil (jsonrpc is not "2.0"): answered by vigil itself, with its id.
  proc.stdin.write('{"jsonrpc":"1.0","id":"own","method":"ping"}\n');
  proc.stdin.flush();
  proc.stdin.end();
  expect(await proc.exited).toBe(0);
  const lines = readFileSync(out, "utf8").split("\n");
  expect(lines.pop()).toBe("");
  expect(lines.length).toBe(2);
  const big = lines.find((l) => l.endsWith('"id":"big"}'));
  expect(big).toBe(`{"result":${JSON.stringify({ content: [{ type: "text", text }] })},"jsonrpc":"2.0","id":"big"}`);
  const own = JSON.parse(lines.find((l) => l !== big)!);
  expect(own.id).toBe("own");
  expect(own.error.code).toBe(-32600);
}, 30_000);
