// Temp files that a kill -9 left behind mid-write are removed when the session's events state opens
// (issue 11 item 11; serve.md §3: snapshot and log rewrites go through a temp file and a rename).
// Only our exact naming for those two files, and only when the writer is gone: a live writer's temp
// file and every other name stay. Against the compiled binary and the HTTP events fixture.
import { expect, test } from "bun:test";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { StdioServe, eventsEnvironment, httpServer, isStatus } from "../helpers/events-serve.ts";

const cleanups = e2eSuite();

/** A pid that certainly belonged to a process that has exited (and been reaped). */
function deadPid(): number {
  const done = Bun.spawnSync(["true"]);
  return done.pid;
}

test("stale temp files of the snapshot and the log are removed on open; live writers' and other files stay", async () => {
  const env = await eventsEnvironment(cleanups, { servers: (fx) => [httpServer(fx!, "tickets", [{ name: "build.finished" }])] });
  const dir = join(env.stateDir, "sessions", "s");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const dead = deadPid();
  const stale = [`.mcp-events.json.tmp-${dead}-1-k3x9az`, `.mcp-events.log.tmp-${dead}-4-0f`];
  const kept = [
    `.mcp-events.json.tmp-${process.pid}-1-live01`, // this test runner is alive: maybe mid-write
    `.mcp-events.json.tmp-${dead}-1-k3x9az.bak`,
    `mcp-events.json.tmp-${dead}-1-k3x9az`,
    `.mcp-events.json.tmp-other`,
    `.transcript.jsonl.tmp-${dead}-1-k3x9az`,
    "notes.txt",
  ];
  for (const name of [...stale, ...kept]) writeFileSync(join(dir, name), "left behind", { mode: 0o600 });

  const serve = StdioServe.start(cleanups, env);
  await serve.until(isStatus("subscribed"));
  const listing = readdirSync(dir);
  for (const name of stale) expect(listing).not.toContain(name);
  for (const name of kept) expect(listing).toContain(name);
  expect(serve.client.stderrText()).toContain("removed 2 temporary file(s) an interrupted write left behind");
  serve.client.closeStdin();
  expect((await serve.client.exited(15_000)).code).toBe(0);
});
