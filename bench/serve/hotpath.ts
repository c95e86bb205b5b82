/**
 * Micro-benchmarks of `vigil serve`'s command → frame → SSE path (issue 16): each optimisation made
 * to a per-command or per-frame step, its code before against the code now, in the same process
 * and run, on what bench/serve/run.ts sends (a `get_state` command, its ~260-byte response frame).
 *
 *   bun bench/serve/hotpath.ts [--iterations N] [--path-only]
 *
 * - transcript record: appendFrame's record text and object before (the frame copied without
 *   seq/time/type by a rest spread, serialized, then copied again into the record) against now
 *   (state/record-json.ts: a builder-shaped frame serialized as it is, one copy for the record);
 * - command parse: the schema step of parseCommand before (the `CommandSchema` variant, which runs
 *   the `type` literal of every option before the matching one and builds an issue, with a
 *   formatted message, for each miss) against now (the one schema of the command's `type`,
 *   `COMMAND_SCHEMAS`), and the whole parseCommand (strict JSON + schema) now;
 * - SSE encoding of one live frame for 1 and 50 clients: before, each client built the event text
 *   and encoded it (`TextEncoder` per client per frame); now the frame's bytes are encoded once and
 *   shared (daemon/sse.ts `frameBytes`);
 * - SSE stream, one live frame to 1 and to 50 clients over loopback HTTP, process CPU per delivered
 *   frame (server and clients; each frame is emitted, then awaited at every client): before, each
 *   pull parked a promise that the next push resolved (a wake-up hop per frame per client); now a
 *   pull that finds nothing marks the stream as wanting, and the next push hands its bytes over at
 *   once (daemon/sse.ts). Both share the frame's bytes, so this row is the pull change alone;
 * - command body read over HTTP: a loopback Bun.serve whose handler only reads the body and
 *   answers, 8 requests in flight from this process, process CPU per request (server + client; the
 *   client's share is the same for both): before, `req.body` through a stream reader (a body stream,
 *   a reader and a promise per chunk, then a copy); now `req.bytes()` when Content-Length framing
 *   bounds the body (daemon/http.ts readBounded);
 * - the whole path now, in process: createDaemonHandler on a loopback Bun.serve, one real session
 *   (transcript in a temp dir), one SSE client attached, `get_state` commands 8 in flight: process
 *   CPU per command (driver + client + daemon in one process; `--path-only` runs only this, for
 *   `bun --cpu-prof-md bench/serve/hotpath.ts --path-only`), next to the same driver and client
 *   against baseline-sse.ts's broadcaster (its code, in process): the difference is vigil's.
 *
 * Each case runs its two variants alternately in rounds (warm-up first) and prints the median
 * µs per operation; both variants' results are checked to be the same answer.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { COMMAND_SCHEMAS, CommandSchema, type CommandName } from "../../src/serve/protocol/commands.ts";
import { parseCommand } from "../../src/serve/protocol/parse-command.ts";
import { SseStream, frameBytes } from "../../src/serve/daemon/sse.ts";
import { createDaemonHandler } from "../../src/serve/daemon/http.ts";
import { SessionRegistry } from "../../src/serve/daemon/registry.ts";
import { Session } from "../../src/serve/session/session.ts";
import type { ServeApp } from "../../src/serve/types.ts";
import { recordJson } from "../../src/serve/state/record-json.ts";
import type { Frame, TranscriptRecord } from "../../src/serve/state/transcript-types.ts";
import { fmt, median } from "../report.ts";
import { type Case, type LoopbackPosts, ROUNDS, alternate, beforeNowRow, beforeNowRows, iterations, loopbackReadCpu } from "../ab.ts";
import { baselineServer } from "./baseline-sse.ts";

// ---- what run.ts sends ---------------------------------------------------------------------------

const commandBody = new TextEncoder().encode(JSON.stringify({ type: "get_state", id: "g3-1234" }));
const commandValue = JSON.parse(new TextDecoder().decode(commandBody)) as { type: CommandName };
const frameJson = JSON.stringify({
  seq: 1234, time: new Date().toISOString(), type: "response", id: "g3-1234", command: "get_state", success: true,
  data: { protocol_version: 1, name: "fan-r1-k1", state: "idle", queued: { follow_up: 0, steer: 0 }, pending_injections: 0, last_seq: 1233 },
});

// ---- daemon/sse.ts before: the event text built and encoded by every client --------------------

const encoder = new TextEncoder();
const eventText = (seq: number, json: string) => `event: frame\nid: ${seq}\ndata: ${json}\n\n`;
let frameSeq = 0;
function encodeBefore(clients: number): number {
  const seq = ++frameSeq;
  let n = 0;
  for (let c = 0; c < clients; c++) n += encoder.encode(eventText(seq, frameJson)).byteLength;
  return n;
}
function encodeNow(clients: number): number {
  const seq = ++frameSeq;
  let n = 0;
  for (let c = 0; c < clients; c++) n += frameBytes(seq, frameJson).byteLength;
  return n;
}

// ---- state/transcript.ts appendFrame before: the record's text and object through two rest copies ----

const responseFrame = { type: "response", id: "g3-1234", command: "get_state", success: true, data: JSON.parse(frameJson).data };
const benchTime = new Date().toISOString();
function recordBefore(seq: number, time: string, frame: Frame): { json: string; record: TranscriptRecord } {
  const { seq: _seq, time: _time, type, ...rest } = frame;
  const body = JSON.stringify(rest);
  const json = `{"seq":${seq},"time":${JSON.stringify(time)},"type":${JSON.stringify(type)}${body === "{}" ? "}" : `,${body.slice(1)}`}`;
  return { json, record: { type, ...rest, seq, time } as TranscriptRecord };
}
const sameRecord = (x: unknown) => {
  const r = x as { json: string; record: TranscriptRecord };
  return `${r.json} ${JSON.stringify(r.record)}`;
};

const cases: Case[] = [
  {
    name: "transcript record text + object (response frame)",
    before: () => recordBefore(1234, benchTime, responseFrame),
    after: () => recordJson(1234, benchTime, responseFrame),
    same: sameRecord,
  },
  {
    name: "command schema (get_state): CommandSchema variant → COMMAND_SCHEMAS[type]",
    before: () => v.safeParse(CommandSchema, commandValue).success,
    after: () => v.safeParse(COMMAND_SCHEMAS[commandValue.type], commandValue).success,
    same: (x) => String(x),
  },
  {
    name: "parseCommand (get_state, strict JSON + schema), before → now",
    before: () => {
      const r = parseCommand(commandBody);
      return r.ok && v.safeParse(CommandSchema, r.command).success;
    },
    after: () => parseCommand(commandBody).ok,
    same: (x) => String(x),
  },
  {
    name: "SSE encoding of one frame, 1 client",
    before: () => encodeBefore(1) > 0,
    after: () => encodeNow(1) > 0,
    same: (x) => String(x),
  },
  {
    name: "SSE encoding of one frame, 50 clients",
    before: () => encodeBefore(50) > 0,
    after: () => encodeNow(50) > 0,
    same: (x) => String(x),
  },
];

// ---- the command body read over HTTP ---------------------------------------------------------------

async function readBefore(req: Request): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const reader = req.body!.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const posts: LoopbackPosts = {
  body: commandBody,
  headers: { "content-type": "application/json" },
  inFlight: 8,
  check: (x) => {
    if ((x as Uint8Array).byteLength !== commandBody.byteLength) throw new Error("short body");
  },
};

async function served(n: number): Promise<string> {
  const after = (req: Request) => req.bytes();
  const [mb, ma] = await alternate([readBefore, after], { calls: n, warmup: Math.min(n, 2000), time: (m, read) => loopbackReadCpu(m, read, posts) });
  return beforeNowRow("command body read over HTTP (process CPU per request, server + client)", mb!, ma!);
}

// ---- daemon/sse.ts before: each pull parked a promise that the next push resolved --------------------

/** SseStream's live path before (no replay, no limit: the bench's clients keep up), with today's shared bytes. */
class SseBefore {
  readonly stream: ReadableStream<Uint8Array>;
  private queue: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  constructor(session: FakeSession) {
    session.subscribe((record, json) => this.pushBytes(frameBytes(record.seq, json)));
    this.pushBytes(encoder.encode(": attached\n\n"));
    this.stream = new ReadableStream<Uint8Array>({ pull: (c) => this.pull(c), cancel: () => this.close() }, { highWaterMark: 0 });
  }
  close(): void {
    this.closed = true;
    this.wake?.();
  }
  private pushBytes(bytes: Uint8Array): void {
    if (this.closed) return;
    this.queue.push(bytes);
    this.wake?.();
  }
  private async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.closed && this.queue.length === 0) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
    if (this.closed) return controller.close();
    const chunks = this.queue;
    this.queue = [];
    controller.enqueue(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  }
}

type Listener = (record: TranscriptRecord, json: string) => void;
/** A session's frame stream and nothing else: one frame per emit, to every SSE stream attached. */
class FakeSession {
  readonly name = "s1";
  lastSeq = 0;
  private readonly listeners = new Set<Listener>();
  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  emit(): void {
    const seq = ++this.lastSeq;
    for (const l of this.listeners) l({ type: "response", seq, time: benchTime }, frameJson);
  }
}

/** Process CPU µs per delivered frame: one frame emitted, then awaited at each of `k` SSE clients over loopback HTTP. */
async function sseServedCpu(frames: number, k: number, make: (s: FakeSession) => { stream: ReadableStream<Uint8Array>; close(): void }): Promise<number> {
  const session = new FakeSession();
  const streams: { close(): void }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch() {
      const sse = make(session);
      streams.push(sse);
      return new Response(sse.stream, { headers: { "content-type": "text/event-stream" } });
    },
  });
  try {
    const readers = await Promise.all(Array.from({ length: k }, async () => (await fetch(`http://127.0.0.1:${server.port}/`)).body!.getReader()));
    await Promise.all(readers.map((r) => r.read())); // the attach comments
    const c0 = process.cpuUsage();
    for (let i = 0; i < frames; i++) {
      session.emit();
      for (const r of await Promise.all(readers.map((x) => x.read()))) if (r.done) throw new Error("an SSE stream ended");
    }
    const c = process.cpuUsage(c0);
    for (const s of streams) s.close();
    await Promise.all(readers.map((r) => r.cancel().catch(() => {})));
    return (c.user + c.system) / (frames * k);
  } finally {
    server.stop(true);
  }
}

async function sseServed(n: number, k: number): Promise<string> {
  const before = (s: FakeSession) => new SseBefore(s);
  const after = (s: FakeSession) => new SseStream(s as unknown as Session, { since: null, onClose: () => {} });
  const frames = Math.max(100, Math.floor(n / k));
  const [mb, ma] = await alternate([before, after], { calls: frames, warmup: Math.min(frames, 500), time: (m, make) => sseServedCpu(m, k, make) });
  return beforeNowRow(`SSE stream, one frame to ${k} client${k === 1 ? "" : "s"} over HTTP (process CPU per delivered frame, server + clients)`, mb!, ma!);
}

// ---- the whole path, now ------------------------------------------------------------------------------

/** Process CPU µs per command: POST get_state (8 in flight) → stored frame → one SSE client. */
async function wholePath(commands: number, baseline = false): Promise<number> {
  if (baseline) {
    const b = baselineServer();
    try {
      return await drive(`http://127.0.0.1:${b.server.port}/v1/sessions/s1`, commands, () => b.close());
    } finally {
      b.server.stop(true);
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "vigil-bench-serve-hotpath-"));
  const open = new Map<string, Promise<Session>>();
  const runner = async () => ({ status: "ok" as const, appended: [], steersSeen: 0 });
  const app = {
    version: "bench",
    sessionNames: () => [...open.keys()],
    openSession: (name: string) => {
      let s = open.get(name);
      if (s === undefined) {
        mkdirSync(join(dir, name), { mode: 0o700 });
        open.set(name, (s = Session.open({ name, dir: join(dir, name), runner })));
      }
      return s;
    },
    keepsAlive: () => false,
  } as unknown as ServeApp;
  const registry = new SessionRegistry(app, 0);
  const handler = createDaemonHandler(app, registry, () => ({ ok: true, reasons: [] }) as never);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: handler.fetch });
  try {
    return await drive(`http://127.0.0.1:${server.port}/v1/sessions/s1`, commands, () => handler.closeStreams());
  } finally {
    server.stop(true);
    for (const s of open.values()) await (await s).close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function drive(base: string, commands: number, closeStreams: () => void): Promise<number> {
  const post = async (id: string) => {
    const res = await fetch(`${base}/commands`, { method: "POST", body: JSON.stringify({ type: "get_state", id }), headers: { "content-type": "application/json" } });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    await res.arrayBuffer();
  };
  await post("open");
  const sse = await fetch(`${base}/frames`);
  const reader = sse.body!.getReader();
  let bytes = 0;
  const reading = (async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      bytes += r.value.byteLength;
    }
  })();
  const run = async (n: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      while (next++ < n) await post(`g${w}-${next}`);
    }));
  };
  await run(Math.min(commands, 2000));
  const c0 = process.cpuUsage();
  await run(commands);
  const c = process.cpuUsage(c0);
  closeStreams();
  await reading.catch(() => {});
  if (bytes < commands * 200) throw new Error(`the SSE client got ${bytes} bytes for ${commands} frames`);
  return (c.user + c.system) / commands;
}

async function main(): Promise<void> {
  const n = iterations({ usage: "bun bench/serve/hotpath.ts [--iterations N] [--path-only]", fallback: 20_000, min: 100, max: 10_000_000 });
  const pathOnly = process.argv.includes("--path-only");
  const rows: string[] = [];
  if (!pathOnly) {
    rows.push(...(await beforeNowRows(n, cases)));
    rows.push(await served(Math.max(500, Math.floor(n / 4))));
    for (const k of [1, 50]) rows.push(await sseServed(Math.max(500, Math.floor(n / 4)), k));
  }
  const path: number[] = [];
  const floor: number[] = [];
  for (let r = 0; r < (pathOnly ? 3 : ROUNDS); r++) {
    path.push(await wholePath(Math.max(500, Math.floor(n / 4))));
    if (!pathOnly) floor.push(await wholePath(Math.max(500, Math.floor(n / 4)), true));
  }
  process.stdout.write(
    [
      `serve hot path, Bun ${Bun.version}, ${n} calls × ${ROUNDS} rounds per variant (median µs/call)`,
      "",
      ...(pathOnly ? [] : ["| step | before µs | now µs | saved µs | speed-up |", "| --- | ---: | ---: | ---: | ---: |", ...rows, ""]),
      `Whole path now (POST get_state → stored frame → 1 SSE client, 8 in flight, all in this process): ${fmt(median(path), 1)} µs process CPU per command (rounds ${path.map((x) => fmt(x, 1)).join(", ")})`,
      ...(pathOnly ? [] : [`The same driver and client against the minimal broadcaster (baseline-sse.ts's code, in process): ${fmt(median(floor), 1)} µs (rounds ${floor.map((x) => fmt(x, 1)).join(", ")})`]),
      "",
    ].join("\n"),
  );
}

await main();
