/**
 * The baseline client of bench/events/run.ts: a bare MCP client (the SDK's `Client` over
 * `StreamableHTTPClientTransport`, or `StdioClientTransport` starting the fixture itself) that reads
 * the events fixture the way `vigil serve` does, without a session, a store, a transcript or a model:
 *
 *   poll   `events/poll` with `maxEvents: 50`, the cursor of the previous page; `hasMore` with new
 *          events → poll again at once, otherwise wait `nextPollMs` (vigil's rule, floor 1 ms);
 *   push   one `events/stream`, counting `notifications/events/event` as they arrive.
 *
 * Variants (poll only): `--fsync FILE` appends each page's events to FILE as JSON lines and
 * fdatasyncs before the next poll (what durability alone costs, one sync per page); `--model URL`
 * sends each page to an OpenAI-compatible model as one chat completion (no history) and waits for
 * the answer before the next poll (the floor of "delivered to the model", 50 events per request),
 * and with `--history BYTES` also the earlier pages and answers, up to BYTES of their text (what a
 * session's bounded context sends again with each batch, without any of its bookkeeping);
 * `--floor DIR` does, per page, the least that serve.md §3 asks of any implementation (a poll
 * cursor advance waits for the page's events and the new cursor to be durable), as cheaply as Bun
 * allows — a lower bound, not a rival design:
 *   - dedup (the client's id set), and the last 1,024 ids kept as the snapshot's window;
 *   - one `add` line per new event (`JSON.stringify`) and one `position` line (the cursor and the
 *     page's ids: src/events/store/positions.ts) appended to DIR/mcp-events.log, and one
 *     `mcp_event` frame per event appended to DIR/transcript.jsonl and written to /dev/null (the
 *     stdout a client would read; the harness owns ours);
 *   - the log's `fdatasync` before the next poll; the snapshot (cursor and window as JSON) written
 *     atomically (temp, `fsync`, rename, the directory's `fsync`) as a checkpoint, at the first
 *     page and then at most once a second, like vigil's (before issue 16's fifth pass, vigil and this
 *     floor wrote the snapshot at every page).
 *   No validation, metrics, status frames, bounds or fault handling.
 *
 *   bun bench/events/baseline.ts --mode poll|push --events N (--url MCP_URL | --stdio FIXTURE CONTROL_FILE)
 *                                [--fsync FILE] [--model URL [--history BYTES]] [--floor DIR] [--warm W]
 *
 * Talks to its parent on stdout, one JSON line each: `{"ready":true,"control":URL|null,"pid":P}` once
 * the subscription is established (poll: the first, bootstrapping page; push: `active`), with
 * `--warm W` `{"warmed":true}` once W distinct events were taken (an untimed first burst), then
 * `{"done":true,"events":N,"pages":P,"requests":R}` once W + N distinct events were taken (and, with the
 * variants, synced or answered). Exits on stdin EOF, so it never outlives the harness.
 */
import { closeSync, fdatasyncSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const { values: a } = parseArgs({
  options: {
    mode: { type: "string" },
    events: { type: "string" },
    url: { type: "string" },
    stdio: { type: "string", multiple: true },
    fsync: { type: "string" },
    model: { type: "string" },
    floor: { type: "string" },
    history: { type: "string" },
    warm: { type: "string", default: "0" },
    name: { type: "string", default: "ticket.updated" },
  },
  allowPositionals: true,
});
const mode = a.mode;
const warm = Number(a.warm);
const target = Number(a.events) + warm;
if ((mode !== "poll" && mode !== "push") || !Number.isInteger(target) || target < 1 || !Number.isInteger(warm) || warm < 0) {
  process.stderr.write("usage: baseline.ts --mode poll|push --events N (--url URL | --stdio FIXTURE --stdio CONTROL_FILE) [--fsync FILE] [--model URL] [--floor DIR] [--warm W]\n");
  process.exit(2);
}
const MAX_EVENTS = 50;
const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);

// The harness closes our stdin when it is done with us (or dies).
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // discard
  }
  process.exit(0);
})();

const client = new Client({ name: "vigil-bench-baseline", version: "1.0.0" }, { capabilities: {} });
let controlUrl: string | null = null;
let fixturePid: number | null = null;
if (a.url !== undefined) {
  await client.connect(new StreamableHTTPClientTransport(new URL(a.url)));
} else if (a.stdio?.length === 2) {
  const [fixture, controlFile] = a.stdio as [string, string];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [fixture, "--stdio"],
    env: { ...(process.env as Record<string, string>), MCP_FIXTURE_CONTROL_FILE: controlFile },
    stderr: "ignore",
  });
  await client.connect(transport);
  fixturePid = transport.pid;
  const deadline = performance.now() + 10_000;
  while (controlUrl === null) {
    try {
      controlUrl = readFileSync(controlFile, "utf8").trim() || null;
    } catch {
      // not written yet
    }
    if (controlUrl === null) {
      if (performance.now() > deadline) throw new Error("the stdio fixture wrote no control file");
      await Bun.sleep(10);
    }
  }
} else {
  throw new Error("one of --url or --stdio FIXTURE --stdio CONTROL_FILE is required");
}

const seen = new Set<string>();
let pages = 0;
let requests = 0;

const syncFd = a.fsync !== undefined ? openSync(a.fsync, "a", 0o600) : null;

/** `--floor DIR`: the files a page's commit touches, and the state its snapshot carries. */
const floor =
  a.floor === undefined
    ? null
    : {
        dir: a.floor,
        log: openSync(join(a.floor, "mcp-events.log"), "a", 0o600),
        transcript: openSync(join(a.floor, "transcript.jsonl"), "a", 0o600),
        stdout: openSync("/dev/null", "w"),
        window: [] as string[],
        seq: 0,
        frameSeq: 0,
        position: 0,
        checkpointMs: Number.NEGATIVE_INFINITY,
      };

/**
 * `--floor`: a page's log lines, frames and position, durable before the cursor moves on. Every
 * step is a synchronous system call: the cheapest in CPU and, on one client alone, the fastest
 * (fs/promises, which a daemon needs so that one session's sync does not stall the others, measured
 * 53 % of the bare client + fdatasync and 54 µs of CPU per event against 68–71 % and 40–44 µs).
 */
function commitFloor(events: Record<string, unknown>[], cursor: string | null): void {
  const f = floor!;
  let lines = "";
  let frames = "";
  for (const event of events) {
    lines += `${JSON.stringify({ add: { seq: f.seq++, server: "fixture", name: a.name, arguments: {}, delivery: "poll", action: "follow_up", event } })}\n`;
    frames += `${JSON.stringify({ type: "mcp_event", seq: f.frameSeq++, server: "fixture", name: a.name, arguments: {}, delivery: "poll", action: "follow_up", event })}\n`;
    f.window.push(event.eventId as string);
  }
  if (f.window.length > 1024) f.window.splice(0, f.window.length - 1024);
  lines += `${JSON.stringify({ position: { n: ++f.position, key: `fixture\u0000${a.name}\u0000{}`, cursor, seen: events.map((e) => e.eventId) } })}\n`;
  writeSync(f.transcript, frames);
  writeSync(f.stdout, frames);
  writeSync(f.log, lines);
  fdatasyncSync(f.log);
  if (performance.now() - f.checkpointMs < 1000) return;
  f.checkpointMs = performance.now();
  // The checkpoint after the log (serve.md §3): temp, fsync, rename, fsync the directory.
  const snapshot = `${JSON.stringify({ version: 3, position: f.position, subscriptions: { [`fixture\u0000${a.name}\u0000{}`]: { cursor, recent: f.window } }, last_client_ms: null })}\n`;
  const temp = join(f.dir, `mcp-events.json.tmp-${f.seq}`);
  const t = openSync(temp, "wx", 0o600);
  writeSync(t, snapshot);
  fsyncSync(t);
  closeSync(t);
  renameSync(temp, join(f.dir, "mcp-events.json"));
  const d = openSync(f.dir, "r");
  fsyncSync(d);
  closeSync(d);
}

/** `--history BYTES`: the earlier pages and answers sent again with each page, oldest dropped first past BYTES of text. */
const historyBytes = a.history === undefined ? 0 : Number(a.history);
const history: { role: "user" | "assistant"; content: string }[] = [];
let historyHeld = 0;

async function toModel(events: Record<string, unknown>[]): Promise<void> {
  const text = events
    .map((e) => `<mcp_event name="${String(e.name)}" event_id="${String(e.eventId)}">\n${JSON.stringify(e.data ?? null)}\n</mcp_event>`)
    .join("\n\n");
  const user = { role: "user" as const, content: text };
  const res = await fetch(`${a.model}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "mock-model", messages: [{ role: "system", content: "bench" }, ...history, user] }),
  });
  requests++;
  if (res.status !== 200) throw new Error(`model: HTTP ${res.status}`);
  const answer = (await res.json()) as { choices?: { message?: { content?: unknown } }[] };
  if (historyBytes > 0) {
    const reply = String(answer.choices?.[0]?.message?.content ?? "");
    history.push(user, { role: "assistant", content: reply });
    historyHeld += text.length + reply.length;
    while (historyHeld > historyBytes && history.length > 2) historyHeld -= history.shift()!.content.length + history.shift()!.content.length;
  }
}

/** Takes a page (or a run of pushed events): new ones only, stored or sent when asked to. */
async function take(events: Record<string, unknown>[], cursor: string | null = null): Promise<number> {
  const fresh = events.filter((e) => typeof e.eventId === "string" && !seen.has(e.eventId));
  for (const e of fresh) seen.add(e.eventId as string);
  if (fresh.length > 0 && floor !== null) commitFloor(fresh, cursor);
  if (fresh.length > 0 && syncFd !== null) {
    writeSync(syncFd, fresh.map((e) => `${JSON.stringify({ add: e })}\n`).join(""));
    fdatasyncSync(syncFd);
  }
  if (fresh.length > 0 && a.model !== undefined) await toModel(fresh);
  return fresh.length;
}

let reported = false;
let warmed = warm === 0;
function maybeDone(): void {
  if (!warmed && seen.size >= warm) {
    warmed = true;
    say({ warmed: true });
  }
  if (reported || seen.size < target) return;
  reported = true;
  say({ done: true, events: seen.size, pages, requests });
}

if (mode === "poll") {
  let cursor: string | null = null;
  const poll = async () => {
    const r = (await client.request(
      { method: "events/poll", params: { name: a.name, arguments: {}, cursor, maxEvents: MAX_EVENTS } },
      ResultSchema,
      { timeout: 30_000 },
    )) as { events?: Record<string, unknown>[]; cursor?: string; hasMore?: boolean; nextPollMs?: number };
    pages++;
    return r;
  };
  // The bootstrap page (null cursor) positions us at the end of the log, like vigil's first poll.
  const first = await poll();
  cursor = typeof first.cursor === "string" ? first.cursor : null;
  say({ ready: true, control: controlUrl, pid: fixturePid });
  for (;;) {
    const page = await poll();
    const fresh = await take(page.events ?? [], typeof page.cursor === "string" ? page.cursor : cursor);
    if (typeof page.cursor === "string") cursor = page.cursor;
    maybeDone();
    if (!(page.hasMore === true && fresh > 0)) await Bun.sleep(Math.max(1, Number(page.nextPollMs) || 1000));
  }
} else {
  let active = false;
  let run: Record<string, unknown>[] = [];
  let flushing = false;
  const flush = async () => {
    if (flushing) return;
    flushing = true;
    while (run.length > 0) {
      const batch = run;
      run = [];
      pages++;
      await take(batch);
      maybeDone();
    }
    flushing = false;
  };
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === "notifications/events/active") active = true;
    else if (n.method === "notifications/events/event") {
      run.push(n.params as Record<string, unknown>);
      void flush();
    }
  };
  void client
    .request({ method: "events/stream", params: { name: a.name, arguments: {}, cursor: null } }, ResultSchema, { timeout: 2_147_483_647 })
    .catch((e: unknown) => {
      process.stderr.write(`baseline: events/stream ended: ${String(e)}\n`);
      process.exit(1);
    });
  const deadline = performance.now() + 10_000;
  while (!active) {
    if (performance.now() > deadline) throw new Error("the stream did not become active");
    await Bun.sleep(2);
  }
  say({ ready: true, control: controlUrl, pid: fixturePid });
}

process.on("exit", () => {
  if (syncFd !== null) closeSync(syncFd);
});
