import { describe, expect, test } from "bun:test";
import { evaluateToolCall } from "../../../src/policy/evaluate.ts";
import { parsePolicy } from "../../../src/policy/load.ts";
import { createPolicySession, hasToken, recordForwardedCall, tokensAt, type PolicySession } from "../../../src/policy/session.ts";

const policyFrom = (yaml: string) => parsePolicy(yaml, "yaml", "test.yaml").policy;
const call = { name: "read_file" };

describe("rate limit token bucket (explicit times)", () => {
  // 3 calls per 3 seconds: a burst of 3, then one token per second.
  const policy = policyFrom("version: 1\ntools: {deny: [exec]}\nlimits: {rate: {calls: 3, per_seconds: 3}}\n");

  test("starts full, allows a burst of `calls`, then denies until a token refills", () => {
    let s: PolicySession = createPolicySession(policy);
    for (let i = 0; i < 3; i++) {
      expect(evaluateToolCall(policy, s, call, 1000).decision).toBe("allow");
      s = recordForwardedCall(s, 1000);
    }
    expect(evaluateToolCall(policy, s, call, 1000)).toEqual({
      decision: "deny",
      reason_code: "E_RATE_LIMIT",
      reason: "the rate limit of 3 calls per 3 seconds is exceeded",
      matched_rule: "limits.rate",
      violations: [],
    });
    expect(evaluateToolCall(policy, s, call, 1999).reason_code).toBe("E_RATE_LIMIT");
    expect(evaluateToolCall(policy, s, call, 2000).reason_code).toBe("P_ALLOW");
    s = recordForwardedCall(s, 2000);
    expect(evaluateToolCall(policy, s, call, 2500).reason_code).toBe("E_RATE_LIMIT");
    expect(evaluateToolCall(policy, s, call, 3000).reason_code).toBe("P_ALLOW");
  });

  test("refills up to capacity only", () => {
    let s = createPolicySession(policy);
    s = recordForwardedCall(s, 0);
    expect(tokensAt(s.bucket!, 0)).toBe(2);
    expect(tokensAt(s.bucket!, 1_000_000)).toBe(3);
    for (let i = 0; i < 3; i++) s = recordForwardedCall(s, 1_000_000);
    expect(hasToken(s.bucket!, 1_000_000)).toBe(false);
  });

  test("is checked before the deny list", () => {
    let s = createPolicySession(policy);
    for (let i = 0; i < 3; i++) s = recordForwardedCall(s, 0);
    expect(evaluateToolCall(policy, s, { name: "exec" }, 0).reason_code).toBe("E_RATE_LIMIT");
  });

  test("denied calls do not consume tokens", () => {
    const s = createPolicySession(policy);
    for (let i = 0; i < 10; i++) expect(evaluateToolCall(policy, s, { name: "exec" }, 0).reason_code).toBe("E_TOOL_DENIED");
    expect(tokensAt(s.bucket!, 0)).toBe(3);
  });

  test("a clock that goes backwards adds no tokens and never drives the bucket below zero", () => {
    let s = createPolicySession(policy);
    for (let i = 0; i < 3; i++) s = recordForwardedCall(s, 5000);
    expect(hasToken(s.bucket!, 1000)).toBe(false);
    s = recordForwardedCall(s, 1000); // e.g. a dry-run would_deny call that was forwarded anyway
    expect(s.bucket!.tokens).toBe(0);
    expect(s.bucket!.updatedMs).toBe(5000);
    expect(hasToken(s.bucket!, 6000)).toBe(true);
  });

  test("fractional rates: 2 calls per 0.5 s refills one token every 250 ms", () => {
    const fast = policyFrom("version: 1\ntools: {}\nlimits: {rate: {calls: 2, per_seconds: 0.5}}\n");
    let s = createPolicySession(fast);
    s = recordForwardedCall(recordForwardedCall(s, 0), 0);
    expect(evaluateToolCall(fast, s, call, 249).reason_code).toBe("E_RATE_LIMIT");
    expect(evaluateToolCall(fast, s, call, 250).reason_code).toBe("P_ALLOW");
  });

  test("60 calls per 60 s: a token per second, exactly at the boundary", () => {
    const p = policyFrom("version: 1\ntools: {}\nlimits: {rate: {calls: 60, per_seconds: 60}}\n");
    let s = createPolicySession(p);
    for (let i = 0; i < 60; i++) s = recordForwardedCall(s, 10);
    expect(evaluateToolCall(p, s, call, 1009).reason_code).toBe("E_RATE_LIMIT");
    expect(evaluateToolCall(p, s, call, 1010).reason_code).toBe("P_ALLOW");
  });

  test("without a rate limit there is no bucket, and calls are still counted", () => {
    const p = policyFrom("version: 1\ntools: {}\n");
    const s = recordForwardedCall(createPolicySession(p), 0);
    expect(s.bucket).toBeNull();
    expect(s.toolCalls).toBe(1);
  });
});
