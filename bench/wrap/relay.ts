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
 *   decisions the least per-message work wrap.md §2 and §5 ask of a proxy with a decision log, done
 *            as cheaply as Bun allows — a lower bound on any implementation, ours included. Client →
 *            server: lines framed as in `lines`, each `JSON.parse`d (looser than §10's strict parse:
 *            no duplicate-key or UTF-8 check), and for a `tools/call` a CloudEvents decision record
 *            (`JSON.stringify`, the arguments' SHA-256 over `JSON.stringify`, not canonical JSON);
 *            the records of one read go out in one `writeSync` to RELAY_DECISION_LOG, and into a
 *            running SHA-256 of the written bytes, before anything of that read is forwarded.
 *            Server → client: the `batched` framing plus an `indexOf` for each line's `"id"` (what
 *            receipts need), over every piece of a line until found. No policy, no receipts, no
 *            chain, no cap, no validation.
 */

import { openSync, writeSync } from "node:fs";

// Bun itself drops a "--" that directly follows the script; accept the command either way.
const rest = process.argv.slice(2);
const argv = rest[0] === "--" ? rest.slice(1) : rest;
if (argv.length === 0) {
  process.stderr.write("usage: bun bench/wrap/relay.ts -- CMD [ARGS…]\n");
  process.exit(2);
}
const mode = process.env.RELAY_MODE ?? "bytes";
if (mode !== "bytes" && mode !== "lines" && mode !== "batched" && mode !== "decisions") {
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

/**
 * `decisions`, client → server: every line parsed; the read's decision records written (one
 * `writeSync`) before it is forwarded. The record is written out here rather than with
 * src/evidence's builders, so the floor carries none of vigil's own code.
 */
function decidingFramer(logPath: string): Framer {
  const lines = lineFramer(false);
  const fd = openSync(logPath, "wx", 0o600);
  const prefix = new Bun.CryptoHasher("sha256");
  let seq = 0;
  return (chunk) => {
    const out = lines(chunk);
    let records = "";
    for (const line of out) {
      const msg = JSON.parse(decoder.decode(line)) as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } };
      if (msg.method !== "tools/call") continue;
      const digest = new Bun.CryptoHasher("sha256").update(JSON.stringify(msg.params?.arguments ?? {})).digest("hex");
      const n = seq++;
      records += `${JSON.stringify({
        specversion: "1.0", type: "vigil.mcp.decision.v1", source: "vigil://bench/x", id: `evt_decision_s_${n}`, time: new Date().toISOString(),
        datacontenttype: "application/json", subject: msg.params?.name,
        data: { session_id: "s", seq: n, server_id: "bench", request_id: msg.id, tool: msg.params?.name, decision: "allow", reason_code: "P_ALLOW", reason: "allow-all", matched_rule: null, policy_digest: null, arguments_sha256: digest, dry_run: false },
      })}\n`;
    }
    if (records !== "") {
      const bytes = Buffer.from(records);
      if (writeSync(fd, bytes) !== bytes.length) throw new Error("short write to the decision log");
      prefix.update(bytes);
    }
    return out;
  };
}

/**
 * `decisions`, server → client: whole runs of lines; each line searched for `"id"` (not parsed),
 * across the pieces of a line that spans reads, since a server may put it last (after the result).
 */
function idLocatingFramer(): Framer {
  const lines = lineFramer(true);
  const ID = Buffer.from('"id"');
  let found = false;
  return (chunk) => {
    const out = lines(chunk);
    for (const piece of out) {
      const bytes = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength); // a view, not a copy
      for (let start = 0; ; ) {
        const nl = bytes.indexOf(0x0a, start);
        if (!found) {
          const at = bytes.indexOf(ID, start);
          found = at >= 0 && (nl < 0 || at < nl);
        }
        if (nl < 0) break;
        if (!found) located.missing++;
        found = false;
        start = nl + 1;
      }
    }
    return out;
  };
}
/** Server lines in which `decisions` found no `"id"`: said on exit, so a floor that skipped its search would show. */
const located = { missing: 0 };
const decoder = new TextDecoder();

function framerFor(direction: "up" | "down"): Framer | null {
  if (mode === "bytes") return null;
  if (mode !== "decisions") return lineFramer(mode === "batched");
  if (direction === "down") return idLocatingFramer();
  const log = process.env.RELAY_DECISION_LOG;
  if (log === undefined || log === "") {
    process.stderr.write("relay: RELAY_MODE=decisions needs RELAY_DECISION_LOG\n");
    process.exit(2);
  }
  return decidingFramer(log);
}

async function pump(source: ReadableStream<Uint8Array>, sink: Sink, frame: Framer | null): Promise<void> {
  const reader = source.getReader();
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

const upstream = pump(Bun.stdin.stream(), child.stdin, framerFor("up"));
const downstream = pump(child.stdout as ReadableStream<Uint8Array>, Bun.stdout.writer(), framerFor("down"));

await downstream;
const code = await Promise.race([child.exited, Bun.sleep(3000).then(() => null)]);
killGroup();
void upstream;
if (located.missing > 0) process.stderr.write(`relay: ${located.missing} server lines without an "id"\n`);
process.exit(code ?? 1);
