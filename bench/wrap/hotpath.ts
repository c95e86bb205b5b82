/**
 * In-process cost of `vigil wrap`'s per-message hot path, step by step (no pipes, no child
 * processes, no event-loop wake-ups): what each piece of src/wrap costs per `tools/call` round
 * trip, to compare with the end-to-end figures of bench/wrap/run.ts. The relays run against fake
 * sinks (writes and flushes are free), so the difference between these sums and the added
 * latency measured end to end is I/O and scheduling.
 *
 *   bun bench/wrap/hotpath.ts [--markdown]      (--markdown: also print the tables as Markdown)
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { FileSink } from "bun";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { decisionEvent } from "../../src/evidence/records.ts";
import { canonicalSha256, sha256Hex } from "../../src/shared/digest.ts";
import { decodeUtf8Strict, validateStrictJson } from "../../src/shared/strict-json.ts";
import { classifyClientLine } from "../../src/wrap/client-frames.ts";
import { relayClientFrames } from "../../src/wrap/client-relay.ts";
import { LineWriter } from "../../src/shared/ndjson/line-writer.ts";
import { type Frame, LineSplitter } from "../../src/shared/ndjson/line-splitter.ts";
import type { WrapOptions } from "../../src/wrap/options.ts";
import type { OutputPlan } from "../../src/wrap/output-plan.ts";
import { openPolicyGate } from "../../src/wrap/policy-gate.ts";
import { ProxyState } from "../../src/wrap/proxy-state.ts";
import { relayServerFrames } from "../../src/wrap/server-relay.ts";
import { scanServerFrame } from "../../src/wrap/server-frames.ts";
import { SessionEvidence } from "../../src/wrap/session-evidence.ts";

const ROOT = resolve(import.meta.dir, "../..");
const MiB = 1024 * 1024;
const enc = new TextEncoder();

const fakeSink = { write: (b: Uint8Array | string) => b.length, flush: () => 0, end: () => 0 } as unknown as FileSink;

/** Median over `batches` of the mean µs per iteration of `fn` (after a warm-up batch). */
async function time(iterations: number, fn: (i: number) => unknown, batches = 5): Promise<number> {
  const means: number[] = [];
  for (let b = 0; b <= batches; b++) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) {
      const r = fn(i);
      if (r instanceof Promise) await r;
    }
    if (b > 0) means.push(((performance.now() - t0) * 1000) / iterations);
  }
  means.sort((a, b) => a - b);
  return means[means.length >> 1]!;
}

const echoRequest = (id: number, text: string) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"text":${JSON.stringify(text)}}}}\n`;
const echoResponse = (id: number, text: string) =>
  `{"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}]},"jsonrpc":"2.0","id":${id}}\n`;

function oneFrame(bytes: Uint8Array): Frame {
  const frames = new LineSplitter(32 * MiB).push(bytes);
  if (frames.length !== 1) throw new Error("expected one frame");
  return frames[0]!;
}

interface Harness {
  state: ProxyState;
  close(): void;
}

let harnesses = 0;
async function harness(dir: string, kind: "allow-all+log" | "allow-all" | "policy+log" | "policy+capture"): Promise<Harness> {
  dir = join(dir, String(harnesses++));
  mkdirSync(dir);
  const policy = kind.startsWith("policy");
  const log = kind !== "allow-all";
  const capture = kind === "policy+capture";
  const plan: OutputPlan = {
    captureDir: null,
    decisionLog: log ? { path: join(dir, `${kind}.ndjson`), mode: "new" } : null,
    receipts: capture ? join(dir, `${kind}.receipts.ndjson`) : null,
    context: null,
    stop: null,
    serverStderr: null,
    manifest: null,
  };
  const gate = await openPolicyGate({ policyPath: policy ? join(ROOT, "bench/wrap/policy.yaml") : null, dryRun: false } as WrapOptions);
  const evidence = new SessionEvidence(plan, {
    eventSource: "vigil://bench/x",
    serverId: "bench",
    serverPid: 1,
    commandSha256: "0".repeat(64),
    policyDigest: gate.digest,
    dryRun: false,
    decisionLogFsync: false,
    decisionLogFaultBytes: undefined,
  });
  evidence.openLogs();
  const state = new ProxyState(evidence, gate, new LineWriter(fakeSink), fakeSink, 32 * MiB, "deny");
  return {
    state,
    close: () => evidence.finish("client_closed", { status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null }, kill_requested: false }, state.counts, false),
  };
}

type Row = [string, string, string];

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "vigil-hotpath-"));
  const rows: Row[] = [];
  const add = (step: string, small: number | null, kib: number | null) =>
    rows.push([step, small === null ? "—" : small.toFixed(2), kib === null ? "—" : kib.toFixed(2)]);
  try {
    const texts = { small: "hello, bench", kib: "a".repeat(1024 - echoRequest(100_000, "").length) };
    const N = 20_000;
    const each = async (fn: (line: Uint8Array, text: string) => (i: number) => unknown) => {
      const out: number[] = [];
      for (const text of [texts.small, texts.kib]) {
        const line = enc.encode(echoRequest(123_456, text));
        out.push(await time(N, fn(line, text)));
      }
      return out as [number, number];
    };

    add("request: LineSplitter.push (one line per chunk)", ...(await each((line) => {
      const s = new LineSplitter(32 * MiB);
      return () => s.push(line);
    })));
    add("request: decodeUtf8Strict", ...(await each((line) => () => decodeUtf8Strict(line.subarray(0, line.length - 1)))));
    add("request: validateStrictJson", ...(await each((line) => {
      const text = decodeUtf8Strict(line.subarray(0, line.length - 1))!;
      return () => validateStrictJson(text, { maxDepth: 64 });
    })));
    add("request: JSON.parse", ...(await each((line) => {
      const text = decodeUtf8Strict(line.subarray(0, line.length - 1))!;
      return () => JSON.parse(text);
    })));
    add("request: classifyClientLine (decode, strict parse, shape checks)", ...(await each((line) => () => classifyClientLine(line.subarray(0, line.length - 1)))));
    add("decision: canonicalSha256(arguments)", ...(await each((_, text) => () => canonicalSha256({ text }))));
    const data = (text: string) => ({
      session_id: "0123456789abcdef0123456789abcdef",
      seq: 1,
      server_id: "bench",
      request_id: 123_456,
      tool: "echo",
      decision: "allow" as const,
      reason_code: "no_policy",
      reason: "no policy: observe only (--allow-all)",
      matched_rule: null,
      policy_digest: null,
      arguments_sha256: canonicalSha256({ text }),
      dry_run: false,
    });
    add("decision: JSON.stringify(decisionEvent(…)) (incl. toISOString)", ...(await each((_, text) => {
      const d = data(text);
      return () => JSON.stringify(decisionEvent("vigil://bench/x", d));
    })));
    {
      let k = 0;
      add("decision: EvidenceLog.append (Buffer + writeSync + running SHA-256)", ...(await each((_, text) => {
        const log = EvidenceLog.createNew(join(dir, `append-${k++}.ndjson`));
        const line = JSON.stringify(decisionEvent("vigil://bench/x", data(text)));
        return () => log.append(line);
      })));
    }
    add("track: sha256Hex(request line) (receipt digest; skipped when no receipts are kept)", ...(await each((line) => () => sha256Hex(line.subarray(0, line.length - 1)))));
    add("track: new Date().toISOString()", ...(await each(() => () => new Date().toISOString())));

    const responses = [texts.small, texts.kib].map((t) => enc.encode(echoResponse(123_456, t)));
    add("response: scanServerFrame", await time(N, () => scanServerFrame(responses[0]!.subarray(0, responses[0]!.length - 1))), await time(N, () => scanServerFrame(responses[1]!.subarray(0, responses[1]!.length - 1))));
    add("receipt: sha256Hex(response) (computed even when no receipts are kept)", await time(N, () => sha256Hex(responses[0]!)), await time(N, () => sha256Hex(responses[1]!)));

    // Whole relays, one tools/call round trip (request frame in, response frame out), fake sinks.
    for (const kind of ["allow-all", "allow-all+log", "policy+log", "policy+capture"] as const) {
      const results: number[] = [];
      for (const text of [texts.small, texts.kib]) {
        const h = await harness(dir, kind);
        let id = 1;
        const us = await time(N / 4, async () => {
          const n = id++;
          await relayClientFrames(h.state, [oneFrame(enc.encode(echoRequest(n, text)))]);
          await relayServerFrames(h.state, [oneFrame(enc.encode(echoResponse(n, text)))]);
        });
        // The encoding and framing of the two lines is the harness's, not vigil's: subtract it.
        const overhead = await time(N / 4, () => {
          oneFrame(enc.encode(echoRequest(id, text)));
          oneFrame(enc.encode(echoResponse(id, text)));
        });
        if (h.state.pending.size !== 0) throw new Error(`${kind}: ${h.state.pending.size} requests left pending`);
        h.close();
        results.push(us - overhead);
      }
      add(`round trip: relayClientFrames + relayServerFrames (${kind})`, results[0]!, results[1]!);
    }

    // 8 MiB results.
    const big = new Uint8Array(8 * MiB + 100);
    const head = enc.encode('{"result":{"content":[{"type":"text","text":"');
    big.set(head);
    big.fill(0x78, head.length);
    const tail = enc.encode('"}]},"jsonrpc":"2.0","id":7}\n');
    const bigLength = 8 * MiB + head.length + tail.length;
    const bigLine = new Uint8Array(bigLength);
    bigLine.set(big.subarray(0, 8 * MiB + head.length));
    bigLine.set(tail, 8 * MiB + head.length);
    const chunks: Uint8Array[] = [];
    for (let p = 0; p < bigLength; p += 64 * 1024) chunks.push(bigLine.slice(p, Math.min(bigLength, p + 64 * 1024)));
    const bigRows: [string, number][] = [];
    bigRows.push(["LineSplitter.push × 129 chunks of 64 KiB (concatenates the line)", await time(20, () => {
      const s = new LineSplitter(32 * MiB);
      for (const c of chunks) s.push(c);
    })]);
    bigRows.push(["scanServerFrame", await time(20, () => scanServerFrame(bigLine.subarray(0, bigLength - 1)))]);
    bigRows.push(["sha256Hex of the response (computed even when no receipts are kept)", await time(20, () => sha256Hex(bigLine.subarray(0, bigLength - 1)))]);
    bigRows.push(["Buffer.concat of 129 chunks (reference: one 8 MiB copy)", await time(20, () => Buffer.concat(chunks, bigLength))]);
    {
      const h = await harness(dir, "allow-all+log");
      let id = 1;
      const rssBefore = process.memoryUsage().rss;
      const us = await time(10, async () => {
        const n = id++;
        await relayClientFrames(h.state, [oneFrame(enc.encode(`{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"blob","arguments":{"bytes":8388608}}}\n`))]);
        const s = new LineSplitter(32 * MiB);
        const idTail = enc.encode(`"}]},"jsonrpc":"2.0","id":${n}}\n`);
        const frames: Frame[] = [];
        for (let c = 0; c < chunks.length - 1; c++) frames.push(...s.push(chunks[c]!));
        const last = chunks[chunks.length - 1]!;
        const end = new Uint8Array(last.length - tail.length + idTail.length);
        end.set(last.subarray(0, last.length - tail.length));
        end.set(idTail, last.length - tail.length);
        frames.push(...s.push(end));
        await relayServerFrames(h.state, frames);
      }, 3);
      h.close();
      bigRows.push([`whole path: splitter + relayClientFrames + relayServerFrames (allow-all+log); RSS +${((process.memoryUsage().rss - rssBefore) / MiB).toFixed(0)} MiB over 40 calls`, us]);
    }

    const w0 = Math.max(...rows.map((r) => r[0].length));
    const lines = [
      `Hot path of vigil wrap, in process (µs per message; median of 5 batches) — Bun ${Bun.version}`,
      "",
      `${"step".padEnd(w0)}  ${"~110 B".padStart(8)}  ${"1 KiB".padStart(8)}`,
      ...rows.map((r) => `${r[0].padEnd(w0)}  ${r[1].padStart(8)}  ${r[2].padStart(8)}`),
      "",
      "8 MiB tools/call result (ms per message)",
      ...bigRows.map(([name, us]) => `  ${name.padEnd(w0)}  ${(us / 1000).toFixed(2).padStart(8)}`),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    if (process.argv.includes("--markdown")) {
      const md = [
        "",
        `**Hot path in process** (\`bun bench/wrap/hotpath.ts\`; µs per message, fake sinks, Bun ${Bun.version})`,
        "",
        "| step | ~110 B request | 1 KiB request |",
        "| --- | ---: | ---: |",
        ...rows.map((r) => `| ${r[0]} | ${r[1]} | ${r[2]} |`),
        "",
        "| 8 MiB result | ms |",
        "| --- | ---: |",
        ...bigRows.map(([name, us]) => `| ${name} | ${(us / 1000).toFixed(2)} |`),
        "",
      ].join("\n");
      process.stdout.write(md);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const deadline = setTimeout(() => {
  process.stderr.write("hotpath: did not finish within 120 s\n");
  process.exit(1);
}, 120_000);
await main();
clearTimeout(deadline);
