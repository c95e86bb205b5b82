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
import { fmt, median, table } from "../report.ts";

const PAGE = 50;
const ROUNDS = 7;
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

/** CPU µs per event of `pages` pages handed to `f`. */
async function cpuPerEvent(pages: number, f: () => unknown): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < pages; i++) await f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / (pages * PAGE);
}

/** Alternating rounds of before/now: median CPU µs per event of each. */
async function alternate(pages: number, before: () => unknown, now: () => unknown): Promise<[number, number]> {
  await cpuPerEvent(Math.max(2, pages >> 2), before);
  await cpuPerEvent(Math.max(2, pages >> 2), now);
  const t: [number[], number[]] = [[], []];
  for (let r = 0; r < ROUNDS; r++) {
    t[0].push(await cpuPerEvent(pages, before));
    t[1].push(await cpuPerEvent(pages, now));
  }
  return [median(t[0]), median(t[1])];
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

async function hubOver(dir: string, many: boolean) {
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
  return { transcript, hub, onePage };
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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`\nframes of one poll page (events-frames) — CPU µs per event, median of ${ROUNDS} rounds (variants alternate)\n\n${table(["step", "variant", "CPU µs / event", "vs before"], rows, ["l", "l", "r", "r"]).join("\n")}\n`);
}

if (import.meta.main) await framesSection(2_000);
