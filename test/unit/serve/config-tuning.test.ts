import { describe, expect, test } from "bun:test";
import { loadServeTuning, TUNING_KNOBS } from "../../../src/serve/config/tuning.ts";
import { refusalOf } from "../../helpers/refusal.ts";

const refusal = (env: Record<string, string>) => refusalOf(() => loadServeTuning(env));

describe("serve tuning knobs", () => {
  test("defaults are the spec's", () => {
    expect(loadServeTuning({})).toEqual({
      pollFloorMs: 1000,
      coalesceMs: 2000,
      streamIdleMs: 70000,
      webhookTtlMs: 3600000,
      maxPending: 1000,
      maxPendingBytes: 16777216,
      bodyTimeoutMs: 10000,
      mcpMaxMessageBytes: 33554432,
      shutdownGraceMs: 3000,
      healthyMs: 600000,
      refusedRetryMs: 3600000,
      retryCapMs: 60000,
      maxRestoredSessions: 32,
      runtimeTtlMs: 604800000,
      streamBuffer: 256,
      maxHttpStreams: 128,
      longPollMs: 0,
      modelBackoffCapMs: 300000,
      mcpReconnectInitialMs: 1000,
      mcpReconnectCapMs: 60000,
      ackTimeoutMs: 10000,
      jwksTimeoutMs: 5000,
      transcriptSegmentBytes: 67108864,
    });
  });

  test("every knob reads its variable; an empty value means the default", () => {
    const tuning = loadServeTuning({ VIGIL_EVENTS_POLL_FLOOR_MS: "50", VIGIL_SHUTDOWN_GRACE_MS: "0", VIGIL_EVENTS_COALESCE_MS: "" });
    expect(tuning.pollFloorMs).toBe(50);
    expect(tuning.shutdownGraceMs).toBe(0);
    expect(tuning.coalesceMs).toBe(2000);
    // The reconnect pair must stay ordered (first wait ≤ cap): each end of one is tried with the
    // other as close as its own range allows.
    const { mcpReconnectInitialMs: initial, mcpReconnectCapMs: cap } = TUNING_KNOBS;
    const alone = (env: string, value: number): Record<string, string> => {
      if (env === initial.env) return { [env]: String(value), [cap.env]: String(value) };
      if (env === cap.env) return { [env]: String(value), [initial.env]: String(Math.min(value, initial.max)) };
      return { [env]: String(value) };
    };
    for (const [key, knob] of Object.entries(TUNING_KNOBS)) {
      expect(loadServeTuning(alone(knob.env, knob.max))[key as keyof typeof TUNING_KNOBS]).toBe(knob.max);
      expect(loadServeTuning(alone(knob.env, knob.min))[key as keyof typeof TUNING_KNOBS]).toBe(knob.min);
    }
  });

  test("the spec's variable names are all present", () => {
    const names: string[] = Object.values(TUNING_KNOBS).map((k) => k.env);
    for (const name of [
      "VIGIL_EVENTS_POLL_FLOOR_MS", "VIGIL_EVENTS_COALESCE_MS", "VIGIL_EVENTS_STREAM_IDLE_MS", "VIGIL_EVENTS_WEBHOOK_TTL_MS",
      "VIGIL_EVENTS_MAX_PENDING", "VIGIL_EVENTS_MAX_PENDING_BYTES", "VIGIL_EVENTS_BODY_TIMEOUT_MS",
      "VIGIL_MCP_MAX_MESSAGE_BYTES", "VIGIL_SHUTDOWN_GRACE_MS",
    ]) expect(names).toContain(name);
  });

  for (const bad of ["abc", "-1", "1e3", "1.5", " 10", "0x10", "99999999999999999"]) {
    test(`refuses ${JSON.stringify(bad)}, naming the variable`, () => {
      const e = refusal({ VIGIL_EVENTS_POLL_FLOOR_MS: bad });
      expect(e.code).toBe("config_invalid");
      expect(e.exitCode).toBe(2);
      expect(e.message).toStartWith("VIGIL_EVENTS_POLL_FLOOR_MS: expected an integer from 1 to 3600000");
    });
  }

  test("out of range, below and above", () => {
    expect(refusal({ VIGIL_EVENTS_MAX_PENDING: "0" }).message).toStartWith("VIGIL_EVENTS_MAX_PENDING: expected an integer from 1 to 1000000");
    expect(refusal({ VIGIL_MCP_MAX_MESSAGE_BYTES: String(2 ** 31) }).message).toStartWith("VIGIL_MCP_MAX_MESSAGE_BYTES: expected an integer from 1024 to 1073741824");
  });

  test("every bad variable is listed, one per line", () => {
    const e = refusal({ VIGIL_EVENTS_COALESCE_MS: "soon", VIGIL_EVENTS_WEBHOOK_TTL_MS: "1" });
    const lines = e.message.split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe('VIGIL_EVENTS_COALESCE_MS: expected an integer from 0 to 3600000 (got "soon")');
    expect(lines[1]).toStartWith("VIGIL_EVENTS_WEBHOOK_TTL_MS: expected an integer from 100 to 604800000");
  });

  test("VIGIL_LOG_LEVEL: info or debug, any case; anything else is refused naming it", () => {
    for (const ok of ["info", "debug", "DEBUG", " Info ", ""]) expect(() => loadServeTuning({ VIGIL_LOG_LEVEL: ok })).not.toThrow();
    expect(refusal({ VIGIL_LOG_LEVEL: "verbose" }).message).toBe('VIGIL_LOG_LEVEL: expected "info" or "debug" (got "verbose")');
  });

  test("a reconnect first wait over its cap is refused naming both; equal is fine", () => {
    expect(refusal({ VIGIL_MCP_RECONNECT_INITIAL_MS: "120000" }).message).toBe(
      "VIGIL_MCP_RECONNECT_INITIAL_MS (120000) is larger than VIGIL_MCP_RECONNECT_CAP_MS (60000): the first wait must not exceed the cap",
    );
    expect(loadServeTuning({ VIGIL_MCP_RECONNECT_INITIAL_MS: "500", VIGIL_MCP_RECONNECT_CAP_MS: "500" }).mcpReconnectCapMs).toBe(500);
    // A cap that is itself bad is reported as such, not compared.
    expect(refusal({ VIGIL_MCP_RECONNECT_INITIAL_MS: "5000", VIGIL_MCP_RECONNECT_CAP_MS: "x" }).message.split("\n")).toHaveLength(1);
  });
});
