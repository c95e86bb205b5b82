/**
 * The floor: a minimal byte relay between stdio and a child, with the same Bun primitives a proxy
 * uses (Bun.spawn detached, a stream reader per direction, FileSink write + flush per chunk) and no
 * parsing, framing or bookkeeping at all. Whatever it costs is the price of one extra process hop.
 *
 *   bun bench/wrap/relay.ts -- CMD [ARGS…]
 *
 * Client EOF closes the child's stdin; the relay ends when the child's stdout ends, exits with the
 * child's code, and never leaves the child's process group behind.
 */

// Bun itself drops a "--" that directly follows the script; accept the command either way.
const rest = process.argv.slice(2);
const argv = rest[0] === "--" ? rest.slice(1) : rest;
if (argv.length === 0) {
  process.stderr.write("usage: bun bench/wrap/relay.ts -- CMD [ARGS…]\n");
  process.exit(2);
}

const child = Bun.spawn(argv, { detached: true, stdin: "pipe", stdout: "pipe", stderr: "inherit" });

function killGroup(): void {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is already gone
  }
}

for (const [name, signo] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]] as const) {
  process.on(name, () => {
    killGroup();
    process.exit(128 + signo);
  });
}

const upstream = (async () => {
  const reader = Bun.stdin.stream().getReader();
  const sink = child.stdin;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      sink.write(value);
      await sink.flush();
    }
  } catch {
    // the child went away; its stdout ending finishes the relay
  }
  try {
    await sink.end();
  } catch {
    // already closed
  }
})();

const downstream = (async () => {
  const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
  const sink = Bun.stdout.writer();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      sink.write(value);
      await sink.flush();
    }
  } catch {
    // the client went away
  }
  try {
    await sink.end();
  } catch {
    // already closed
  }
})();

await downstream;
const code = await Promise.race([child.exited, Bun.sleep(3000).then(() => null)]);
killGroup();
void upstream;
process.exit(code ?? 1);
