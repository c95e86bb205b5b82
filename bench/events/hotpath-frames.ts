/**
 * events-frames' section of bench/events/hotpath.ts (issue 16): the `mcp_event` frames of one poll
 * page (50 events, the fixture's `ticket.updated` occurrences) stored in a real transcript, one by
 * one (before: `appendFrame` per event — a pwrite and a toISOString each) against together (now:
 * `appendFrames`, one pwrite of 50 lines and one time), old and new alternating in this process, in
 * CPU µs per event (process.cpuUsage). Three levels:
 * - the transcript alone (appendFrame × 50 against appendFrames);
 * - the session's frame log (FrameLog.emit × 50 against emitMany), with one subscriber that does
 *   what stdio mode's does per frame (the line encoded for stdout);
 * - a whole page through a real EventsHub, store and transcript as the poll loop takes it (accept
 *   × 50, commit, persist), with the page's frames sent as they come against held for the page
 *   (hub.holdFrames, events/frame-hold.ts).
 * - stdio mode's stdout writer (serve/stdio-mode.ts FrameWriter) taking a page's 50 lines: before,
 *   each line encoded on its own and the drain started at the first (so that one goes out alone,
 *   then the other 49), against the drain started once the page is queued and the lines encoded
 *   together (one write, one flush) — into /dev/null through the real LineWriter.
 * Each check first confirms that both variants write the same lines (the `time` aside).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventsHub } from "../../src/events/hub.ts";
import { type McpEventOccurrence, mcpEventFrame } from "../../src/events/frames.ts";
import type { EventsServices, EventsSession, EventsTuning } from "../../src/events/ports.ts";
import { DedupWindow } from "../../src/events/rules/dedup.ts";
import { checkOccurrence } from "../../src/events/rules/occurrence.ts";
import { EventsStore } from "../../src/events/store/events-store.ts";
import type { HostedSubscription } from "../../src/events/subscription/host.ts";
import type { FrameBody } from "../../src/serve/protocol/frames.ts";
import { FrameLog } from "../../src/serve/session/frame-log.ts";
import { Transcript } from "../../src/serve/state/transcript.ts";
import { FrameWriter } from "../../src/serve/stdio-mode.ts";
import { LineWriter } from "../../src/shared/ndjson/line-writer.ts";
import { ROUNDS, alternate as alternateRounds, timeIt } from "../ab.ts";
import { fmt, table } from "../report.ts";

const PAGE = 50;
const TUNING: EventsTuning = {
  pollFloorMs: 1, coalesceMs: 0, streamIdleMs: 60_000, maxPending: 10_000_000, maxPendingBytes: 1 << 30, healthyMs: 60_000,
  refusedRetryMs: 60_000, retryCapMs: 60_000, runtimeTtlMs: 3_600_000, streamBuffer: 256, longPollMs: 0,
  modelBackoffCapMs: 60_000, webhookTtlMs: 3_600_000, bodyTimeoutMs: 1000, ackTimeoutMs: 10_000, jwksTimeoutMs: 1000,
};

let n = 0;
const occurrence = () => {
  n++;
  return { eventId: `evt-${n}`, name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket_id: `T-${n}`, summary: `ticket ${n} updated` }, cursor: String(n) };
};
const frameOf = (event: Record<string, unknown>) =>
  mcpEventFrame({ server: "tickets", name: "ticket.updated", arguments: {}, delivery: "poll", action: "follow_up", event: event as McpEventOccurrence }) as unknown as FrameBody;
const page = () => Array.from({ length: PAGE }, () => frameOf(occurrence()));
const withoutTime = (path: string) => readFileSync(path, "utf8").replace(/"time":"[^"]*"/g, "");

/** Alternating rounds of before/now: median CPU µs per event of each (`pages` pages handed to each per round). */
async function alternate(pages: number, before: () => unknown, now: () => unknown): Promise<[number, number]> {
  const time = async (m: number, f: () => unknown) => (await timeIt(m, f, true)) / PAGE;
  return (await alternateRounds([before, now], { calls: pages, warmup: Math.max(2, pages >> 2), time })) as [number, number];
}

function rowsOf(name: string, [b, a]: [number, number]): string[][] {
  return [
    [name, "before: one by one (a write and a time per frame)", fmt(b, 2), ""],
    ["", "now: together (one write of 50 lines, one time)", fmt(a, 2), `${fmt((a / b) * 100)} %`],
  ];
}

/** A session port over a frame log (as serve's Session is), with or without emitMany. */
function sessionOver(log: FrameLog, many: boolean): EventsSession {
  return {
    name: "bench", state: "running", closed: false,
    inject: () => ({ queued: "follow_up" }), onRunSettled: () => () => {}, onReceived: () => () => {},
    emit: (frame) => log.emit(frame as unknown as FrameBody)?.seq ?? null,
    ...(many ? { emitMany: (frames: readonly unknown[]) => log.emitMany(frames as FrameBody[]).map((r) => r?.seq ?? null) } : {}),
    subscribe: () => () => {}, setEventsHandler: () => {},
  };
}

export async function hubOver(dir: string, many: boolean) {
  for (const sub of ["transcript", "events"]) mkdirSync(join(dir, sub), { recursive: true });
  const transcript = await Transcript.open(join(dir, "transcript"));
  const log = new FrameLog(transcript);
  const encoder = new TextEncoder();
  log.subscribe((_r, json) => void encoder.encode(`${json}\n`)); // stdio mode's subscriber
  const services = { tuning: TUNING, webhook: { available: false, missing: ["--listen"] }, wire: () => { throw new Error("no wire"); }, configured: () => [], eventServers: () => [] } as unknown as EventsServices;
  const store = await EventsStore.open(join(dir, "events"), { maxPending: TUNING.maxPending, maxPendingBytes: TUNING.maxPendingBytes });
  const hub = await EventsHub.open(sessionOver(log, many), join(dir, "events"), services, false, Date.now, store, (e) => { throw e; });
  const sub: HostedSubscription = {
    key: "tickets\u0000ticket.updated\u0000{}", spec: { server: "tickets", name: "ticket.updated", arguments: {}, delivery: "poll", action: "follow_up" },
    origin: "configured", cursor: null, dedup: new DedupWindow(), delivered: 0, duplicates: 0, mode: "poll", up: true, markUp: () => {}, stored: async () => {},
  };
  /** One poll page as runPoll takes it: accepted (frames held for the page when `many`), committed, the cursor persisted. */
  const onePage = async () => {
    const entries = Array.from({ length: PAGE }, () => checkOccurrence(occurrence()));
    const release = many ? hub.holdFrames() : () => {};
    try {
      for (const e of entries) if (e.ok) hub.accept(sub, e.occurrence, "poll");
    } finally {
      release();
    }
    await hub.commit();
    sub.cursor = String(n);
    hub.persist(sub);
  };
  return { transcript, hub, sub, onePage };
}

/** stdio-mode.ts's FrameWriter before events-frames (its back-pressure waiters left out: never reached here). */
class FrameWriterBefore {
  private queue: Uint8Array[] = [];
  private pendingBytes = 0;
  draining: Promise<void> | null = null;
  private readonly encoder = new TextEncoder();
  constructor(private readonly writer: LineWriter) {}
  push(line: string): void {
    if (this.writer.broken !== null) return;
    const bytes = this.encoder.encode(line);
    this.queue.push(bytes);
    this.pendingBytes += bytes.byteLength;
    this.draining ??= this.drain();
  }
  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      await this.writer.write(batch);
      for (const b of batch) this.pendingBytes -= b.byteLength;
    }
    this.draining = null;
  }
}

/** Drained: the writer's private drain promise, awaited until none is left. */
async function drained(w: object): Promise<void> {
  for (let d = (w as { draining: Promise<void> | null }).draining; d !== null; d = (w as { draining: Promise<void> | null }).draining) await d;
}

async function stdoutRows(pages: number): Promise<string[][]> {
  const lines = page().map((f, i) => `{"seq":${i + 1},"time":"2030-01-02T03:04:05.000Z",${JSON.stringify(f).slice(1)}\n`);
  const before = new FrameWriterBefore(new LineWriter(Bun.file("/dev/null").writer()));
  const now = new FrameWriter(new LineWriter(Bun.file("/dev/null").writer()), () => {});
  const t = await alternate(pages,
    async () => { for (const l of lines) before.push(l); await drained(before); },
    async () => { for (const l of lines) now.push(l); await drained(now); });
  return [
    ["stdio mode: a page's 50 lines to stdout (FrameWriter), per event", "before: encoded one by one; the first written alone", fmt(t[0], 2), ""],
    ["", "now: encoded together once the page is queued; one write", fmt(t[1], 2), `${fmt((t[1] / t[0]) * 100)} %`],
  ];
}

export async function framesSection(iterations: number): Promise<void> {
  const pages = Math.max(10, Math.round(iterations / 20));
  const dir = mkdtempSync(join(tmpdir(), "vigil-events-hotpath-frames-"));
  const rows: string[][] = [];
  try {
    const open = (name: string) => (mkdirSync(join(dir, name)), Transcript.open(join(dir, name)));
    const [one, many] = [await open("one"), await open("many")];
    const check = page();
    for (const f of check) one.appendFrame(f as unknown as { type: string });
    many.appendFrames(check as unknown as { type: string }[]);
    if (withoutTime(one.path) !== withoutTime(many.path)) throw new Error("appendFrame and appendFrames wrote different lines");
    rows.push(...rowsOf("`mcp_event` frames of a page into the transcript, per event", await alternate(pages,
      () => { for (const f of page()) one.appendFrame(f as unknown as { type: string }); },
      () => many.appendFrames(page() as unknown as { type: string }[]))));
    await one.close();
    await many.close();

    const encoder = new TextEncoder();
    const logOf = async (name: string) => {
      const log = new FrameLog(await open(name));
      log.subscribe((_r, json) => void encoder.encode(`${json}\n`));
      return log;
    };
    const [logOne, logMany] = [await logOf("log-one"), await logOf("log-many")];
    rows.push(...rowsOf("the same through the session's frame log + a stdio subscriber, per event", await alternate(pages,
      () => { for (const f of page()) logOne.emit(f); },
      () => logMany.emitMany(page()))));
    await logOne.transcript.close();
    await logMany.transcript.close();

    const [hubOne, hubMany] = [await hubOver(join(dir, "hub-one"), false), await hubOver(join(dir, "hub-many"), true)];
    for (let i = 0; i < 25; i++) (await hubOne.onePage(), await hubMany.onePage()); // a full dedup window
    rows.push(...rowsOf("a whole page through hub + store + transcript (accept × 50, commit, persist), per event", await alternate(Math.max(5, pages >> 2), hubOne.onePage, hubMany.onePage)));
    for (const h of [hubOne, hubMany]) (await h.hub.close(), await h.transcript.close());
    rows.push(...(await stdoutRows(pages * 4)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`\nframes of one poll page (events-frames) — CPU µs per event, median of ${ROUNDS} rounds (variants alternate)\n\n${table(["step", "variant", "CPU µs / event", "vs before"], rows, ["l", "l", "r", "r"]).join("\n")}\n`);
}

if (import.meta.main) await framesSection(2_000);
