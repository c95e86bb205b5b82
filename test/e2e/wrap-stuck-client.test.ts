/**
 * A client that never reads again (a hung agent) must not keep vigil alive after its server is
 * gone: every wait is bounded. The server answers a large call (which the client's full pipe never
 * takes) and exits with another call still pending; vigil owes that call an error, but it gives up
 * on a client that will not read it within a bound, says so, and ends.
 */
import { expect, test } from "bun:test";
import { closeSync, constants, existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { vigilEnv } from "../helpers/bin.ts";
import { fixtureArgv, tmpDir, waitUntil } from "../helpers/fixture.ts";
import { e2eSuite } from "../helpers/e2e.ts";
import { VIGIL_BIN } from "../helpers/wrap.ts";

const cleanups = e2eSuite();

test("a client that stops reading does not hold vigil after the server exited with a call pending", async () => {
  const tmp = tmpDir("vigil-e2e-stuck-client");
  cleanups.add(() => tmp.cleanup());
  const record = tmp.file("record.txt");
  // The client's end of vigil's stdout: a real pipe that is opened for reading and never read.
  const fifo = join(tmp.path, "client.fifo");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  cleanups.add(() => closeSync(readEnd));
  const writeEnd = openSync(fifo, constants.O_WRONLY);
  const proc = Bun.spawn([VIGIL_BIN, "wrap", "--allow-all", "--", ...fixtureArgv({ FIXTURE_RECORD: record, FIXTURE_EXIT_AFTER: 1 })], {
    stdin: "pipe",
    stdout: writeEnd,
    stderr: "pipe",
    env: vigilEnv(),
  });
  closeSync(writeEnd);
  cleanups.add(() => proc.kill("SIGKILL"));

  // `slow` is accepted and not answered; the 2 MB `big` result is answered (request 1), then the server exits.
  proc.stdin.write('{"jsonrpc":"2.0","id":"pending","method":"tools/call","params":{"name":"slow","arguments":{"ms":30000}}}\n');
  proc.stdin.flush();
  expect(await waitUntil(() => existsSync(record) && readFileSync(record, "utf8").includes('"id":"pending"'), 10_000)).toBe(true);
  proc.stdin.write('{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big","arguments":{"bytes":2000000}}}\n');
  proc.stdin.flush();

  // Bounded wait: the server's exit, the drain bound, then the bound on the pending call's error.
  const code = await Promise.race([proc.exited, Bun.sleep(20_000).then(() => "still running" as const)]);
  expect(code).not.toBe("still running");
  const stderr = await new Response(proc.stderr).text();
  expect(stderr).toContain("did not take the errors for 1 pending request");
}, 40_000);
