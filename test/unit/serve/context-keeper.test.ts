/** The context keeper (issue 12 item A) with a scripted model: compaction, its fallback, cuts. */
import { describe, expect, test } from "bun:test";
import type { HistoryBlock } from "../../../src/serve/context/blocks.ts";
import { contextBudget } from "../../../src/serve/context/budget.ts";
import { messagesTokens } from "../../../src/serve/context/estimate.ts";
import { ContextKeeper } from "../../../src/serve/context/keeper.ts";
import { type ChatMessage, type ChatModel, ModelError, type ModelTurn } from "../../../src/serve/models/types.ts";
import { fitBatch, renderBatch, type BatchEntry } from "../../../src/events/rules/batch-text.ts";
import type { CompactionFrame } from "../../../src/serve/protocol/frames.ts";

const budget = contextBudget(10_000); // trigger 7500 tokens ≈ 30 KB
const big = (tag: string) => `${tag} ${"x".repeat(8000)}`; // ≈ 2000 tokens

function scripted(answer: (messages: ChatMessage[]) => ModelTurn | Error): ChatModel & { seen: ChatMessage[][] } {
  const seen: ChatMessage[][] = [];
  return {
    acceptsTools: true,
    seen,
    async turn(messages) {
      seen.push(messages);
      const a = answer(messages);
      if (a instanceof Error) throw a;
      return a;
    },
  };
}

const blocks = (n: number): HistoryBlock[] =>
  Array.from({ length: n }, (_, i) => ({ fromSeq: 10 * i + 1, toSeq: 10 * i + 9, messages: [{ role: "user", text: big(`run${i}`) }, { role: "assistant", text: "ok" }] }));

function keeper(chat: ChatModel, history: HistoryBlock[], prompt: ChatMessage[]) {
  const frames: CompactionFrame[] = [];
  const k = new ContextKeeper({ chat, budget, systemPrompt: "be brief", blocks: history, historySeq: 100, prompt, emit: (f) => void frames.push(f) });
  return { k, frames };
}

const signal = new AbortController().signal;

describe("ContextKeeper", () => {
  test("a history within the trigger is sent as it is, with no model call", async () => {
    const chat = scripted(() => ({ text: "unused", toolCalls: [] }));
    const { k, frames } = keeper(chat, blocks(2), [{ role: "user", text: "hi" }]);
    const request = await k.request([], signal);
    expect(request.map((m) => m.text?.slice(0, 4))).toEqual(["be b", "run0", "ok", "run1", "ok", "hi"]);
    expect(chat.seen).toHaveLength(0);
    expect(frames).toHaveLength(0);
  });

  test("over the trigger: one summary request with no tools, a compaction frame, [summary + recent runs]", async () => {
    const chat = scripted(() => ({ text: "the operator wants builds watched", toolCalls: [] }));
    const { k, frames } = keeper(chat, blocks(5), [{ role: "user", text: "new batch" }]);
    const request = await k.request([], signal);
    expect(chat.seen).toHaveLength(1);
    expect(chat.seen[0]![0]!.role).toBe("system");
    expect(messagesTokens(chat.seen[0]!)).toBeLessThanOrEqual(budget.trigger);
    expect(frames).toHaveLength(1);
    const [frame] = frames;
    expect(frame).toMatchObject({ type: "compaction", summary: "the operator wants builds watched", from_seq: 1 });
    // The first kept run starts right after the range.
    const kept = request.filter((m) => m.text?.startsWith("run")).map((m) => m.text!.slice(0, 4));
    expect(kept.length).toBeGreaterThan(0);
    expect(frame!.to_seq).toBe(10 * Number(kept[0]!.slice(3)));
    expect(request[1]!.text).toContain("the operator wants builds watched");
    expect(kept).toEqual(["run4"]);
    expect(request.at(-1)!.text).toBe("new batch");
    expect(messagesTokens(request)).toBeLessThanOrEqual(budget.trigger);
  });

  test("a failing or oversized summary falls back to a trim with a notice; the request still fits", async () => {
    for (const answer of [new ModelError("http", "model HTTP 400", { status: 400 }), { text: "y".repeat(50_000), toolCalls: [] }]) {
      const chat = scripted(() => answer as ModelTurn | Error);
      const { k, frames } = keeper(chat, blocks(6), [{ role: "user", text: "next" }]);
      const request = await k.request([], signal);
      expect(frames[0]!.summary).toMatch(/^\[vigil: \d+ earlier messages omitted to fit the model's context\]$/);
      expect(messagesTokens(request)).toBeLessThanOrEqual(budget.trigger);
    }
  });

  test("an outage of the model during the summary request is passed on: no trim, no compaction frame", async () => {
    const outages = [new ModelError("http", "model HTTP 503", { status: 503 }), new ModelError("connect", "connection refused"), new ModelError("timeout", "no answer")];
    for (const outage of outages) {
      const chat = scripted(() => outage);
      const { k, frames } = keeper(chat, blocks(6), [{ role: "user", text: "next" }]);
      await expect(k.request([], signal)).rejects.toBe(outage);
      expect(frames).toHaveLength(0);
    }
  });

  test("an abort during the summary request is passed on", async () => {
    const controller = new AbortController();
    const chat = scripted(() => {
      controller.abort();
      return new ModelError("aborted", "model request aborted");
    });
    const { k } = keeper(chat, blocks(6), [{ role: "user", text: "next" }]);
    await expect(k.request([], controller.signal)).rejects.toThrow("aborted");
  });

  test("a run's own growth (tool results) is compacted too, keeping tool calls and results paired", async () => {
    const chat = scripted(() => ({ text: "looked at 4 logs", toolCalls: [] }));
    const { k, frames } = keeper(chat, [], [{ role: "user", text: "check the logs" }]);
    for (let i = 0; i < 5; i++) {
      k.add({ role: "assistant", text: null, toolCalls: [{ id: `c${i}`, name: "read_log", arguments: {} }] });
      k.add({ role: "tool", toolCallId: `c${i}`, text: big(`log${i}`) });
    }
    const request = await k.request([], signal);
    expect(frames).toHaveLength(0);
    expect(messagesTokens(request)).toBeLessThanOrEqual(budget.trigger);
    expect(request[1]!.text).toBe("check the logs");
    expect(request[2]!.text).toContain("looked at 4 logs");
    // Whatever is kept starts with an assistant turn and keeps each result after its call.
    const rest = request.slice(3);
    expect(rest[0]?.role ?? "assistant").toBe("assistant");
    expect(k.own[0]!.text).toBe("check the logs");
  });

  test("a single message larger than the window is cut for the request, with a marker", async () => {
    const chat = scripted(() => ({ text: "unused", toolCalls: [] }));
    const { k } = keeper(chat, [], [{ role: "user", text: "z".repeat(200_000) }]);
    const request = await k.request([], signal);
    expect(messagesTokens(request)).toBeLessThanOrEqual(budget.trigger);
    expect(request.at(-1)!.text).toMatch(/…\[vigil: \d+ bytes cut\]$/);
    expect(k.own[0]!.text).toHaveLength(200_000);
  });
});

describe("fitBatch", () => {
  const entry = (id: string, bytes: number): BatchEntry => ({
    server: "ci", name: "build.finished", arguments: {}, instructions: "triage failures",
    event: { eventId: id, timestamp: "2026-01-01T00:00:00Z", data: { blob: "x".repeat(bytes) } },
  });
  const sent = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

  test("takes the first entries that fit, at least one", () => {
    const entries = Array.from({ length: 10 }, (_, i) => entry(`e${i}`, 10_000));
    const fit = fitBatch(entries, 35_000);
    expect(fit.count).toBe(3);
    expect(sent(renderBatch(99_999, entries.slice(0, fit.count), fit.payloadMaxBytes))).toBeLessThanOrEqual(35_000);
    expect(sent(renderBatch(99_999, entries.slice(0, fit.count + 1), fit.payloadMaxBytes))).toBeGreaterThan(35_000);
  });

  test("an event too large for the batch is cut with a marker, so it still goes in", () => {
    const fit = fitBatch([entry("huge", 500_000)], 20_000);
    expect(fit.count).toBe(1);
    const text = renderBatch(1, [entry("huge", 500_000)], fit.payloadMaxBytes);
    expect(sent(text)).toBeLessThanOrEqual(20_000);
    expect(text).toContain('event_id="huge"');
    expect(text).toMatch(/…\[truncated \d+ bytes\]\n<\/mcp_event>$/);
  });

  test("escape-heavy payloads are measured as sent", () => {
    const quoted: BatchEntry = { ...entry("q", 0), event: { eventId: "q", data: { s: "\"\\".repeat(20_000) } } };
    const fit = fitBatch([quoted], 20_000);
    expect(sent(renderBatch(1, [quoted], fit.payloadMaxBytes))).toBeLessThanOrEqual(20_000);
  });

  test("no bound: everything, at the default payload bound", () => {
    expect(fitBatch([entry("a", 10), entry("b", 10)], Number.POSITIVE_INFINITY)).toMatchObject({ count: 2, payloadMaxBytes: 64 * 1024 });
  });
});
