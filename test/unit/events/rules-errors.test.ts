import { describe, expect, test } from "bun:test";
import {
  EventsRpcError,
  classifyEventsError,
  describeRpcError,
  escapeBounded,
  toEventsRpcError,
} from "../../../src/events/rules/errors.ts";

const SKETCH = { notFound: -32011, forbidden: -32012, exhausted: -32013, unsupported: -32014, callback: -32015 };
const SEP = { notFound: -32023, forbidden: -32024, exhausted: -32025, unsupported: -32026, callback: -32027 };

describe("classifyEventsError", () => {
  for (const [label, codes] of [["sketch", SKETCH], ["SEP-3415", SEP]] as const) {
    test(`${label} numbering maps to the same classes`, () => {
      expect(classifyEventsError(codes.notFound, undefined)).toEqual({
        kind: "not_found",
        terminal: true,
        permanent: true,
        forbidden: false,
        rediscover: false,
      });
      expect(classifyEventsError(codes.forbidden, { reason: "Access revoked" })).toEqual({
        kind: "forbidden",
        terminal: true,
        permanent: false, // the caller counts consecutive refusals
        forbidden: true,
        rediscover: false,
      });
      expect(classifyEventsError(codes.exhausted, { limit: "subscriptions" })).toEqual({
        kind: "resource_exhausted",
        terminal: false,
        permanent: false,
        forbidden: false,
        rediscover: false,
      });
      expect(classifyEventsError(codes.unsupported, { feature: "deliveryMode", value: "push" })).toEqual({
        kind: "unsupported",
        terminal: true,
        permanent: true,
        forbidden: false,
        rediscover: false,
      });
      expect(classifyEventsError(codes.callback, { reason: "timeout" })).toEqual({
        kind: "callback",
        terminal: true,
        permanent: false,
        forbidden: false,
        rediscover: false,
      });
    });

    test(`${label}: a removed type or an in-place schema change asks for rediscovery, not a permanent refusal`, () => {
      const removed = classifyEventsError(codes.notFound, { kind: "event" });
      expect(removed).toMatchObject({ kind: "not_found", terminal: true, permanent: false, rediscover: true });
      const changed = classifyEventsError(codes.unsupported, { feature: "payloadSchema", reason: "schema_changed" });
      expect(changed).toMatchObject({ kind: "unsupported", terminal: true, permanent: false, rediscover: true });
      // Unknown subscription is not the event type going away.
      expect(classifyEventsError(codes.notFound, { kind: "subscription" })).toMatchObject({ permanent: true, rediscover: false });
      // The rediscovery markers only count on their own codes.
      expect(classifyEventsError(codes.forbidden, { kind: "event", reason: "schema_changed" }).rediscover).toBe(false);
    });
  }

  test("method not found and invalid params are terminal and permanent", () => {
    expect(classifyEventsError(-32601, undefined)).toEqual({
      kind: "method_not_found",
      terminal: true,
      permanent: true,
      forbidden: false,
      rediscover: false,
    });
    expect(classifyEventsError(-32602, { kind: "event" })).toEqual({
      kind: "invalid_params",
      terminal: true,
      permanent: true,
      forbidden: false,
      rediscover: false,
    });
  });

  test("everything else is transient", () => {
    for (const code of [-32603, -32000, -32001, 0, -32700, 12345, Number.NaN]) {
      expect(classifyEventsError(code, { kind: "event", reason: "schema_changed" })).toEqual({
        kind: "transient",
        terminal: false,
        permanent: false,
        forbidden: false,
        rediscover: false,
      });
    }
  });

  test("garbage data is tolerated", () => {
    for (const data of [null, "event", 7, ["event"], { kind: 1 }]) {
      expect(classifyEventsError(-32011, data)).toMatchObject({ permanent: true, rediscover: false });
    }
  });
});

describe("EventsRpcError", () => {
  test("carries code and data; toEventsRpcError keeps a JSON-RPC code and maps local failures to 0", () => {
    const e = new EventsRpcError(-32012, "Forbidden", { reason: "no" });
    expect(e).toBeInstanceOf(Error);
    expect([e.code, e.message, e.data]).toEqual([-32012, "Forbidden", { reason: "no" }]);
    expect(toEventsRpcError(e)).toBe(e);
    const sdkLike = Object.assign(new Error("MCP error -32011: gone"), { code: -32011, data: { kind: "event" } });
    expect(toEventsRpcError(sdkLike)).toMatchObject({ code: -32011, data: { kind: "event" } });
    expect(toEventsRpcError(new Error("socket hang up")).code).toBe(0);
    expect(toEventsRpcError("weird").message).toBe("weird");
  });
});

describe("describeRpcError", () => {
  test("code, name, message and the typed data worth showing", () => {
    expect(describeRpcError(-32011, "no such event", { kind: "event" })).toBe("-32011 NotFound: no such event (kind: event)");
    expect(describeRpcError(-32026, "nope", { feature: "deliveryMode", value: "push" })).toBe(
      "-32026 Unsupported: nope (feature: deliveryMode, value: push)",
    );
    expect(describeRpcError(-32012, "Forbidden", { reason: "Access revoked" })).toBe("-32012 Forbidden (reason: Access revoked)");
    expect(describeRpcError(-32603, "UpstreamError", undefined)).toBe("-32603 InternalError: UpstreamError");
    expect(describeRpcError(-32042, "odd", "not an object")).toBe("-32042: odd");
  });

  test("bounded to one line of at most 300 characters, control characters escaped", () => {
    const line = describeRpcError(-32603, `bad\nline\x1b[31m${"x".repeat(1000)}`, { reason: "a\rb" });
    expect(line.length).toBeLessThanOrEqual(300);
    expect(line).not.toMatch(/[\u0000-\u001f]/);
    expect(line).toStartWith("-32603 InternalError: bad\\x0aline\\x1b[31mxxx");
    expect(line).toEndWith("…");
  });

  test("the cut never splits an escape or a surrogate pair", () => {
    for (let pad = 0; pad < 8; pad++) {
      const cut = escapeBounded(`${"a".repeat(290 + pad)}${"\x07".repeat(20)}`, 300);
      expect(cut.length).toBeLessThanOrEqual(300);
      expect(cut).toMatch(/^a+(\\x07)*…$/);
      const emoji = escapeBounded(`${"a".repeat(290 + pad)}${"😀".repeat(20)}`, 300);
      expect(emoji.length).toBeLessThanOrEqual(300);
      expect(emoji.isWellFormed()).toBe(true);
    }
    expect(escapeBounded("short", 300)).toBe("short");
  });
});
