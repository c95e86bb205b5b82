// The check mcp_events_subscribe makes before anything starts (issue 11 item 5): a runtime
// subscription that could never be stored is refused up front, naming the problem.
import { describe, expect, test } from "bun:test";
import { subscriptionKey } from "../../../src/events/rules/key.ts";
import { valueProblem } from "../../../src/events/rules/occurrence.ts";
import { runtimeSpecProblem } from "../../../src/events/store/snapshot.ts";
import type { SubscriptionSpec } from "../../../src/events/types.ts";

const spec = (args: Record<string, unknown>): SubscriptionSpec => ({ server: "tickets", name: "ticket.updated", arguments: args, action: "follow_up" });
const problemOf = (s: SubscriptionSpec) => runtimeSpecProblem(subscriptionKey(s.server, s.name, s.arguments), s);

describe("runtimeSpecProblem", () => {
  test("a storable spec passes, up to a key of exactly 65,536 characters", () => {
    expect(problemOf(spec({ project: "p" }))).toBeNull();
    const overhead = subscriptionKey("tickets", "ticket.updated", { p: "" }).length;
    expect(problemOf(spec({ p: "x".repeat(65_536 - overhead) }))).toBeNull();
    expect(problemOf(spec({ p: "x".repeat(65_537 - overhead) }))).toBe(
      "the subscription key (server, name and canonical arguments) is 65537 characters long; at most 65536 can be stored",
    );
  });

  test("a spec outside the snapshot's bounds is named", () => {
    expect(problemOf({ ...spec({}), server: "bad name" })).toContain("cannot be stored");
    expect(problemOf({ ...spec({}), max_age_ms: 0 })).toContain("cannot be stored");
  });
});

describe("valueProblem", () => {
  test("nesting is counted iteratively: 64 levels pass, 65 and 100,000 do not", () => {
    const nested = (n: number) => JSON.parse(`${'{"a":'.repeat(n - 1)}{}${"}".repeat(n - 1)}`);
    expect(valueProblem(nested(64), "arguments")).toBeNull();
    expect(valueProblem(nested(65), "arguments")).toBe("arguments is nested deeper than 64 levels");
    expect(valueProblem(nested(100_000), "arguments")).toBe("arguments is nested deeper than 64 levels");
  });

  test("non-finite numbers are refused wherever they are", () => {
    expect(valueProblem({ a: [1, { b: Number.POSITIVE_INFINITY }] })).toContain("NaN or ±Infinity");
    expect(valueProblem({ a: [1, { b: Number.NaN }] })).toContain("NaN or ±Infinity");
    expect(valueProblem({ a: [1e308, -0, "1e400"] })).toBeNull();
  });
});
