/**
 * `vigil serve` as bench/webhook/run.ts measures it: the binary under test in daemon mode
 * (`--listen`, `--mcp-events-callback-url`), the HTTP events fixture as its MCP server (the bearer
 * principal it requires on subscribe) and the in-process mock model, started the way the webhook
 * e2e tests start them (test/helpers/webhook-serve.ts) — one definition of the stack. What the
 * bench needs on top: the callback URL, secret and subscription id of a live webhook subscription
 * (the fixture's /control/state `hooks`), readiness, and the daemon's /proc readings.
 */
import { rmSync } from "node:fs";
import type { FixtureHook } from "../../test/helpers/events-fixture.ts";
import { Cleanups, command } from "../../test/helpers/serve.ts";
import { startWebhookStack, type WebhookStack } from "../../test/helpers/webhook-serve.ts";
import { waitFor } from "../../test/helpers/wait.ts";
import { VIGIL } from "../vigil-under-test.ts";
import { type Memory, memoryOf } from "../proc.ts";
import { inFlight } from "../in-flight.ts";
import type { Receiver } from "./senders.ts";

const TICKETS = "ticket.updated";
const READY_MS = 30_000;
const SETTLE_MS = 2_000;
const SUBSCRIBE_WINDOW = 8;

/**
 * The pending queue must not fill during a measurement (a full queue answers 503): its bounds are
 * raised far past any run, and the model is stalled, so the daemon does nothing but ingest.
 */
export const INGEST_KNOBS: Record<string, string> = {
  VIGIL_EVENTS_MAX_PENDING: "1000000",
  VIGIL_EVENTS_MAX_PENDING_BYTES: String(1024 * 1024 * 1024),
};

/** Stacks still up: their daemon groups are killed and their directories removed on any exit. */
const live = new Set<WebhookStack>();
process.on("exit", () => {
  for (const s of live) {
    s.daemon.client.killGroup("SIGKILL");
    rmSync(s.env.dir, { recursive: true, force: true });
  }
});

export interface VigilStack {
  stack: WebhookStack;
  pid: number;
  /** The state directory (for the same-filesystem check against the baseline's). */
  stateDir: string;
  /** SIGTERM, then the stack's cleanups; resolves with vigil's exit code. */
  close(): Promise<number | null>;
}

async function open(events: Record<string, unknown>[], knobs: Record<string, string>, vigil: readonly string[] = [VIGIL]): Promise<VigilStack> {
  const cleanups = new Cleanups();
  let stack: WebhookStack;
  try {
    stack = await startWebhookStack(cleanups, { events, knobs, vigil });
  } catch (e) {
    await cleanups.run();
    throw e;
  }
  live.add(stack);
  return {
    stack,
    pid: stack.daemon.client.pid,
    stateDir: stack.env.stateDir,
    async close() {
      const code = await stack.stop().catch(() => null);
      live.delete(stack);
      await cleanups.run();
      return code;
    },
  };
}

/**
 * A daemon with one configured webhook subscription, the model stalled, ready to acknowledge.
 * `vigil`: the argv prefix (default the binary under test; --profile runs it from source).
 */
export async function startIngestingVigil(vigil?: readonly string[]): Promise<VigilStack & { receiver: Receiver }> {
  const v = await open([{ name: TICKETS, delivery: "webhook", action: "follow_up" }], INGEST_KNOBS, vigil);
  try {
    v.stack.env.model.setDefaultReply({ stall: true });
    const hook = await liveHook(v, 1);
    const receiver: Receiver = { url: hook.url, secret: hook.secrets.at(-1)!, headers: { "X-MCP-Subscription-Id": hook.id } };
    await routable(v, receiver);
    return { ...v, receiver };
  } catch (e) {
    await v.close();
    throw e;
  }
}

async function liveHook(v: VigilStack, count: number): Promise<FixtureHook> {
  const hooks = await waitFor(async () => (await v.stack.fixture.state()).hooks.filter((h) => !h.expired), {
    until: (h) => h.length >= count,
    timeoutMs: READY_MS,
    intervalMs: 50,
    label: `${count} webhook subscription(s) at the fixture (vigil stderr: ${v.stack.daemon.client.stderrText().slice(-800)})`,
    show: (h) => h.length,
  });
  return hooks[0]!;
}

/** The route answers 503 until the subscribe answer is persisted: a probe delivery must get 2xx first. */
async function routable(v: VigilStack, r: Receiver): Promise<void> {
  await waitFor(
    async () => {
      const res = await v.stack.postSigned(r.url, { eventId: `probe-${Date.now()}`, name: TICKETS, data: {} }, { secret: r.secret, headers: r.headers });
      await res.arrayBuffer();
      return res.status;
    },
    { until: (status) => status === 200, timeoutMs: READY_MS, intervalMs: 50, label: "the callback to acknowledge a probe delivery" },
  );
}

/** The receiver's counters from /v1/health (`accepted`, `duplicates`, refusals). */
export async function webhookCounters(v: VigilStack): Promise<Record<string, number>> {
  const res = await fetch(`${v.stack.daemon.base}/v1/health`, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { webhook?: Record<string, number> };
  return body.webhook ?? {};
}

// ---------------------------------------------------------------------------------------------
// Memory with many webhook subscriptions

export interface MemoryRow {
  label: string;
  m: Memory;
}

export interface WebhookMemory {
  subs: number;
  rows: MemoryRow[];
  subscribeMs: number;
  failures: number;
  failureSample: string | null;
  /** Webhook subscriptions the fixture holds at the end (each one verified its callback). */
  hooksAtFixture: number;
  exit: number | null;
}

/**
 * A fresh daemon and one session `bench` making `k` runtime webhook subscriptions
 * (`mcp_events_subscribe`, distinct `arguments`), against the same daemon with the session open
 * and none. VmRSS etc. read from /proc after a settle of SETTLE_MS at each step.
 */
export async function webhookMemory(k: number): Promise<WebhookMemory> {
  const v = await open([], {});
  try {
    const d = v.stack.daemon;
    const rows: MemoryRow[] = [];
    const reading = async (label: string) => {
      await Bun.sleep(SETTLE_MS);
      rows.push({ label, m: memoryOf(v.pid) });
    };
    await reading("started (daemon mode, callback URL set)");
    const listed = await command(d, "bench", { type: "mcp_events_list", id: "list" });
    if (!listed.body.success) throw new Error(`mcp_events_list: ${listed.body.error?.message}`);
    await reading("session open, 0 subscriptions (one mcp_events_list)");
    const first = await subscribe(v, 0, 1);
    if (first.failures > 0) throw new Error(`the first webhook subscription failed: ${first.sample}`);
    await reading("1 webhook subscription");
    const t0 = performance.now();
    const rest = await subscribe(v, 1, k);
    const subscribeMs = performance.now() - t0;
    await reading(`${k} webhook subscriptions`);
    const hooksAtFixture = (await v.stack.fixture.state()).hooks.filter((h) => !h.expired).length;
    const exit = await v.close();
    return { subs: k, rows, subscribeMs, failures: rest.failures, failureSample: rest.sample, hooksAtFixture, exit };
  } catch (e) {
    await v.close();
    throw e;
  }
}

/** Subscriptions from..to-1, SUBSCRIBE_WINDOW in flight; each with its own `arguments`. */
function subscribe(v: VigilStack, from: number, to: number): Promise<{ failures: number; sample: string | null }> {
  return inFlight(from, to, SUBSCRIBE_WINDOW, async (i) => {
    const spec = { type: "mcp_events_subscribe", id: `sub-${i}`, server: "fx", name: TICKETS, delivery: "webhook", arguments: { project: `p${i}` } };
    const r = await command(v.stack.daemon, "bench", spec);
    return r.body.success ? null : (r.body.error?.message ?? `HTTP ${r.status}`);
  });
}
