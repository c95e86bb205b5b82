/**
 * The baseline receiver of bench/webhook/run.ts (serve.md §8): the least a durable webhook endpoint
 * does, with nothing of vigil in it. One Bun.serve; per POST it reads the body, checks the Standard
 * Webhooks v1 signature the way vigil's receiver does (timestamp within ±300 s, HMAC-SHA256 over
 * `id.timestamp.body` with the decoded `whsec_` key, the first 8 entries, constant-time compare),
 * appends one line to its log and fdatasyncs it, then answers 200. The append and the sync are
 * synchronous, so requests are committed one at a time: one fdatasync per request, no group commit.
 *
 * With `--floor` instead of `--log` it is the FLOOR receiver: the same reading and verification,
 * then 200 with nothing stored. No durable receiver on the machine can acknowledge faster than it
 * does (it does a strict subset of their work under the same load), so floor/baseline bounds the
 * ratio any of them can reach against the baseline.
 *
 *   bun bench/webhook/baseline.ts --secret-env NAME (--log FILE | --floor)
 *
 * The secret comes from the environment variable NAME (never argv, which `ps` shows). Prints
 * `{"url":…,"pid":…}` once listening; exits when stdin closes.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";

const TOLERANCE_SECONDS = 300;
const SIGNATURE_ENTRIES = 8;
const BODY_BYTES = 1024 * 1024;

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? process.argv[i + 1] : undefined;
  if (value === undefined || value === "") {
    process.stderr.write(`baseline: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const secret = process.env[arg("--secret-env")] ?? "";
if (!secret.startsWith("whsec_")) {
  process.stderr.write("baseline: the secret variable must hold a whsec_ secret\n");
  process.exit(2);
}
const key = Buffer.from(secret.slice("whsec_".length), "base64");
/** The floor keeps nothing: no log file at all. */
const fd = process.argv.includes("--floor") ? null : openSync(arg("--log"), "a");

/** True when some `v1,` entry among the first 8 is the HMAC of `id.timestamp.body`. */
function verified(id: string, timestamp: string, signature: string, body: Uint8Array): boolean {
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const entry of signature.split(" ").slice(0, SIGNATURE_ENTRIES)) {
    if (!entry.startsWith("v1,")) continue;
    const given = Buffer.from(entry.slice(3), "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
  }
  return false;
}

function timely(timestamp: string): boolean {
  if (!/^\d{1,12}$/.test(timestamp)) return false;
  return Math.abs(Math.floor(Date.now() / 1000) - Number(timestamp)) <= TOLERANCE_SECONDS;
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  development: false,
  idleTimeout: 30,
  maxRequestBodySize: BODY_BYTES,
  async fetch(request) {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const id = request.headers.get("webhook-id");
    const timestamp = request.headers.get("webhook-timestamp");
    const signature = request.headers.get("webhook-signature");
    const body = new Uint8Array(await request.arrayBuffer());
    if (id === null || timestamp === null || signature === null || !timely(timestamp)) return new Response(null, { status: 400 });
    if (!verified(id, timestamp, signature, body)) return new Response(null, { status: 401 });
    if (fd !== null) {
      writeSync(fd, `${JSON.stringify({ id, bytes: body.length })}\n`);
      fdatasyncSync(fd);
    }
    return Response.json({});
  },
});

process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${server.port}/hook`, pid: process.pid })}\n`);

void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Nothing is read from stdin; its end is the signal to go.
  }
  server.stop(true);
  if (fd !== null) closeSync(fd);
  process.exit(0);
})();
