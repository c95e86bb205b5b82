import { describe, expect, test } from "bun:test";
import {
  errorResponse,
  type GetStateData,
  mcpEventFrame,
  mcpEventStatusFrame,
  messageFrame,
  okResponse,
  PROTOCOL_VERSION,
  runEndFrame,
  runStartFrame,
  type SubscriptionStatus,
  toolCallFrame,
  toolResultFrame,
} from "../../../src/serve/protocol/frames.ts";

const keys = (x: object) => Object.keys(x);
const key = { server: "tickets", name: "ticket.updated", arguments: { project: "alpha" } };

describe("frame builders use exactly the §4 field names (no seq)", () => {
  test("response", () => {
    expect(okResponse("p1", "prompt", { run_id: "r1" })).toEqual({
      type: "response", id: "p1", command: "prompt", success: true, data: { run_id: "r1" },
    });
    expect(keys(errorResponse(3, "abort", "busy", "no run"))).toEqual(["type", "id", "command", "success", "error"]);
    expect(errorResponse(3, "abort", "busy", "no run").error).toEqual({ code: "busy", message: "no run" });
  });

  test("run frames", () => {
    expect(runStartFrame("r1", "prompt")).toEqual({ type: "run_start", run_id: "r1", trigger: "prompt" });
    expect(messageFrame("user", "hi")).toEqual({ type: "message", role: "user", text: "hi" });
    const call = { run_id: "r1", server: "fs", tool: "read", arguments_sha256: "ab".repeat(32), decision: "deny" as const };
    expect(toolCallFrame({ ...call, extra: 1 } as typeof call)).toEqual({ type: "tool_call", ...call });
    expect(toolResultFrame("r1", false)).toEqual({ type: "tool_result", run_id: "r1", is_error: false });
    expect(runEndFrame("r1", "ok")).toEqual({ type: "run_end", run_id: "r1", status: "ok" });
    expect("error" in runEndFrame("r1", "ok")).toBe(false);
    expect(runEndFrame("r1", "failed", "model timed out")).toEqual({ type: "run_end", run_id: "r1", status: "failed", error: "model timed out" });
  });

  test("mcp_event", () => {
    const event = { eventId: "evt_2", name: "ticket.updated", timestamp: "t", data: { n: 1 }, cursor: "1" };
    expect(mcpEventFrame({ ...key, delivery: "push", action: "notify", event })).toEqual({
      type: "mcp_event", ...key, delivery: "push", action: "notify", event,
    });
    expect(keys(mcpEventFrame({ ...key, delivery: "poll", action: "steer", event }))).toEqual([
      "type", "server", "name", "arguments", "delivery", "action", "event",
    ]);
  });

  test("mcp_event_status: every kind carries kind, server, name, arguments", () => {
    const status: SubscriptionStatus = {
      ...key, delivery: "webhook", action: "follow_up", state: "active", cursor: null, delivered: 0, duplicates: 0,
      refreshes: 0, last_error: null, refresh_before: null, subscription_id: "sub1", delivery_status: null,
    };
    const frames = [
      mcpEventStatusFrame(key, { kind: "subscribed", subscription: status }),
      mcpEventStatusFrame(key, { kind: "error", error: "connect refused", retry_in_ms: 1000 }),
      mcpEventStatusFrame(key, { kind: "refused", error: "unknown event", retry_in_ms: 3_600_000 }),
      mcpEventStatusFrame(key, { kind: "terminated", error: { code: -32012, message: "gone", data: { reason: "schema_changed" } } }),
      mcpEventStatusFrame(key, { kind: "gap", cursor: "5", reason: "message cap", event_id: null }),
      mcpEventStatusFrame(key, { kind: "resubscribed" }),
      mcpEventStatusFrame(key, { kind: "dropped", event: { eventId: "e", name: "ticket.updated" }, error: "3 failed injections" }),
      mcpEventStatusFrame(key, { kind: "delivery_status", delivery_status: { failing: true } }),
    ];
    expect(frames.map((f) => f.kind)).toEqual([
      "subscribed", "error", "refused", "terminated", "gap", "resubscribed", "dropped", "delivery_status",
    ]);
    for (const f of frames) expect(keys(f).slice(0, 5)).toEqual(["type", "kind", "server", "name", "arguments"]);
    expect(frames[1]).toEqual({ type: "mcp_event_status", kind: "error", ...key, error: "connect refused", retry_in_ms: 1000 });
    expect(keys(frames[4]!)).toEqual(["type", "kind", "server", "name", "arguments", "cursor", "reason", "event_id"]);
    expect(keys(frames[5]!)).toHaveLength(5);
  });

  test("PROTOCOL_VERSION is 1 and typed into get_state data", () => {
    expect(PROTOCOL_VERSION).toBe(1);
    const data: GetStateData = {
      protocol_version: PROTOCOL_VERSION, session: "main", run: { status: "idle", run_id: null }, pending: 0,
      subscriptions: { active: 0, unestablished: 0 }, seq: 0,
    };
    expect(okResponse("s", "get_state", data).data.protocol_version).toBe(1);
  });
});
