/**
 * Micro-benchmarks of the webhook receiver's hot path (issue 13 "Benchmarks"): each optimisation
 * made to a per-delivery step, its code before against the code now, in the same process and run,
 * on the delivery bench/webhook/run.ts sends (a ~130-byte `ticket.updated` occurrence, one secret).
 *
 *   bun bench/webhook/hotpath.ts [--iterations N]
 *
 * - body read: readWithin over `req.body` (a stream reader, one raced promise per chunk, then a
 *   copy) against readAnnounced (`req.bytes()` raced against the same single deadline), used when
 *   Content-Length framing already bounds the body (src/shared/read-within.ts). Once on an
 *   in-memory Request, and once as it matters: a real Bun.serve on loopback whose handler only
 *   reads the body and answers 200, 16 requests in flight from this process — process CPU per
 *   request (server and client; the client's share is the same for both variants, so the
 *   difference is the read's);
 * - signature: verifyDelivery as it was (the secret base64-decoded and checked on every delivery,
 *   `id.timestamp.` and the body concatenated into a new buffer, every `v1,` entry base64-decoded
 *   and re-encoded) against now (decoded keys cached per secret, the HMAC fed the prefix and the
 *   body in turn, entries compared as text with the MAC's canonical base64;
 *   src/events/webhook/signature.ts);
 * - ack deadline: one group commit acknowledging 14 deliveries (the acks per sync the bench counts
 *   for vigil) — each ack racing the commit against its own deadline timer (`within`, as
 *   hub-webhook.ts `durable()` was) against one deadline shared by the acks waiting on the same
 *   commit (as it is now);
 * - coalescer firing over a pending queue of 31,000 follow-ups (what a run of the bench leaves): the
 *   queue copied and filtered twice on every firing (coalescer.ts before) against `chooseBatch`,
 *   which walks only as far as the batch needs and looks for steer events only when there are
 *   some — with the session busy (what the bench's stalled model makes it: nothing is chosen) and
 *   idle (the first 50 are).
 *
 * Each case runs its two variants alternately in rounds (warm-up first) and prints the median
 * µs per operation; both variants' results are checked to be the same answer.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { readAnnounced, readWithin } from "../../src/shared/read-within.ts";
import { verifyDelivery } from "../../src/events/webhook/signature.ts";
import { newWebhookSecret, webhookKey } from "../../src/events/webhook/secret.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { within } from "../../src/shared/time.ts";
import { MAX_BATCH, chooseBatch } from "../../src/events/coalescer.ts";
import { EventsStore } from "../../src/events/store/events-store.ts";
import type { PendingEntry } from "../../src/events/types.ts";
import { type Case, ROUNDS, alternate, beforeNowRow, beforeNowRows, beforeNowTable, iterations, loopbackReadCpu } from "../ab.ts";
import { fmt } from "../report.ts";

// ---- the delivery ---------------------------------------------------------------------------

const secret = newWebhookSecret();
const body = new TextEncoder().encode(
  JSON.stringify({ eventId: "bench-1", name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket: 1, status: "open" }, cursor: "1" }),
);
const id = "bench-1";
const seconds = Math.floor(Date.now() / 1000);
const signature = new Webhook(secret).sign(id, new Date(seconds * 1000), Buffer.from(body).toString("utf8"));
const request = () => new Request("http://127.0.0.1/_vigil/mcp-events/x", { method: "POST", body, headers: { "content-length": String(body.length) } });

// ---- signature.ts before (dbdde29): the v1 path the bench's deliveries take (no v1a keys) ---------

const STRICT_BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
function decodeEntryBefore(entry: string): Buffer | null {
  if (!entry.startsWith("v1,")) return null;
  const text = entry.slice(3);
  if (!STRICT_BASE64.test(text)) return null;
  const raw = Buffer.from(text, "base64");
  return raw.length === 32 && raw.toString("base64") === text ? raw : null;
}
function verifyBefore(input: { id: string; timestamp: string; signature: string; body: Uint8Array; secrets: readonly string[] }): boolean {
  const entries = input.signature.split(" ").filter((e) => e !== "").slice(0, 8);
  const signed = Buffer.concat([Buffer.from(`${input.id}.${input.timestamp}.`, "utf8"), input.body]);
  const given = entries.map(decodeEntryBefore).filter((b): b is Buffer => b !== null);
  if (given.length === 0) return false;
  let matched = false;
  for (const s of input.secrets) {
    const key = webhookKey(s);
    if (key === null) continue;
    const expected = createHmac("sha256", key).update(signed).digest();
    for (const g of given) if (timingSafeEqual(g, expected)) matched = true;
  }
  return matched;
}

// ---- ack deadline: one timer per ack (hub-webhook.ts before) against one per commit ----------------

const ACKS_PER_COMMIT = 14;
const ACK_TIMEOUT_MS = 10_000;
const ackedBefore = async () => {
  const commit = Promise.resolve();
  const acks = Array.from({ length: ACKS_PER_COMMIT }, () => within(commit.then(() => true), ACK_TIMEOUT_MS));
  return (await Promise.all(acks)).every((x) => x === true);
};
const ackedAfter = async () => {
  const commit = Promise.resolve();
  const shared = within(commit.then(() => true), ACK_TIMEOUT_MS);
  const acks = Array.from({ length: ACKS_PER_COMMIT }, () => shared);
  return (await Promise.all(acks)).every((x) => x === true);
};

// ---- coalescer firing over a long queue ------------------------------------------------------

const QUEUE = 31_000;
const storeDir = mkdtempSync(join(tmpdir(), "vigil-hotpath-"));
process.on("exit", () => rmSync(storeDir, { recursive: true, force: true }));
const store = await EventsStore.open(storeDir, { maxPending: 1_000_000, maxPendingBytes: 1024 * 1024 * 1024 });
for (let i = 0; i < QUEUE; i++) {
  store.tryAdd({ action: "follow_up", server: "fx", name: "ticket.updated", arguments: {}, event: { eventId: `e${i}`, name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket: i } } as never });
}
/** The first batch is in flight (the stalled run holds it). */
const inBatch = new Set(store.pending().slice(0, MAX_BATCH).map((e) => e.seq));
function chooseBefore(idle: boolean): PendingEntry[] {
  const ready = store.pending().filter((e) => !inBatch.has(e.seq));
  const steer = ready.filter((e) => e.action === "steer");
  return steer.length > 0 ? steer.slice(0, MAX_BATCH) : idle ? ready.slice(0, MAX_BATCH) : [];
}
const seqs = (x: unknown) => (x as PendingEntry[]).map((e) => e.seq).join(",");

const cases: Case[] = [
  {
    name: "body read (~130 B, Content-Length)",
    before: () => readWithin(request().body, { maxBytes: body.length, deadlineMs: 10_000 }),
    after: () => readAnnounced(request(), { deadlineMs: 10_000 }),
    same: (x) => JSON.stringify(x, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v)),
  },
  {
    name: "signature (v1, one secret)",
    before: () => verifyBefore({ id, timestamp: String(seconds), signature, body, secrets: [secret] }),
    after: () => verifyDelivery({ id, timestamp: String(seconds), signature, body, secrets: [secret], keys: [], nowSeconds: seconds }).ok,
    same: (x) => String(x),
  },
  {
    name: `ack deadline (one group commit of ${ACKS_PER_COMMIT} acks)`,
    before: ackedBefore,
    after: ackedAfter,
    same: (x) => String(x),
  },
  {
    name: `coalescer firing, ${fmt(QUEUE)} pending, session busy`,
    before: () => chooseBefore(false),
    after: () => chooseBatch(store, inBatch, false),
    same: seqs,
    share: 0.01,
  },
  {
    name: `coalescer firing, ${fmt(QUEUE)} pending, session idle`,
    before: () => chooseBefore(true),
    after: () => chooseBatch(store, inBatch, true),
    same: seqs,
    share: 0.01,
  },
];

async function served(n: number): Promise<string> {
  const before = (req: Request) => readWithin(req.body, { maxBytes: body.length, deadlineMs: 10_000 });
  const after = (req: Request) => readAnnounced(req, { deadlineMs: 10_000 });
  const [mb, ma] = await alternate([before, after], { calls: n, warmup: Math.min(n, 2000), time: (m, read) => loopbackReadCpu(m, read, { body, inFlight: 16 }) });
  return beforeNowRow("body read over HTTP (process CPU per request, server + client)", mb!, ma!);
}

async function main(): Promise<void> {
  const n = iterations({ usage: "bun bench/webhook/hotpath.ts [--iterations N]", fallback: 20_000, min: 100, max: 10_000_000 });
  const rows = await beforeNowRows(n, cases);
  rows.push(await served(Math.max(500, Math.floor(n / 4))));
  process.stdout.write(beforeNowTable(`webhook hot path, Bun ${Bun.version}, ${n} calls (the coalescer cases 1 %) × ${ROUNDS} rounds per variant (median µs/call)`, rows).join("\n"));
}

await main();
