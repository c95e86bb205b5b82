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
 *   src/events/webhook/signature.ts).
 *
 * Each case runs its two variants alternately in rounds (warm-up first) and prints the median
 * µs per operation; both variants' results are checked to be the same answer.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { readAnnounced, readWithin } from "../../src/shared/read-within.ts";
import { verifyDelivery } from "../../src/events/webhook/signature.ts";
import { newWebhookSecret, webhookKey } from "../../src/events/webhook/secret.ts";
import { fmt, median } from "../report.ts";

const ROUNDS = 7;

function iterations(): number {
  const i = process.argv.indexOf("--iterations");
  const n = i >= 0 ? Number(process.argv[i + 1]) : 20_000;
  if (!Number.isInteger(n) || n < 100 || n > 10_000_000) {
    process.stderr.write("usage: bun bench/webhook/hotpath.ts [--iterations N]   (100 to 10,000,000; default 20,000)\n");
    process.exit(2);
  }
  return n;
}

/** µs per call of `f` over `n` calls (awaited one at a time when it returns a promise). */
async function timeIt(n: number, f: () => unknown): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const x = f();
    if (x instanceof Promise) await x;
  }
  return ((performance.now() - t0) * 1000) / n;
}

interface Case {
  name: string;
  before: () => unknown;
  after: () => unknown;
  /** Both variants give this answer (checked once before timing). */
  same: (x: unknown) => string;
}

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
];

/** Process CPU µs per request of a loopback Bun.serve whose handler reads the body with `read`. */
async function servedCpu(n: number, read: (req: Request) => Promise<unknown>): Promise<number> {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    development: false,
    idleTimeout: 30,
    maxRequestBodySize: 1024 * 1024,
    async fetch(req) {
      await read(req);
      return new Response("{}");
    },
  });
  const url = `http://127.0.0.1:${server.port}/`;
  let next = 0;
  const client = async () => {
    while (next++ < n) await (await fetch(url, { method: "POST", body, signal: AbortSignal.timeout(30_000) })).arrayBuffer();
  };
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: 16 }, client));
  const c = process.cpuUsage(c0);
  server.stop(true);
  return (c.user + c.system) / n;
}

async function served(n: number): Promise<string> {
  const before = (req: Request) => readWithin(req.body, { maxBytes: body.length, deadlineMs: 10_000 });
  const after = (req: Request) => readAnnounced(req, { deadlineMs: 10_000 });
  await servedCpu(Math.min(n, 2000), before);
  await servedCpu(Math.min(n, 2000), after);
  const b: number[] = [];
  const a: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    b.push(await servedCpu(n, before));
    a.push(await servedCpu(n, after));
  }
  const [mb, ma] = [median(b), median(a)];
  return `| body read over HTTP (process CPU per request, server + client) | ${fmt(mb, 2)} | ${fmt(ma, 2)} | ${fmt(mb - ma, 2)} | ${fmt(mb / ma, 2)} × |`;
}

async function main(): Promise<void> {
  const n = iterations();
  const rows: string[] = [];
  for (const c of cases) {
    const [b, a] = [await c.before(), await c.after()];
    if (c.same(b) !== c.same(a)) throw new Error(`${c.name}: the two variants disagree (${c.same(b)} vs ${c.same(a)})`);
    await timeIt(Math.min(n, 5000), c.before);
    await timeIt(Math.min(n, 5000), c.after);
    const before: number[] = [];
    const after: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      before.push(await timeIt(n, c.before));
      after.push(await timeIt(n, c.after));
    }
    const [mb, ma] = [median(before), median(after)];
    rows.push(`| ${c.name} | ${fmt(mb, 2)} | ${fmt(ma, 2)} | ${fmt(mb - ma, 2)} | ${fmt(mb / ma, 2)} × |`);
  }
  rows.push(await served(Math.max(500, Math.floor(n / 4))));
  process.stdout.write(
    [
      `webhook hot path, Bun ${Bun.version}, ${n} calls × ${ROUNDS} rounds per variant (median µs/call)`,
      "",
      "| step | before µs | now µs | saved µs | speed-up |",
      "| --- | ---: | ---: | ---: | ---: |",
      ...rows,
      "",
    ].join("\n"),
  );
}

await main();
