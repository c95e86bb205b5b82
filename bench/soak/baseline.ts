/**
 * The baseline client of bench/soak/run.ts: a bare MCP client (the SDK's `Client` over
 * `StreamableHTTPClientTransport`) doing the soak's load on the events fixture without vigil (no
 * session, store, transcript, frames or HTTP listener), so the soak's RSS and fd readings of
 * `vigil serve` have the runtime's and the SDK's own behaviour under the same load next to them:
 *
 *   poll   `events/poll` with `maxEvents: 50`, waiting max(nextPollMs, 1 ms) between polls (vigil's
 *          rule with a 1 ms floor), until stopped (the harness counts the polls at the fixture); each
 *          request carries no signal beyond the SDK's own timeout, so nothing outlives it;
 *   push   one `events/stream`, counting `notifications/events/event`.
 *
 *   bun bench/soak/baseline.ts --mode poll|push --url MCP_URL
 *
 * Talks to its parent on stdout, one JSON line each: `{"ready":true}` once the first (bootstrapping)
 * poll was answered or the stream is `active`; then, push, `{"events":N}` each time N passes a
 * multiple of 100; poll, `{"timeouts":N}` after each poll that went unanswered. Exits on stdin EOF,
 * so it never outlives the harness.
 */
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const { values: a } = parseArgs({
  options: {
    mode: { type: "string" },
    url: { type: "string" },
    name: { type: "string", default: "ticket.updated" },
  },
});
if ((a.mode !== "poll" && a.mode !== "push") || a.url === undefined) {
  process.stderr.write("usage: bun bench/soak/baseline.ts --mode poll|push --url MCP_URL\n");
  process.exit(2);
}
const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const REPORT_EVERY = 100;
/** A poll unanswered this long is given up and counted (`timeouts`), and the loop goes on, as vigil's does. */
const REQUEST_TIMEOUT_MS = 5_000;

// The harness closes our stdin when it is done with us (or dies).
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // discard
  }
  process.exit(0);
})();

const client = new Client({ name: "vigil-bench-soak-baseline", version: "1.0.0" }, { capabilities: {} });
await client.connect(new StreamableHTTPClientTransport(new URL(a.url)));

if (a.mode === "poll") {
  let cursor: string | null = null;
  const poll = async () =>
    (await client.request({ method: "events/poll", params: { name: a.name, arguments: {}, cursor, maxEvents: 50 } }, ResultSchema, {
      timeout: REQUEST_TIMEOUT_MS,
    })) as { cursor?: string; nextPollMs?: number };
  const first = await poll();
  cursor = typeof first.cursor === "string" ? first.cursor : null;
  say({ ready: true });
  let timeouts = 0;
  for (let done = 1; ; done++) {
    let page: Awaited<ReturnType<typeof poll>>;
    try {
      page = await poll();
    } catch (e) {
      timeouts++;
      process.stderr.write(`soak baseline: poll ${done}: ${String(e)}\n`);
      say({ timeouts });
      continue;
    }
    if (typeof page.cursor === "string") cursor = page.cursor;
    await Bun.sleep(Math.max(1, Number(page.nextPollMs) || 1));
  }
} else {
  let active = false;
  let events = 0;
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === "notifications/events/active") active = true;
    else if (n.method === "notifications/events/event" && ++events % REPORT_EVERY === 0) say({ events });
  };
  void client
    .request({ method: "events/stream", params: { name: a.name, arguments: {}, cursor: null } }, ResultSchema, { timeout: 2_147_483_647 })
    .catch((e: unknown) => {
      process.stderr.write(`soak baseline: events/stream ended: ${String(e)}\n`);
      process.exit(1);
    });
  const deadline = performance.now() + 10_000;
  while (!active) {
    if (performance.now() > deadline) throw new Error("the stream did not become active");
    await Bun.sleep(2);
  }
  say({ ready: true });
}
