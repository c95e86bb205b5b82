/**
 * Micro-benchmarks of delivery to the model (issue 16: "events → model"), in process, on warm code:
 * each optimisation of a per-batch step, its code before against the code now, alternating in the
 * same process, on what bench/events/run.ts's "to the model" phase sends (batches of 50
 * `ticket.updated` occurrences of ~190 bytes, a session at the default `model.context_tokens`, so
 * a bounded history of a summary and about five earlier batches and their answers).
 *
 *   bun bench/events/hotpath-model.ts [--iterations N]     (also run at the end of hotpath.ts)
 *
 * Cases (before → now):
 * CPU µs (process.cpuUsage) per operation.
 *
 * - batch text: the coalescer fitted a batch (rendering each event to measure it) and then
 *   rendered the batch again (`renderBatch`), measuring the empty batch's preamble each time (the
 *   code of 35ee1c4, batch-text-before.ts); now `fitBatch` keeps the texts it rendered and
 *   `renderFitted` joins them, and an attribute with nothing to strip is one regex test instead of
 *   two replaces (same text, checked).
 * - request body: `JSON.stringify(chatRequestBody(…))` of the whole request (history included) per
 *   model turn, against `chatRequestJson`, which joins each message's cached wire JSON (the history's
 *   messages are the same objects from batch to batch; the new prompt is serialized once; same
 *   bytes, checked).
 * - a batch's request in a session: the history's copy of each batch is a new object with the same
 *   text, and each batch is a new text; its tokens estimated and the body serialized, before (each
 *   new object's text JSON-encoded for the estimate and again in the body) against now (one
 *   encoding per text, shared by both through shared/json-text-cache.ts).
 */
import { type BatchEntry, fitBatch, renderBatch, renderFitted } from "../../src/events/rules/batch-text.ts";
import { contextBudget } from "../../src/serve/context/budget.ts";
import * as before from "./batch-text-before.ts";
import { messagesTokens } from "../../src/serve/context/estimate.ts";
import { chatRequestBody, chatRequestJson } from "../../src/serve/models/openai-wire.ts";
import type { ChatMessage } from "../../src/serve/models/types.ts";
import { ROUNDS, alternate, iterations, timeIt } from "../ab.ts";
import { fmt, table } from "../report.ts";

const BATCH = 50;

let seq = 0;
function entry(): BatchEntry {
  seq++;
  return {
    server: "tickets",
    name: "ticket.updated",
    arguments: {},
    event: { eventId: `evt-${seq}`, name: "ticket.updated", timestamp: new Date().toISOString(), data: { ticket_id: `T-${seq}`, summary: `ticket ${seq} updated` }, cursor: String(seq) },
  };
}

/** Before (batch-text-before.ts, the code of 35ee1c4): fit (rendering every event to measure it), then render the batch again. */
function batchBefore(entries: BatchEntry[], maxBytes: number): string {
  const fit = before.fitBatch(entries, maxBytes);
  return before.renderBatch(7, entries.slice(0, fit.count), fit.payloadMaxBytes);
}

function batchNow(entries: BatchEntry[], maxBytes: number): string {
  const fit = fitBatch(entries, maxBytes);
  return renderFitted(7, entries.slice(0, fit.count), fit.texts);
}

/** A bounded history like the harness's: `batches` earlier batches (user) and their answers. */
function history(batches: number): ChatMessage[] {
  const out: ChatMessage[] = [{ role: "user", text: `[Summary of the earlier conversation]\n${"Tickets were updated. ".repeat(200)}` }];
  for (let b = 0; b < batches; b++) {
    out.push({ role: "user", text: renderBatch(b, Array.from({ length: BATCH }, entry)) });
    out.push({ role: "assistant", text: "ok" });
  }
  return out;
}

/** estimate.ts's messageTokens before issue 16: its own cache by object, each new object's text JSON-encoded again. */
const oldTokenCache = new WeakMap<object, number>();
function oldMessagesTokens(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    let t = oldTokenCache.get(m);
    if (t === undefined) {
      t = Math.ceil((48 + (m.text === null ? 4 : Buffer.byteLength(JSON.stringify(m.text), "utf8"))) / 4);
      oldTokenCache.set(m, t);
    }
    n += t;
  }
  return n;
}

/**
 * One batch's request as a session makes it: the history (a summary, then the last `keep` batches
 * and answers, each batch's message rebuilt from its stored frame: a new object with the same text)
 * and the new batch (a new text). `step` measures it (as the context keeper does) and serializes it.
 */
function sessionSim(texts: readonly string[], keep: number, step: (request: ChatMessage[]) => number): () => number {
  const summary: ChatMessage = { role: "user", text: `[Summary of the earlier conversation]\n${"Tickets were updated. ".repeat(200)}` };
  const system: ChatMessage = { role: "system", text: "You triage tickets." };
  let past: ChatMessage[] = [];
  let k = 0;
  return () => {
    const text = texts[k++ % texts.length]!;
    const r = step([system, summary, ...past, { role: "user", text }]);
    const copy: ChatMessage[] = [{ role: "user", text }, { role: "assistant", text: "ok" }];
    past = [...past, ...copy].slice(-2 * keep);
    return r;
  };
}

/** Median CPU µs per call of each variant, alternating rounds (CPU time: the machine is shared and its wall clock drifts). */
const timeRounds = (n: number, variants: [string, () => unknown][]) =>
  alternate(variants.map(([, f]) => f), { calls: n, warmup: Math.min(200, n), time: (m, f) => timeIt(m, f, true) });

export async function modelSection(
  n = iterations({ usage: "bun bench/events/hotpath-model.ts [--iterations N]", fallback: 2_000, min: 10, max: 1_000_000 }),
): Promise<void> {
  const maxBytes = contextBudget().batchBytes;
  const entries = Array.from({ length: BATCH }, entry);
  if (batchBefore(entries, maxBytes) !== batchNow(entries, maxBytes)) throw new Error("batch text: before and now differ");

  const past = history(5);
  const system: ChatMessage = { role: "system", text: "You triage tickets." };
  const promptText = renderBatch(11, Array.from({ length: BATCH }, entry));
  // Each request carries a new prompt message (a fresh object, as each run's is) after the same history.
  const request = (): ChatMessage[] => [system, ...past, { role: "user", text: promptText }];
  const before = () => JSON.stringify(chatRequestBody("bench-model", request(), []));
  const now = () => chatRequestJson("bench-model", request(), []);
  if (before() !== now()) throw new Error("request body: before and now differ");
  const bodyKiB = Buffer.byteLength(now(), "utf8") / 1024;

  // More distinct batch texts than the text cache holds, so none is found there from an earlier lap.
  const texts = Array.from({ length: 300 }, (_, b) => renderBatch(b, Array.from({ length: BATCH }, entry)));
  const simBefore = sessionSim(texts, 5, (m) => oldMessagesTokens(m) + JSON.stringify(chatRequestBody("bench-model", m, [])).length);
  const simNow = sessionSim(texts, 5, (m) => messagesTokens(m) + chatRequestJson("bench-model", m, []).length);
  if (simBefore() !== simNow()) throw new Error("session request: before and now differ");

  const rows: string[][] = [];
  const add = (step: string, [b, a]: number[]) => {
    rows.push([step, "before", fmt(b!, 1), ""]);
    rows.push(["", "now", fmt(a!, 1), `${fmt(b! / a!, 2)}×`]);
  };
  add(`batch text, ${BATCH} events (fit + render), per batch`, await timeRounds(Math.max(10, Math.floor(n / 4)), [["before", () => batchBefore(entries, maxBytes)], ["now", () => batchNow(entries, maxBytes)]]));
  add(`request body, the same ${past.length + 2} messages again (${fmt(bodyKiB, 1)} KiB, every encoding cached), per model turn`, await timeRounds(Math.max(10, Math.floor(n / 4)), [["before", before], ["now", now]]));
  add("a batch's request in a session (5 batches of history): tokens estimated + body serialized, per batch", await timeRounds(Math.max(10, Math.floor(n / 4)), [["before", simBefore], ["now", simNow]]));
  process.stdout.write(`\nevents → model hot path — µs per operation, median of ${ROUNDS} rounds (variants alternate)\n\n`);
  process.stdout.write(`${table(["step", "variant", "µs / op", "speed-up"], rows, ["l", "l", "r", "r"]).join("\n")}\n`);
}

if (import.meta.main) await modelSection();
