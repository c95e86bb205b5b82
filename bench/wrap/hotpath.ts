/**
 * In-process cost of `vigil wrap`'s per-message hot path, step by step (no pipes, no child
 * processes, no event-loop wake-ups): what each piece of src/wrap costs per `tools/call` round
 * trip, to compare with the end-to-end figures of bench/wrap/run.ts. The relays run against fake
 * sinks (writes and flushes are free), so the difference between these sums and the added
 * latency measured end to end is I/O and scheduling.
 *
 * A third table prices the hash chain and the signed checkpoints (issue 14) per record: the
 * decision recorder over a plain sink (the release before chains) against the same over a
 * ChainedLog, their parts, and a Checkpointer at the default cadence (every 1,000 records) with a
 * real Ed25519 key, amortized per record and per checkpoint, and whole round trips of a capture
 * session with and without the key, each timed alone (p50/p99/mean). These logs are real files in
 * the temp dir (so the checkpoints' fdatasyncs hit the disk that holds it).
 *
 *   bun bench/wrap/hotpath.ts [--markdown]      (--markdown: also print the tables as Markdown)
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { FileSink } from "bun";
import { chainAnchor, withChain } from "../../src/evidence/chain.ts";
import { ChainedLog } from "../../src/evidence/chained-log.ts";
import { CHECKPOINT_EVERY_DEFAULT, CHECKPOINT_SECONDS_DEFAULT, Checkpointer } from "../../src/evidence/checkpoints.ts";
import { type DecisionFields, DecisionRecorder, type RecordSink } from "../../src/evidence/decision-recorder.ts";
import { CHECKPOINT_PAYLOAD_TYPE, type Signer, pae, signEnvelope } from "../../src/evidence/dsse.ts";
import { EvidenceLog } from "../../src/evidence/evidence-log.ts";
import { generateKeyPair, loadSigningKey } from "../../src/evidence/keys.ts";
import { decisionEvent } from "../../src/evidence/records.ts";
import { realScheduler } from "../../src/shared/time.ts";
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
import { largeLineRows } from "./hotpath-large.ts";
import { clientAllocRows } from "./hotpath-alloc.ts";

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
type HarnessKind = "allow-all+log" | "allow-all" | "policy+log" | "policy+capture" | "allow-all+capture" | "allow-all+capture+signed";

async function harness(dir: string, kind: HarnessKind, signer: Signer | null = null): Promise<Harness> {
  dir = join(dir, String(harnesses++));
  mkdirSync(dir);
  const policy = kind.startsWith("policy");
  const log = kind !== "allow-all";
  const capture = kind.endsWith("capture") || kind.endsWith("+signed");
  const signed = kind.endsWith("+signed");
  if (signed && signer === null) throw new Error(`${kind} needs a signer`);
  const plan: OutputPlan = {
    // A capture dir only where the checkpoints file goes (the other outputs are named below).
    captureDir: signed ? dir : null,
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
    ...(signed ? { signing: { signer: signer!, every: CHECKPOINT_EVERY_DEFAULT, seconds: CHECKPOINT_SECONDS_DEFAULT } } : {}),
  });
  evidence.openLogs();
  const state = new ProxyState(evidence, gate, new LineWriter(fakeSink), fakeSink, 32 * MiB, "deny");
  return {
    state,
    close: () => evidence.finish("client_closed", { status: { termination: "exited", exit_code: 0, signal: null, core_dumped: null }, kill_requested: false }, state.counts, false),
  };
}

type Row = [string, string, string];

const SOURCE = "vigil://bench/x";
const SESSION = "0123456789abcdef0123456789abcdef";
const FIELDS: DecisionFields = {
  request_id: 123_456,
  tool: "echo",
  decision: "allow",
  reason_code: "no_policy",
  reason: "no policy: observe only (--allow-all)",
  matched_rule: null,
  arguments_sha256: "a".repeat(64),
};

/**
 * Round trips of the same capture session with and without a signing key, each timed alone, in
 * alternating blocks (so drift hits both): the p50 is the hot path's cost with the checkpoints out
 * of the way, the p99 and the mean show where they land (one per 1,000 records, i.e. per 500 round
 * trips: each writes a decision and a receipt).
 */
async function signedRoundTrips(dir: string, signer: Signer, text: string): Promise<[string, number, number, number][]> {
  const BLOCKS = 10;
  const PER_BLOCK = 5000;
  const kinds = ["allow-all+capture", "allow-all+capture+signed"] as const;
  const hs = await Promise.all(kinds.map((k) => harness(dir, k, signer)));
  const samples = kinds.map(() => [] as number[]);
  let id = 1;
  for (let b = 0; b <= BLOCKS; b++) {
    for (let k = 0; k < kinds.length; k++) {
      const h = hs[(k + b) % kinds.length]!;
      const out = samples[(k + b) % kinds.length]!;
      for (let i = 0; i < PER_BLOCK; i++) {
        const n = id++;
        const request = [oneFrame(enc.encode(echoRequest(n, text)))];
        const response = [oneFrame(enc.encode(echoResponse(n, text)))];
        const t0 = performance.now();
        await relayClientFrames(h.state, request);
        await relayServerFrames(h.state, response);
        // The first block of each warms the code and is not kept.
        if (b > 0) out.push((performance.now() - t0) * 1000);
      }
    }
  }
  for (const h of hs) h.close();
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { p50: s[s.length >> 1]!, p99: s[Math.floor(s.length * 0.99)]!, mean: xs.reduce((a, b) => a + b, 0) / xs.length };
  };
  const [u, sg] = samples.map(stats) as [ReturnType<typeof stats>, ReturnType<typeof stats>];
  return [
    ["allow-all+capture (chains, no key)", u.p50, u.p99, u.mean],
    ["allow-all+capture+signed (checkpoints every 1,000 records, Ed25519)", sg.p50, sg.p99, sg.mean],
    ["added by the key (signed − unsigned)", sg.p50 - u.p50, sg.p99 - u.p99, sg.mean - u.mean],
  ];
}

/**
 * What the hash chain and the signed checkpoints cost per decision record (issue 14), against the
 * recorder over a plain sink: what the release before chains did per record (JSON.stringify, then
 * EvidenceLog.append: one write(2) and the running prefix SHA-256).
 */
async function chainRows(dir: string, signer: Signer): Promise<{ perRecord: [string, number][]; perCheckpoint: [string, number][] }> {
  const N = 20_000;
  let k = 0;
  const file = (name: string) => EvidenceLog.createNew(join(dir, `chain-${k++}-${name}.ndjson`));
  const chained = (name: string, onWritten?: () => void) => new ChainedLog(file(name), name, { count: 0, head: chainAnchor(SOURCE, SESSION, name) }, onWritten);
  const record = (sink: RecordSink) => {
    const r = new DecisionRecorder(sink, SOURCE, null, false);
    return () => r.record(SESSION, "bench", FIELDS);
  };
  const checkpointer = (every: number) =>
    new Checkpointer({ file: file("checkpoints"), signer, eventSource: SOURCE, sessionId: SESSION, every, seconds: CHECKPOINT_SECONDS_DEFAULT, scheduler: realScheduler, onFailure: (m) => { throw new Error(m); } });

  const perRecord: [string, number][] = [];
  const plain = await time(N, (() => {
    const log = file("plain");
    return record({ append: (event) => log.append(JSON.stringify(event)) });
  })());
  perRecord.push(["DecisionRecorder → plain sink: JSON.stringify + EvidenceLog.append (the release before chains)", plain]);
  const chain = await time(N, record(chained("decisions.ndjson")));
  perRecord.push(["DecisionRecorder → ChainedLog, no key (every record since issue 14): + withChain + SHA-256 of the line", chain]);
  const event = decisionEvent(SOURCE, { session_id: SESSION, seq: 1, server_id: "bench", ...FIELDS, policy_digest: null, dry_run: false });
  const line = `${JSON.stringify(withChain(event, 1, "b".repeat(64)))}\n`;
  perRecord.push(["  of which withChain(event) (a copy with vigilseq/vigilprev before data)", await time(N, () => withChain(event, 1, "b".repeat(64)))]);
  perRecord.push(["  of which sha256Hex(line + newline) (Chain.advance)", await time(N, () => sha256Hex(line))]);
  // A checkpointer over two logs, as wrap's capture has (decisions and receipts), at the default cadence.
  const signedRun = (() => {
    const cp = checkpointer(CHECKPOINT_EVERY_DEFAULT);
    const noteWritten = () => cp.noteWritten();
    const decisions = chained("decisions.ndjson", noteWritten);
    const receipts = chained("receipts.ndjson", noteWritten);
    cp.add(decisions);
    cp.add(receipts);
    return { cp, write: record(decisions), receipts };
  })();
  const signed = await time(N, signedRun.write);
  signedRun.cp.close();
  perRecord.push([`DecisionRecorder → ChainedLog → Checkpointer every ${CHECKPOINT_EVERY_DEFAULT.toLocaleString("en")} records (Ed25519), amortized`, signed]);
  perRecord.push(["added by the chain (ChainedLog − plain sink)", chain - plain]);

  // One checkpoint, and its parts (µs): each after 500 records in each of two logs (1,000 across them).
  const perCheckpoint: [string, number][] = [];
  // The cadence never fires here: each sample calls checkpoint() itself, after the same 1,000 records.
  const cp = checkpointer(Number.MAX_SAFE_INTEGER);
  const logs = [chained("decisions.ndjson", () => cp.noteWritten()), chained("receipts.ndjson", () => cp.noteWritten())];
  for (const l of logs) cp.add(l);
  const writers = logs.map((l) => record(l));
  const fill = () => {
    for (let i = 0; i < 500; i++) for (const w of writers) w();
  };
  const sample = (fn: () => unknown, reps = 15): number => {
    const xs: number[] = [];
    for (let r = 0; r <= reps; r++) {
      fill();
      const t0 = performance.now();
      fn();
      if (r > 0) xs.push((performance.now() - t0) * 1000);
    }
    xs.sort((a, b) => a - b);
    return xs[xs.length >> 1]!;
  };
  perCheckpoint.push(["Checkpointer.checkpoint(): fdatasync both logs, payload, Ed25519, append + fdatasync the line", sample(() => cp.checkpoint())]);
  perCheckpoint.push(["  fdatasync of one log after 500 new records", sample(() => logs[0]!.sync())]);
  const payload = Buffer.from(JSON.stringify({ _type: "vigil.checkpoint.v1", event_source: SOURCE, session_id: SESSION, checkpoint: 1, time: new Date().toISOString(), logs: { a: logs[0]!.head(), b: logs[1]!.head() } }));
  perCheckpoint.push(["  Ed25519 signature of the PAE (node:crypto sign)", await time(2000, () => signer.sign(pae(CHECKPOINT_PAYLOAD_TYPE, payload)))]);
  perCheckpoint.push(["  signEnvelope + JSON.stringify of the envelope", await time(2000, () => JSON.stringify(signEnvelope(CHECKPOINT_PAYLOAD_TYPE, payload, signer)))]);
  cp.close();
  // The difference of two ~7 µs means is noisier than the checkpoint itself: derive it from the checkpoint too.
  perRecord.push([`added by signed checkpoints at every=${CHECKPOINT_EVERY_DEFAULT}: measured (amortized − ChainedLog)`, signed - chain]);
  perRecord.push([`added by signed checkpoints at every=${CHECKPOINT_EVERY_DEFAULT}: one checkpoint (below) ÷ ${CHECKPOINT_EVERY_DEFAULT.toLocaleString("en")}`, perCheckpoint[0]![1] / CHECKPOINT_EVERY_DEFAULT]);
  return { perRecord, perCheckpoint };
}

/**
 * Issue 16: the decision records of one client read, written one write(2) each (as the relay did
 * before: DecisionRecorder.record per tools/call) against one write for the read
 * (DecisionRecorder.recordBatch, what client-relay.ts settle() does now), over real chained log
 * files, at 1, 16 and 64 calls per read (a sequential client, and the pipelined reads of
 * run.ts's throughput phase). Alternating rounds, process CPU time (user + system: the write(2)
 * is kernel time) per record; median of the rounds.
 */
async function batchRows(dir: string): Promise<[string, number, number][]> {
  let k = 0;
  const recorder = () =>
    new DecisionRecorder(
      new ChainedLog(EvidenceLog.createNew(join(dir, `batch-${k++}.ndjson`)), "decisions.ndjson", { count: 0, head: chainAnchor(SOURCE, SESSION, "decisions.ndjson") }),
      SOURCE,
      null,
      false,
    );
  const rows: [string, number, number][] = [];
  for (const perRead of [1, 16, 64]) {
    const before = recorder();
    const now = recorder();
    const read = Array.from({ length: perRead }, () => FIELDS);
    const reads = Math.ceil(10_000 / perRead);
    const samples = { before: [] as number[], now: [] as number[] };
    for (let r = 0; r < 12; r++) {
      for (const which of r % 2 ? (["before", "now"] as const) : (["now", "before"] as const)) {
        const c0 = process.cpuUsage();
        if (which === "before") for (let i = 0; i < reads; i++) for (const f of read) before.record(SESSION, "bench", f);
        else for (let i = 0; i < reads; i++) now.recordBatch(SESSION, "bench", read);
        const c = process.cpuUsage(c0);
        // The first two rounds warm both up.
        if (r >= 2) samples[which].push((c.user + c.system) / (reads * perRead));
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    rows.push([`${perRead} tools/call per read`, med(samples.before), med(samples.now)]);
  }
  return rows;
}

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
    const signer = loadSigningKey(generateKeyPair(join(dir, "bench-signing")).keyPath);
    for (const kind of ["allow-all", "allow-all+log", "policy+log", "policy+capture", "allow-all+capture", "allow-all+capture+signed"] as const) {
      const results: number[] = [];
      for (const text of [texts.small, texts.kib]) {
        const h = await harness(dir, kind, signer);
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

    const chainCost = await chainRows(dir, signer);
    const batched = await batchRows(dir);
    const signedTrips = await signedRoundTrips(dir, signer, texts.small);

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

    const held = await largeLineRows();
    const alloc = await clientAllocRows(
      (["allow-all+log", "policy+log"] as const).map((kind) => ({ name: `relayClientFrames (${kind})`, makeState: () => harness(dir, kind) })),
      (n) => oneFrame(enc.encode(echoRequest(n, texts.small))),
    );
    const w0 = Math.max(...rows.map((r) => r[0].length));
    const allocLines = alloc.flatMap((r) => [
      `  ${r.name.padEnd(w0 - 2)}  ${r.usBefore.toFixed(2).padStart(8)}  ${r.usNow.toFixed(2).padStart(8)}  ${r.cellsBefore.toFixed(1).padStart(8)}  ${r.cellsNow.toFixed(1).padStart(8)}`,
      ...r.kinds.map(([kind, b, a]) => `      ${kind.padEnd(w0 - 6)}  ${"".padStart(8)}  ${"".padStart(8)}  ${b.toFixed(1).padStart(8)}  ${a.toFixed(1).padStart(8)}`),
    ]);
    const lines = [
      `Hot path of vigil wrap, in process (µs per message; median of 5 batches) — Bun ${Bun.version}`,
      "",
      `${"step".padEnd(w0)}  ${"~110 B".padStart(8)}  ${"1 KiB".padStart(8)}`,
      ...rows.map((r) => `${r[0].padEnd(w0)}  ${r[1].padStart(8)}  ${r[2].padStart(8)}`),
      "",
      "8 MiB tools/call result (ms per message)",
      ...bigRows.map(([name, us]) => `  ${name.padEnd(w0)}  ${(us / 1000).toFixed(2).padStart(8)}`),
      "8 MiB lines held across reads (hotpath-large.ts): ms CPU per message (all threads), RSS peak growth within 10 (MiB)",
      ...held.map(([name, ms, rss]) => `  ${name.padEnd(w0)}  ${ms.toFixed(2).padStart(8)}  ${`+${rss.toFixed(1)}`.padStart(8)}`),
      "",
      "Hash chain and signed checkpoints, per decision record (µs; log files in the temp dir)",
      ...chainCost.perRecord.map(([name, us]) => `  ${name.padEnd(w0)}  ${us.toFixed(2).padStart(8)}`),
      "One signed checkpoint (µs; median of 15, each after 1,000 new records across two logs)",
      ...chainCost.perCheckpoint.map(([name, us]) => `  ${name.padEnd(w0)}  ${us.toFixed(1).padStart(8)}`),
      "",
      "Round trips (~110 B) of a capture session with and without a key, each timed alone, 10 alternating blocks of 5,000 (µs): p50, p99, mean",
      ...signedTrips.map(([name, p50, p99, mean]) => `  ${name.padEnd(w0)}  ${p50.toFixed(2).padStart(8)}  ${p99.toFixed(2).padStart(8)}  ${mean.toFixed(2).padStart(8)}`),
      "",
      "Decision records of one client read (issue 16), chained log files, process CPU µs per record: one write(2) per record (before) / one per read (now)",
      ...batched.map(([name, before, now]) => `  ${name.padEnd(w0)}  ${before.toFixed(2).padStart(8)}  ${now.toFixed(2).padStart(8)}`),
      "",
      "Garbage per ~110 B tools/call request, client relay before / now (issue 16, p99 tail; hotpath-alloc.ts): CPU µs (median of 10 alternating blocks of 5,000), then JS heap cells allocated (by kind where they differ)",
      ...allocLines,
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
        "| 8 MiB line held across reads (hotpath-large.ts) | ms CPU per message | RSS peak growth within 10 (MiB) |",
        "| --- | ---: | ---: |",
        ...held.map(([name, ms, rss]) => `| ${name} | ${ms.toFixed(2)} | +${rss.toFixed(1)} |`),
        "",
        "| hash chain and signed checkpoints, per decision record (log files in the temp dir) | µs |",
        "| --- | ---: |",
        ...chainCost.perRecord.map(([name, us]) => `| ${name.replace(/^ +/, (m) => "&nbsp;".repeat(m.length * 2))} | ${us.toFixed(2)} |`),
        "",
        "| one signed checkpoint (median of 15, each after 1,000 new records across two logs) | µs |",
        "| --- | ---: |",
        ...chainCost.perCheckpoint.map(([name, us]) => `| ${name.replace(/^ +/, (m) => "&nbsp;".repeat(m.length * 2))} | ${us.toFixed(1)} |`),
        "",
        "| round trip (~110 B), each timed alone, 10 alternating blocks of 5,000 | p50 | p99 | mean |",
        "| --- | ---: | ---: | ---: |",
        ...signedTrips.map(([name, p50, p99, mean]) => `| ${name} | ${p50.toFixed(2)} | ${p99.toFixed(2)} | ${mean.toFixed(2)} |`),
        "",
        "| decision records of one client read (issue 16), process CPU µs per record | one write(2) per record (before) | one per read (now) |",
        "| --- | ---: | ---: |",
        ...batched.map(([name, before, now]) => `| ${name} | ${before.toFixed(2)} | ${now.toFixed(2)} |`),
        "",
        "| client relay per ~110 B tools/call (issue 16, p99 tail) | CPU µs before | now | JS cells before | now |",
        "| --- | ---: | ---: | ---: | ---: |",
        ...alloc.flatMap((r) => [
          `| ${r.name} | ${r.usBefore.toFixed(2)} | ${r.usNow.toFixed(2)} | ${r.cellsBefore.toFixed(1)} | ${r.cellsNow.toFixed(1)} |`,
          ...r.kinds.map(([kind, b, a]) => `| &nbsp;&nbsp;${kind} | | | ${b.toFixed(1)} | ${a.toFixed(1)} |`),
        ]),
        "",
      ].join("\n");
      process.stdout.write(md);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const deadline = setTimeout(() => {
  process.stderr.write("hotpath: did not finish within 180 s\n");
  process.exit(1);
}, 180_000);
await main();
clearTimeout(deadline);
