// The daemon's metric parts that are pure or clock-driven (issue 15 item 1): model outcomes and
// the metered chat, token usage from the wire, run outcomes, the model-unavailable clock, the
// event-loop lag sampler, server-state samples, open fds, loopback hosts and VIGIL_METRICS.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { METRICS } from "../../../src/shared/metrics/catalog.ts";
import { renderMetrics } from "../../../src/shared/metrics/render.ts";
import type { Scheduler, TimerHandle } from "../../../src/shared/time.ts";
import { loadServeTuning, metricsSetting } from "../../../src/serve/config/tuning.ts";
import { isLoopbackHost } from "../../../src/serve/daemon/listen.ts";
import { LagSampler, openFds, serverStateSamples } from "../../../src/serve/daemon/metrics-process.ts";
import { metricsResponse } from "../../../src/serve/daemon/metrics-route.ts";
import { meteredChat, modelOutcome } from "../../../src/serve/models/metered.ts";
import { wireUsage } from "../../../src/serve/models/openai-wire.ts";
import { OutageClock } from "../../../src/serve/models/outage-clock.ts";
import { type ChatModel, ModelError } from "../../../src/serve/models/types.ts";
import { runOutcome } from "../../../src/serve/run/run-metrics.ts";

/** The value of one sample line of the process registry, or undefined. */
function sample(line: string): number | undefined {
  const found = renderMetrics(METRICS).split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe("model metrics", () => {
  test("outcomes: ok is the caller's; aborted, timeout, unavailable (an outage) and error", () => {
    expect(modelOutcome(new ModelError("aborted", "x"))).toBe("aborted");
    expect(modelOutcome(new ModelError("timeout", "x"))).toBe("timeout");
    expect(modelOutcome(new ModelError("connect", "x"))).toBe("unavailable");
    expect(modelOutcome(new ModelError("http", "x", { status: 503 }))).toBe("unavailable");
    expect(modelOutcome(new ModelError("http", "x", { status: 400 }))).toBe("error");
    expect(modelOutcome(new ModelError("protocol", "x"))).toBe("error");
    expect(modelOutcome(new Error("boom"))).toBe("error");
  });

  test("the metered chat counts each turn by outcome and adds reported tokens", async () => {
    const ok = () => sample('vigil_model_requests_total{outcome="ok"}') ?? 0;
    const timeout = () => sample('vigil_model_requests_total{outcome="timeout"}') ?? 0;
    const input = () => sample('vigil_model_tokens_total{type="input"}') ?? 0;
    const output = () => sample('vigil_model_tokens_total{type="output"}') ?? 0;
    const before = { ok: ok(), timeout: timeout(), input: input(), output: output() };
    let answer: "usage" | "plain" | "fail" = "usage";
    const inner: ChatModel = {
      acceptsTools: true,
      turn: async () => {
        if (answer === "fail") throw new ModelError("timeout", "late");
        return answer === "usage" ? { text: "hi", toolCalls: [], usage: { inputTokens: 12, outputTokens: 3 } } : { text: "hi", toolCalls: [] };
      },
    };
    const chat = meteredChat(inner);
    expect(chat.acceptsTools).toBe(true);
    expect((await chat.turn([], [], new AbortController().signal)).text).toBe("hi");
    answer = "plain";
    await chat.turn([], [], new AbortController().signal);
    answer = "fail";
    await expect(chat.turn([], [], new AbortController().signal)).rejects.toBeInstanceOf(ModelError);
    expect(ok() - before.ok).toBe(2);
    expect(timeout() - before.timeout).toBe(1);
    expect(input() - before.input).toBe(12);
    expect(output() - before.output).toBe(3);
    expect(sample('vigil_model_request_duration_seconds_count{outcome="timeout"}')).toBeGreaterThanOrEqual(1);
  });

  test("wire usage: both counts or nothing", () => {
    expect(wireUsage({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })).toEqual({ inputTokens: 5, outputTokens: 2 });
    for (const bad of [undefined, null, 5, {}, { prompt_tokens: 5 }, { prompt_tokens: -1, completion_tokens: 2 }, { prompt_tokens: 1.5, completion_tokens: 2 }, { prompt_tokens: "5", completion_tokens: 2 }]) {
      expect(wireUsage(bad)).toBeUndefined();
    }
  });

  test("the unavailable clock runs while any session has the model marked unavailable, wall time once", () => {
    let now = 0;
    const clock = new OutageClock(() => now);
    const a = {};
    const b = {};
    clock.enter(a);
    now = 1000;
    clock.enter(b); // overlapping: not counted twice
    clock.enter(a); // idempotent
    now = 2500;
    expect(clock.seconds()).toBe(2.5); // the ongoing outage counts up to the reading
    clock.leave(a);
    now = 3000;
    clock.leave(b);
    clock.leave(b);
    now = 10_000;
    expect(clock.seconds()).toBe(3);
    clock.enter(a);
    now = 10_500;
    expect(clock.seconds()).toBe(3.5);
  });
});

describe("run and process metrics", () => {
  test("run outcomes: the status, an outage of the model apart", () => {
    expect(runOutcome("ok", undefined)).toBe("ok");
    expect(runOutcome("aborted", undefined)).toBe("aborted");
    expect(runOutcome("failed", "model_unavailable")).toBe("model_unavailable");
    expect(runOutcome("failed", "frame_not_stored")).toBe("failed");
  });

  test("event-loop lag: how late the timer fired, the worst of the window, stopped for good", () => {
    let now = 0;
    let armed: { fn: () => void; ms: number; unref: boolean } | null = null;
    const scheduler: Scheduler = {
      now: () => now,
      setTimeout: (fn, ms, o) => {
        armed = { fn, ms, unref: o?.unref === true };
        return 1 as unknown as TimerHandle;
      },
      clearTimeout: () => {
        armed = null;
      },
    };
    const fire = (late: number) => {
      const t = armed!;
      armed = null;
      now += t.ms + late;
      t.fn();
    };
    const lag = new LagSampler(scheduler, 500, 3);
    expect(lag.lagSeconds).toBe(0);
    lag.start();
    expect(armed).toMatchObject({ ms: 500, unref: true });
    fire(0);
    fire(250);
    fire(10);
    expect(lag.lagSeconds).toBe(0.25);
    fire(0);
    fire(0);
    fire(0); // the 250 ms sample left the window of 3
    expect(lag.lagSeconds).toBe(0);
    lag.stop();
    expect(armed).toBeNull();
  });

  test("server states: one sample per known state, 1 on the current one", () => {
    expect(serverStateSamples([{ name: "fx", state: "reconnecting" }])).toEqual([
      { labels: { server: "fx", state: "connecting" }, value: 0 },
      { labels: { server: "fx", state: "connected" }, value: 0 },
      { labels: { server: "fx", state: "reconnecting" }, value: 1 },
      { labels: { server: "fx", state: "closed" }, value: 0 },
    ]);
  });

  test("open fds: the directory's entries less the reader's own; null when unreadable", () => {
    const dir = mkdtempSync(join(tmpdir(), "vigil-fds-"));
    for (const f of ["0", "1", "2", "3"]) writeFileSync(join(dir, f), "");
    expect(openFds(dir)).toBe(3);
    expect(openFds(join(dir, "missing"))).toBeNull();
  });

  test("/metrics answers GET and HEAD with the exposition type, 405 otherwise", async () => {
    const get = metricsResponse(new Request("http://x/metrics"));
    expect(get.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(await get.text()).toContain("# TYPE vigil_tool_calls_total counter");
    expect(metricsResponse(new Request("http://x/metrics", { method: "HEAD" })).status).toBe(200);
    const post = metricsResponse(new Request("http://x/metrics", { method: "POST" }));
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
  });
});

describe("metrics settings", () => {
  test("loopback hosts, by address text", () => {
    for (const h of ["localhost", "LOCALHOST", "127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ["0.0.0.0", "::", "10.0.0.1", "127.0.0.256", "::2", "1::1", "localhost.example.com", "128.0.0.1"]) expect(isLoopbackHost(h)).toBe(false);
  });

  test("VIGIL_METRICS: on (default), off, any case; anything else refused with the tuning knobs", () => {
    expect(metricsSetting({})).toBe(true);
    expect(metricsSetting({ VIGIL_METRICS: "" })).toBe(true);
    expect(metricsSetting({ VIGIL_METRICS: "Off" })).toBe(false);
    expect(metricsSetting({ VIGIL_METRICS: "on" })).toBe(true);
    expect(metricsSetting({ VIGIL_METRICS: "0" })).toBeNull();
    expect(() => loadServeTuning({ VIGIL_METRICS: "off" })).not.toThrow();
    expect(() => loadServeTuning({ VIGIL_METRICS: "no" })).toThrow('VIGIL_METRICS: expected "on" or "off" (got "no")');
  });
});
