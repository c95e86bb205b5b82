/**
 * The floor: a minimal byte relay between stdio and a child, with the same Bun primitives a proxy
 * uses (Bun.spawn detached, a stream reader per direction, FileSink write + flush per chunk) and no
 * parsing, framing or bookkeeping at all. Whatever it costs is the price of one extra process hop.
 *
 *   bun bench/wrap/relay.ts -- CMD [ARGS…]
 *
 * Client EOF closes the child's stdin; the relay ends when the child's stdout ends, exits with the
 * child's code, and never leaves the child's process group behind.
 *
 * RELAY_MODE (experiments that decompose the cost of a framing proxy; default `bytes`):
 *   bytes    copy each chunk as it arrives (the floor)
 *   lines    split into lines and relay whole lines only, the way vigil's relays do: a line that
 *            spans chunks is held and concatenated, and each line is one FileSink.write
 *            (store-and-forward + one write per line; still no parsing)
 *   batched  the same framing, but without the concatenation and with one write per contiguous run
 *            of complete lines (what a proxy could do in the common case)
 */

// Bun itself drops a "--" that directly follows the script; accept the command either way.
const rest = process.argv.slice(2);
const argv = rest[0] === "--" ? rest.slice(1) : rest;
if (argv.length === 0) {
  process.stderr.write("usage: bun bench/wrap/relay.ts -- CMD [ARGS…]\n");
  process.exit(2);
}
const mode = process.env.RELAY_MODE ?? "bytes";
if (mode !== "bytes" && mode !== "lines" && mode !== "batched") {
  process.stderr.write(`relay: unknown RELAY_MODE ${mode}\n`);
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

interface Sink {
  write(chunk: Uint8Array): unknown;
  flush(): unknown;
  end(): unknown;
}

/** Returns what to write for one chunk, as a list of byte ranges (`held` carries a partial line). */
type Framer = (chunk: Uint8Array) => Uint8Array[];

function lineFramer(batched: boolean): Framer {
  let held: Uint8Array[] = [];
  let heldLength = 0;
  return (chunk) => {
    const out: Uint8Array[] = [];
    let start = 0;
    let runStart = -1;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      if (heldLength > 0) {
        held.push(chunk.subarray(start, nl + 1));
        if (batched) out.push(...held);
        else out.push(Buffer.concat(held, heldLength + nl + 1 - start));
        held = [];
        heldLength = 0;
      } else if (batched) {
        if (runStart < 0) runStart = start;
      } else out.push(chunk.subarray(start, nl + 1));
      start = nl + 1;
    }
    if (batched && runStart >= 0) out.push(chunk.subarray(runStart, start));
    if (start < chunk.length) {
      held.push(chunk.subarray(start));
      heldLength += chunk.length - start;
    }
    return out;
  };
}

async function pump(source: ReadableStream<Uint8Array>, sink: Sink): Promise<void> {
  const reader = source.getReader();
  const frame: Framer | null = mode === "bytes" ? null : lineFramer(mode === "batched");
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (frame === null) sink.write(value);
      else {
        const pieces = frame(value);
        if (pieces.length === 0) continue;
        for (const piece of pieces) sink.write(piece);
      }
      await sink.flush();
    }
  } catch {
    // the other side went away; the child's stdout ending finishes the relay
  }
  try {
    await sink.end();
  } catch {
    // already closed
  }
}

const upstream = pump(Bun.stdin.stream(), child.stdin);
const downstream = pump(child.stdout as ReadableStream<Uint8Array>, Bun.stdout.writer());

await downstream;
const code = await Promise.race([child.exited, Bun.sleep(3000).then(() => null)]);
killGroup();
void upstream;
process.exit(code ?? 1);
