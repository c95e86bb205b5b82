/**
 * Steer receipts and the model status in get_state (serve.md §6 item 5, §5): a steered batch is
 * reported received once, when the model answered a turn carrying it; follow-up batches are not.
 */
import { expect, test } from "bun:test";
import { DeliveryReports, injectedItem, newlyReceived } from "../../../src/serve/session/delivery-reports.ts";
import type { TranscriptRecord } from "../../../src/serve/state/transcript.ts";

test("taken steers up to the count, and prompt items that came in as steers, each once", () => {
  const prompt = [injectedItem({ tag: "s0", text: "a", behavior: "steer" }), injectedItem({ tag: "f0", text: "b", behavior: "follow_up" }), { text: "client" }];
  const taken = [{ text: "x", tag: "s1", steer: true as const }, { text: "client steer" }, { text: "y", tag: "s2", steer: true as const }];
  const reported = new Set<string>();
  expect(newlyReceived(prompt, taken, 0, reported)).toEqual(["s0"]);
  expect(newlyReceived(prompt, taken, 2, reported)).toEqual(["s1"]);
  expect(newlyReceived(prompt, taken, 3, reported)).toEqual(["s2"]);
  expect(newlyReceived(prompt, taken, 3, reported)).toEqual([]);
});

test("a run's receipt callback notifies the listeners with the new tags only", () => {
  const reports = new DeliveryReports(() => {});
  const seen: [string[], string][] = [];
  reports.onReceived((tags, runId) => seen.push([tags, runId]));
  const taken = [{ text: "x", tag: "s1", steer: true as const }];
  const received = reports.receiptsFor([], taken, "run_7");
  received(0);
  received(1);
  received(1);
  expect(seen).toEqual([[["s1"], "run_7"]]);
});

test("get_state shows the outage from its first frame until the model is available again", () => {
  let now = 10_000;
  const reports = new DeliveryReports(() => {}, () => now);
  const frame = (f: Record<string, unknown>, time: string) => ({ seq: 1, time, ...f }) as unknown as TranscriptRecord;
  expect(reports.stateField()).toEqual({});
  reports.see(frame({ type: "model_unavailable", error: "model HTTP 503", retry_in_ms: 1000 }, "2026-01-01T00:00:00.000Z"));
  reports.see(frame({ type: "model_unavailable", error: "cannot reach the model", retry_in_ms: 2000 }, "2026-01-01T00:00:05.000Z"));
  now += 500;
  expect(reports.stateField()).toEqual({ model_unavailable: { error: "cannot reach the model", since: "2026-01-01T00:00:00.000Z", retry_in_ms: 1500 } });
  reports.see(frame({ type: "model_available" }, "2026-01-01T00:00:09.000Z"));
  expect(reports.stateField()).toEqual({});
});
