/**
 * The load of bench/webhook/run.ts: `senders` concurrent webhook senders (64 by default, serve.md
 * §8), each signing every delivery with the `standardwebhooks` library (the same independent signer
 * the events fixture uses) just before it POSTs it, and waiting for the answer before its next one.
 * Latency is client-side: from the request sent to its status received. A delivery counts as
 * acknowledged on a 2xx only; nothing is retried, so a refusal shows as such.
 *
 * `presign`: the senders share the receiver's 2 cores, and signing (~70 µs per delivery) is CPU the
 * receiver does not get. With it, the warm-up runs first on its own, then the timed deliveries are
 * all signed (still with `standardwebhooks`, timestamps of that moment: well inside ±300 s for a
 * burst of seconds), then sent: the timed window holds only the HTTP exchanges.
 */
import { Webhook } from "standardwebhooks";
import { quantile } from "../report.ts";

export interface Receiver {
  /** The callback URL deliveries are POSTed to. */
  url: string;
  /** The `whsec_` secret it verifies with. */
  secret: string;
  /** Headers every delivery carries besides the three signed ones (X-MCP-Subscription-Id). */
  headers: Record<string, string>;
}

export interface LoadPlan {
  senders: number;
  /** Deliveries sent before the timed ones (warm code, open connections); not counted. */
  warmup: number;
  deliveries: number;
  /** Distinguishes the event ids of one run from another's (vigil deduplicates by eventId). */
  runTag: string;
  /** A single request that takes longer than this is a failure of the run. */
  requestTimeoutMs: number;
  /** Called once, as the first timed delivery is sent (the CPU readings start there). */
  onTimedStart?: () => void;
  /** Sign every timed delivery before the timed window opens (see the header). */
  presign?: boolean;
}

export interface LoadResult {
  /** Timed deliveries answered 2xx. */
  acknowledged: number;
  /** Timed deliveries answered otherwise, by status. */
  refused: Record<string, number>;
  /** First timed send → last timed answer. */
  ms: number;
  ackPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** One event occurrence as a server delivers it (wire notes §12.1): what vigil checks and stores. */
function occurrenceBody(eventId: string, i: number): string {
  return JSON.stringify({ eventId, name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket: i, status: "open" }, cursor: String(i) });
}

interface Signed {
  body: string;
  headers: Record<string, string>;
}

function signed(signer: Webhook, r: Receiver, eventId: string, i: number): Signed {
  const body = occurrenceBody(eventId, i);
  const seconds = Math.floor(Date.now() / 1000);
  const headers = {
    "content-type": "application/json",
    "webhook-id": eventId,
    "webhook-timestamp": String(seconds),
    "webhook-signature": signer.sign(eventId, new Date(seconds * 1000), body),
    ...r.headers,
  };
  return { body, headers };
}

async function send({ body, headers }: Signed, r: Receiver, timeoutMs: number): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(r.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  const ms = performance.now() - t0;
  await res.arrayBuffer();
  return { status: res.status, ms };
}

/** Sends `warmup` then `deliveries` deliveries through `senders` concurrent senders; times the latter. */
export async function drive(r: Receiver, plan: LoadPlan): Promise<LoadResult> {
  const total = plan.warmup + plan.deliveries;
  const latencies: number[] = [];
  const refused: Record<string, number> = {};
  let next = 0;
  let acknowledged = 0;
  let firstTimed = Number.NaN;
  let lastTimed = Number.NaN;
  // Presigned: the timed deliveries, signed once the warm-up is over (filled below).
  let ready: Signed[] | null = null;
  const sender = async (end: number) => {
    const signer = new Webhook(r.secret);
    while (next < end) {
      const i = next++;
      const timed = i >= plan.warmup;
      if (timed && Number.isNaN(firstTimed)) {
        plan.onTimedStart?.();
        firstTimed = performance.now();
      }
      const delivery = timed && ready !== null ? ready[i - plan.warmup]! : signed(signer, r, `${plan.runTag}-${i}`, i);
      const { status, ms } = await send(delivery, r, plan.requestTimeoutMs);
      if (!timed) {
        if (status < 200 || status > 299) throw new Error(`warm-up delivery ${i} answered HTTP ${status}`);
        continue;
      }
      lastTimed = performance.now();
      latencies.push(ms);
      if (status >= 200 && status <= 299) acknowledged++;
      else refused[String(status)] = (refused[String(status)] ?? 0) + 1;
    }
  };
  if (plan.presign === true) {
    await Promise.all(Array.from({ length: plan.senders }, () => sender(plan.warmup)));
    const signer = new Webhook(r.secret);
    ready = Array.from({ length: plan.deliveries }, (_, k) => signed(signer, r, `${plan.runTag}-${plan.warmup + k}`, plan.warmup + k));
  }
  await Promise.all(Array.from({ length: plan.senders }, () => sender(total)));
  const ms = lastTimed - firstTimed;
  return {
    acknowledged,
    refused,
    ms,
    ackPerSecond: acknowledged / (ms / 1000),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: quantile(latencies, 1),
  };
}
