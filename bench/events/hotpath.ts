/**
 * Micro-benchmarks of MCP Events ingestion (issue 16: "events poll over HTTP into the pending
 * log"), in process, on warm code: each optimisation of a per-event or per-page step, its code
 * before against the code now, in the same process and run, on what bench/events/run.ts's fixture
 * sends (`ticket.updated` occurrences of ~190 bytes, eventIds `evt-N`, pages of 50, a dedup window
 * that is full — 1,024 ids — after the first 1,024 events).
 *
 *   bun bench/events/hotpath.ts [--iterations N]
 *
 * Cases (before → now):
 * - snapshot record copy: `copyRecord` (store/snapshot.ts), which the store runs twice per page
 *   (the dedup window handed over at the commit, then the moved cursor): a JSON round trip of the
 *   whole record and a valibot pass over each of its 1,024 ids, against one loop over the window
 *   and the schema for the small rest;
 * - the pending queue's private copy of an entry (store/events-store.ts tryAdd, once per event),
 *   after its add line is made: the line parsed back, against a plain-data copy (store/json-copy.ts)
 *   — the entries kept, as a stalled model's queue keeps them (CPU time: the parse's cost is mostly
 *   the collector's, with a growing heap);
 * - the snapshot's atomic write (shared/durable/atomic-file.ts, once per page): every step through
 *   fs/promises, against open/write/close in place and the fsyncs and the rename on the pool (CPU
 *   time, every thread);
 * - the pending log's append (store/log-file.ts, once per page): FileHandle write + datasync,
 *   against a pwrite in place and the fdatasync on the pool (CPU time);
 * - the dedup window (rules/dedup.ts, once per event), full: eviction by Array.shift against a ring.
 *
 * Then, informational (one variant, the code now), the rest of the path of one page, to show where
 * a page's CPU goes: checkOccurrence × 50, the hub's accept × 50 (dedup, the pending queue's add,
 * the `mcp_event` frame into a real transcript), and a whole page through a real EventsHub and store
 * in a temp dir — accept × 50, commit (the log appended and fdatasync'd, the snapshot written), the
 * cursor persisted — in CPU µs per event (process.cpuUsage, so the fdatasync's wait is not counted).
 *
 * Each case runs its variants alternately in rounds (warm-up first) and prints the median µs per
 * operation; both variants' results are checked to be the same answer.
 */
import { constants, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { type FileHandle, open, rename } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as v from "valibot";
import { EventsHub } from "../../src/events/hub.ts";
import { type McpEventOccurrence, mcpEventFrame } from "../../src/events/frames.ts";
import type { EventsServices, EventsSession, EventsTuning } from "../../src/events/ports.ts";
import { checkOccurrence } from "../../src/events/rules/occurrence.ts";
import { DedupWindow } from "../../src/events/rules/dedup.ts";
import { EventsStore } from "../../src/events/store/events-store.ts";
import { NOT_PLAIN, plainJsonCopy } from "../../src/events/store/json-copy.ts";
import { asEntry, serializeAdd } from "../../src/events/store/pending-log.ts";
import { RecordSchema, SNAPSHOT_LIMITS, type SubscriptionRecord, copyRecord } from "../../src/events/store/snapshot.ts";
import type { HostedSubscription } from "../../src/events/subscription/host.ts";
import type { EventOccurrence, PendingEntry, SubscriptionSpec } from "../../src/events/types.ts";
import { Transcript } from "../../src/serve/state/transcript.ts";
import { writeFileAtomic } from "../../src/shared/durable/atomic-file.ts";
import { LogFile } from "../../src/events/store/log-file.ts";
import { ROUNDS, alternate, iterations, timeIt } from "../ab.ts";
import { fmt, median, table } from "../report.ts";

const PAGE = 50;

// ---- what the fixture sends ---------------------------------------------------------------

let seq = 0;
function occurrence(): Record<string, unknown> {
  seq++;
  return {
    eventId: `evt-${seq}`,
    name: "ticket.updated",
    timestamp: new Date().toISOString(),
    data: { ticket_id: `T-${seq}`, summary: `ticket ${seq} updated` },
    cursor: String(seq),
  };
}

const SPEC: SubscriptionSpec = { server: "tickets", name: "ticket.updated", arguments: {}, delivery: "poll", action: "follow_up" };

function fullWindowRecord(): SubscriptionRecord {
  const w = new DedupWindow();
  for (let i = 0; i < SNAPSHOT_LIMITS.recent + 100; i++) w.add(`evt-${i}`);
  return { cursor: "5000", recent: w.toArray() };
}

// ---- before: the code as it was ------------------------------------------------------------

/** rules/dedup.ts DedupWindow before issue 16: a full window evicts with Array.shift (1,024 slots moved per event). */
class DedupWindowBefore {
  private readonly order: string[] = [];
  private readonly ids = new Set<string>();
  constructor(private readonly capacity = 1024) {}
  has(id: string): boolean {
    return this.ids.has(id);
  }
  add(id: string): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.order.push(id);
    while (this.order.length > this.capacity) this.ids.delete(this.order.shift()!);
  }
  toArray(): string[] {
    return [...this.order];
  }
}

/** store/snapshot.ts copyRecord before issue 16: the whole record through a JSON round trip and the schema. */
function copyRecordBefore(record: SubscriptionRecord): SubscriptionRecord {
  const copy = JSON.parse(JSON.stringify({ ...record, recent: record.recent.slice(-SNAPSHOT_LIMITS.recent) }));
  const r = v.safeParse(RecordSchema, copy);
  if (!r.success) throw new Error("subscription record cannot be stored");
  return r.output as SubscriptionRecord;
}

/** shared/durable/atomic-file.ts writeFileAtomic before issue 16: every step through fs/promises (eight thread-pool trips). */
async function writeFileAtomicBefore(path: string, text: string): Promise<void> {
  const data = Buffer.from(text);
  const tmp = `${path}.tmp-${++tmpCounter}`;
  const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  let off = 0;
  while (off < data.length) off += (await handle.write(data, off, data.length - off)).bytesWritten;
  await handle.sync();
  await handle.close();
  await rename(tmp, path);
  const d = await open(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  await d.sync();
  await d.close();
}
let tmpCounter = 0;

/** store/log-file.ts LogFile.append before issue 16: FileHandle.write, then FileHandle.datasync. */
async function logAppendBefore(handle: FileHandle, at: number, text: string): Promise<number> {
  const buf = Buffer.from(text);
  let off = 0;
  while (off < buf.length) off += (await handle.write(buf, off, buf.length - off, at + off)).bytesWritten;
  await handle.datasync();
  return at + buf.length;
}

/** A queue entry as the hub's take() makes it (pendingOf), with the next seq. */
function draftOf(): PendingEntry {
  const event = JSON.parse(JSON.stringify(occurrence())) as EventOccurrence; // as the wire gives it
  return { seq, action: "follow_up", server: SPEC.server, name: SPEC.name, arguments: SPEC.arguments, event };
}

/** Entries as the hub hands them to the store, and their add lines (made before the copy, in both variants). */
const POOL = (() => {
  const drafts = Array.from({ length: 20_000 }, draftOf);
  return { drafts, lines: drafts.map(serializeAdd) };
})();
let draftAt = 0;
/** The next entry of the pool; the two variants of one check see the same one. */
const nextDraft = () => (draftAt = (draftAt + 1) % POOL.drafts.length);

/** The entries kept, as the pending queue keeps them (a model stalled), up to a bound. */
let kept: unknown[] = [];
function keep<T>(x: T): T {
  if (kept.length >= 20_000) kept = [];
  kept.push(x);
  return x;
}

// ---- cases ---------------------------------------------------------------------------------

interface Case {
  name: string;
  variants: [string, () => unknown][];
  same?: (x: unknown) => string;
  /** Calls per round as a share of --iterations (default 1). */
  share?: number;
  /** Timed by CPU time rather than the wall clock (steps that wait for the disk). */
  cpu?: boolean;
  /** Called before each variant's checked call (so that both take the same input). */
  reset?: () => void;
}

async function runCases(n: number, cases: Case[]): Promise<string[][]> {
  const rows: string[][] = [];
  for (const c of cases) {
    if (c.same !== undefined) {
      const answers = c.variants.map(([, f]) => (c.reset?.(), c.same!(f())));
      if (answers.some((a) => a !== answers[0])) throw new Error(`${c.name}: the variants disagree`);
    }
    const calls = Math.max(10, Math.round(n * (c.share ?? 1)));
    const times = await alternate(c.variants.map(([, f]) => f), { calls, warmup: Math.max(10, calls >> 2), time: (m, f) => timeIt(m, f, c.cpu) });
    const base = times[0]!;
    c.variants.forEach(([label], i) => {
      const t = times[i]!;
      rows.push([i === 0 ? c.name : "", label, `${fmt(t, t < 100 ? 2 : 0)}${c.cpu ? " (CPU)" : ""}`, i === 0 ? "" : `${fmt((t / base) * 100)} %`]);
    });
  }
  return rows;
}

// ---- a real hub over a real store and transcript ---------------------------------------------

const TUNING: EventsTuning = {
  pollFloorMs: 1, coalesceMs: 0, streamIdleMs: 60_000, maxPending: 10_000_000, maxPendingBytes: 1 << 30, healthyMs: 60_000,
  refusedRetryMs: 60_000, retryCapMs: 60_000, runtimeTtlMs: 3_600_000, streamBuffer: 256, longPollMs: 0,
  modelBackoffCapMs: 60_000, webhookTtlMs: 3_600_000, bodyTimeoutMs: 1000, ackTimeoutMs: 10_000, jwksTimeoutMs: 1000,
};

/** A session whose frames go to a real transcript (as serve's do), never running anything. */
function transcriptSession(t: Transcript): EventsSession {
  return {
    name: "bench",
    state: "running",
    closed: false,
    inject: () => ({ queued: "follow_up" }),
    onRunSettled: () => () => {},
    onReceived: () => () => {},
    emit: (frame) => t.appendFrame(frame as unknown as { type: string }).seq,
    subscribe: () => () => {},
    setEventsHandler: () => {},
  };
}

function hosted(): HostedSubscription {
  return {
    key: "tickets\u0000ticket.updated\u0000{}",
    spec: SPEC,
    origin: "configured",
    cursor: null,
    dedup: new DedupWindow(),
    delivered: 0,
    duplicates: 0,
    mode: "poll",
    up: true,
    markUp: () => {},
    stored: async () => {},
  };
}

async function openHub(dir: string): Promise<{ hub: EventsHub; transcript: Transcript }> {
  for (const sub of ["transcript", "events"]) mkdirSync(join(dir, sub));
  const transcript = await Transcript.open(join(dir, "transcript"));
  const services: EventsServices = {
    tuning: TUNING,
    webhook: { available: false, missing: ["--listen"] } as unknown as EventsServices["webhook"],
    wire: () => {
      throw new Error("no wire in the bench");
    },
    configured: () => [],
    eventServers: () => [],
  };
  const store = await EventsStore.open(join(dir, "events"), { maxPending: TUNING.maxPending, maxPendingBytes: TUNING.maxPendingBytes });
  const hub = await EventsHub.open(transcriptSession(transcript), join(dir, "events"), services, false, Date.now, store, (e) => {
    throw e;
  });
  return { hub, transcript };
}

/** CPU µs per event of `pages` pages through the hub as the poll loop takes them (accept × 50, commit, persist). */
async function pagesCpu(hub: EventsHub, sub: HostedSubscription, pages: number): Promise<number> {
  const batches = Array.from({ length: pages }, () => Array.from({ length: PAGE }, () => checkOccurrence(occurrence())));
  const c0 = process.cpuUsage();
  for (const page of batches) {
    for (const e of page) if (e.ok) hub.accept(sub, e.occurrence, "poll");
    await hub.commit();
    sub.cursor = String(seq);
    hub.persist(sub);
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / (pages * PAGE);
}

async function main(): Promise<void> {
  const n = iterations({ usage: "bun bench/events/hotpath.ts [--iterations N]", fallback: 2_000, min: 10, max: 1_000_000 });
  const record = fullWindowRecord();
  const io = mkdtempSync(join(tmpdir(), "vigil-events-hotpath-io-"));
  const snapText = `${JSON.stringify({ version: "vigil.mcp-events.v2", subscriptions: { k: record }, last_client_ms: null })}\n`;
  const pageText = Array.from({ length: PAGE }, () => `${JSON.stringify({ add: { seq, action: "follow_up", server: "tickets", name: "ticket.updated", arguments: {}, event: occurrence() } })}\n`).join("");
  const oldLog = await open(join(io, "old.log"), "w+");
  let oldAt = 0;
  const counters = { logAppends: 0, logSyncs: 0, snapshots: 0, compactions: 0, logBytes: 0 };
  const newLog = new LogFile(join(io, "new.log"), io, await open(join(io, "new.log"), "w+"), 0, counters, undefined);
  const oldWindow = new DedupWindowBefore();
  const newWindow = new DedupWindow();
  let dedupSeq = 0;
  for (let i = 0; i < 2048; i++) (oldWindow.add(`w${i}`), newWindow.add(`w${i}`));
  const cases: Case[] = [
    {
      name: "snapshot record copy (window of 1,024 ids), 2 per page",
      cpu: true,
      variants: [
        ["before: JSON round trip + schema", () => copyRecordBefore(record)],
        ["now: one loop over the window", () => copyRecord(record)],
      ],
      same: (x) => JSON.stringify(x),
    },
    {
      name: "dedup window, full (1,024 ids): has + add of a new id, per event",
      cpu: true,
      share: 50,
      variants: [
        ["before: Array.shift eviction", () => { const id = `d${++dedupSeq}`; if (!oldWindow.has(id)) oldWindow.add(id); return oldWindow; }],
        ["now: a ring", () => { const id = `d${++dedupSeq}`; if (!newWindow.has(id)) newWindow.add(id); return newWindow; }],
      ],
    },
    {
      name: "pending queue entry copy, after its add line is made (per event; kept, as the queue keeps it)",
      variants: [
        ["before: the add line parsed back", () => keep(asEntry((JSON.parse(POOL.lines[nextDraft()]!) as { add: unknown }).add))],
        ["now: a plain-data copy of the entry", () => {
          const c = plainJsonCopy(POOL.drafts[nextDraft()]);
          return keep(asEntry(c !== NOT_PLAIN ? c : null));
        }],
      ],
      same: (x) => JSON.stringify(x),
      reset: () => (draftAt = 0),
      share: 5,
      cpu: true,
    },
    {
      name: `snapshot written atomically (${fmt(snapText.length / 1024, 1)} KiB), 1 per page`,
      variants: [
        ["before: fs/promises, 8 thread-pool trips", () => writeFileAtomicBefore(join(io, "old.json"), snapText)],
        ["now: 2 fsyncs + the rename on the pool, the rest in place", () => writeFileAtomic(join(io, "new.json"), snapText)],
      ],
      share: 0.05,
      cpu: true,
    },
    {
      name: `pending log append + fdatasync (${fmt(pageText.length / 1024, 1)} KiB, a page), 1 per page`,
      variants: [
        ["before: FileHandle write + datasync", async () => (oldAt = await logAppendBefore(oldLog, oldAt, pageText))],
        ["now: pwrite in place + fdatasync on the pool", () => newLog.append(pageText)],
      ],
      share: 0.05,
      cpu: true,
    },
  ];
  const rows = await runCases(n, cases);
  await oldLog.close();
  await newLog.close();
  rmSync(io, { recursive: true, force: true });
  process.stdout.write(`\nevents ingestion hot path — µs per operation, median of ${ROUNDS} rounds (variants alternate)\n\n`);
  process.stdout.write(`${table(["step", "variant", "µs / op", "vs before"], rows, ["l", "l", "r", "r"]).join("\n")}\n`);

  const dir = mkdtempSync(join(tmpdir(), "vigil-events-hotpath-"));
  try {
    const { hub, transcript } = await openHub(dir);
    const sub = hosted();
    const page = Array.from({ length: PAGE }, () => occurrence());
    const info: string[][] = [];
    const checks: number[] = [];
    for (let r = 0; r < 3; r++) checks.push(await timeIt(n, () => page.map(checkOccurrence)));
    const check = median(checks);
    info.push(["checkOccurrence (rules/occurrence.ts), per event", fmt(check / PAGE, 2)]);
    const frame = () =>
      transcript.appendFrame(mcpEventFrame({ server: "tickets", name: "ticket.updated", arguments: {}, delivery: "poll", action: "follow_up", event: occurrence() as McpEventOccurrence }) as unknown as { type: string });
    info.push(["`mcp_event` frame into the transcript (appendFrame: JSON, one pwrite), per event", fmt(await timeIt(n * 5, frame), 2)]);
    const accept = async () => {
      for (let i = 0; i < PAGE; i++) hub.accept(sub, occurrence() as EventOccurrence, "poll");
      await hub.commit();
    };
    await pagesCpu(hub, sub, 40); // warm-up, and a full dedup window
    info.push(["hub.accept × 50 then one commit, wall µs per event (fdatasync wait included)", fmt((await timeIt(40, accept)) / PAGE, 1)]);
    const cpus: number[] = [];
    for (let r = 0; r < 3; r++) cpus.push(await pagesCpu(hub, sub, 40));
    const cpu = median(cpus);
    info.push(["a whole page through hub + store + transcript (accept × 50, commit, persist), CPU µs per event", fmt(cpu, 1)]);
    process.stdout.write(`\nthe rest of one page's path, the code now (informational)\n\n${table(["step", "µs"], info, ["l", "r"]).join("\n")}\n`);
    await hub.close();
    await transcript.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pushDir = mkdtempSync(join(tmpdir(), "vigil-events-hotpath-push-"));
  try {
    await pushSection(n, pushDir);
  } finally {
    rmSync(pushDir, { recursive: true, force: true });
  }
  await (await import("./hotpath-frames.ts")).framesSection(n);
}

// ---- push delivery (events-push): stdio framing, routing, a drained run -------------------------

/**
 * Push delivery, old against new in the same process:
 * - a pushed event's stdout line decoded (mcp/stdio-framing.ts): JSON.parse + the SDK's
 *   JSONRPCMessageSchema.safeParse (a zod union), against JSON.parse + the light events shape check;
 * - its routing decision: the SDK Client's own per-message classification (isJSONRPCResultResponse,
 *   …ErrorResponse, …Request, …Notification: four more safeParses, three failing) and a microtask
 *   to its notification handler, against the transport's claim (ObservedTransport.setClaimer);
 * - a drained run of 256 pushed events through a real EventsHub (accept, then commit): the worst
 *   event-loop block during it (a 1 ms timer's lateness, wall µs), the run handled in one
 *   synchronous loop (before) against handleRunInSlices (now).
 */
async function pushSection(n: number, dir: string): Promise<void> {
  const { JSONRPCMessageSchema, isJSONRPCErrorResponse, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResultResponse } = await import("@modelcontextprotocol/sdk/types.js");
  const { decodeServerFrame, OutstandingRequests } = await import("../../src/mcp/stdio-framing.ts");
  const { handleRunInSlices } = await import("../../src/events/subscription/push-loop.ts");
  const outstanding = new OutstandingRequests();
  const notification = (i: number) => ({
    jsonrpc: "2.0",
    method: "notifications/events/event",
    params: { ...occurrence(), cursor: String(i), _meta: { "io.modelcontextprotocol/subscriptionId": 3 } },
  });
  const lineBytes = new TextEncoder().encode(`${JSON.stringify(notification(1))}\n`);
  const frame = { kind: "line" as const, bytes: lineBytes.subarray(0, lineBytes.length - 1) };
  const decodeBefore = () => {
    const value = JSON.parse(Buffer.from(frame.bytes.buffer, frame.bytes.byteOffset, frame.bytes.byteLength).toString("utf8"));
    const parsed = JSONRPCMessageSchema.safeParse(value);
    return parsed.success ? parsed.data : null;
  };
  const decodeNow = () => {
    const d = decodeServerFrame(frame as never, 1 << 25, outstanding);
    return d.kind === "message" ? d.message : null;
  };
  const message = decodeNow() as Record<string, unknown> & { method: string };
  let routed = 0;
  const route = () => void routed++;
  const classifyBefore = () => {
    // As Protocol.connect's onmessage does, then _onnotification's Promise.resolve().then(handler).
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message) || isJSONRPCRequest(message)) return;
    if (isJSONRPCNotification(message)) return Promise.resolve().then(route);
  };
  const classifyNow = () => {
    if (!("id" in message) && message.method.startsWith("notifications/events/") && message.method !== "notifications/events/list_changed") route();
  };
  const rows = await runCases(n, [
    {
      name: `a pushed event's stdout line decoded (${fmt(lineBytes.length)} bytes)`,
      variants: [
        ["before: JSON.parse + JSONRPCMessageSchema.safeParse", decodeBefore],
        ["now: JSON.parse + events shape check", decodeNow],
      ],
      same: (x) => JSON.stringify(Object.entries((x as { params: Record<string, unknown> }).params).sort()),
      share: 5,
    },
    {
      name: "its routing decision (to the push stream)",
      variants: [
        ["before: SDK Client classification (4 safeParses) + microtask", classifyBefore],
        ["now: the transport's claim", classifyNow],
      ],
      share: 5,
    },
  ]);

  const { hub, transcript } = await openHub(dir);
  const sub = { ...hosted(), mode: "push" as const };
  const run = () => Array.from({ length: 256 }, (_, i) => {
    const m = notification(i);
    return { method: m.method, params: m.params as Record<string, unknown> };
  });
  const syncBefore = async (r: ReturnType<typeof run>) => {
    // The old handleRun: one synchronous loop over the run (strip _meta, check, accept).
    for (const { params } of r) {
      const { _meta: _ignored, ...o } = params;
      const check = checkOccurrence(o);
      if (check.ok) hub.accept(sub, check.occurrence, "push");
    }
  };
  const slicedNow = async (r: ReturnType<typeof run>) => void (await handleRunInSlices(hub, sub, r));
  /** Worst lateness (µs) of a 1 ms timer while `f` handles a run and the hub commits it. */
  const worstBlock = async (f: (r: ReturnType<typeof run>) => Promise<void>): Promise<number> => {
    const r = run();
    let worst = 0;
    let due = performance.now() + 1;
    let on = true;
    const tick = () => {
      const now = performance.now();
      worst = Math.max(worst, now - due);
      due = now + 1;
      if (on) setTimeout(tick, 1);
    };
    setTimeout(tick, 1);
    await Bun.sleep(3);
    await f(r);
    await hub.commit();
    await Bun.sleep(3);
    on = false;
    return worst * 1000;
  };
  const [b0, b1] = (await alternate([syncBefore, slicedNow], { calls: 1, warmup: 1, time: (_, f) => worstBlock(f) })) as [number, number];
  rows.push(["worst loop block while a drained run of 256 events is handled and committed (wall µs)", "before: one synchronous loop (handleRun)", fmt(b0), ""]);
  rows.push(["", "now: handleRunInSlices (≤ 64 events or 8 ms per slice)", fmt(b1), `${fmt((b1 / b0) * 100)} %`]);
  await hub.close();
  await transcript.close();
  process.stdout.write(`\npush delivery — µs per operation, median of ${ROUNDS} rounds (variants alternate)\n\n${table(["step", "variant", "µs / op", "vs before"], rows, ["l", "l", "r", "r"]).join("\n")}\n`);
}

await main();
// Delivery to the model (events → model), the helper's own section: bench/events/hotpath-model.ts.
await (await import("./hotpath-model.ts")).modelSection();
