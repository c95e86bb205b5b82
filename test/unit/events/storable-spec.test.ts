// One check decides whether a subscription can be stored, for runtime subscribes and configured
// subscriptions alike (src/events/storable-spec.ts; issue 11): a configured one that could never be
// stored is a config error naming its path, not a failure at its first snapshot write.
import { describe, expect, test } from "bun:test";
import { checkSubscriptionSpec } from "../../../src/events/storable-spec.ts";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { parseServeConfig } from "../../../src/serve/config/load.ts";

const spec = (args: Record<string, unknown>) => ({ server: "tickets", name: "ticket.updated", arguments: args, action: "follow_up" as const });

describe("checkSubscriptionSpec", () => {
  test("a storable spec gives its key", () => {
    expect(checkSubscriptionSpec(spec({ p: 1 }))).toEqual({ ok: true, key: subscriptionKey("tickets", "ticket.updated", { p: 1 }) });
  });

  test("too long a key, too deep arguments, a spec outside the record's bounds: the problem, never the value", () => {
    const long = checkSubscriptionSpec(spec({ p: "x".repeat(70_000) }));
    expect(long).toEqual({ ok: false, problem: expect.stringContaining("at most 65536 can be stored") });
    const deep = JSON.parse(`${'{"a":'.repeat(60_000)}1${"}".repeat(60_000)}`);
    expect(checkSubscriptionSpec(spec(deep))).toEqual({ ok: false, problem: "arguments is nested deeper than 64 levels" });
    expect(checkSubscriptionSpec({ ...spec({}), max_age_ms: 0 })).toEqual({ ok: false, problem: expect.stringContaining("cannot be stored") });
  });
});

describe("configured subscriptions at config load", () => {
  const config = (events: unknown[]) =>
    JSON.stringify({
      model: { provider: "openai", base_url: "http://127.0.0.1:1/v1", model: "m" },
      mcp_servers: [{ name: "tickets", transport: "http", url: "http://127.0.0.1:1/mcp", events }],
    });
  const parse = (events: unknown[]) => parseServeConfig(config(events), { source: "vigil.json", env: { OPENAI_API_KEY: "k" } });

  test("a key over 65,536 characters is config_invalid, naming the entry", () => {
    let error: unknown;
    try {
      parse([{ name: "ok" }, { name: "ticket.updated", arguments: { p: "x".repeat(70_000) } }]);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "config_invalid" });
    const message = (error as Error).message;
    expect(message).toBe(
      "config vigil.json: mcp_servers[0].events[1].arguments: the subscription key (server, name and canonical arguments) is 70031 characters long; at most 65536 can be stored",
    );
    expect(message).not.toContain("xxxx");
  });

  test("a key of exactly 65,536 characters is accepted", () => {
    const overhead = subscriptionKey("tickets", "ticket.updated", { p: "" }).length;
    expect(() => parse([{ name: "ticket.updated", arguments: { p: "x".repeat(65_536 - overhead) } }])).not.toThrow();
  });
});
