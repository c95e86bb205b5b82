import { describe, expect, test } from "bun:test";
import { allowDecision, denyDecision, evidenceUnavailableDecision, noPolicyDecision } from "../../../src/policy/decision.ts";
import { type CallFate, type EvidenceState, governCall } from "../../../src/policy/governed-call.ts";

const allow = allowDecision("P_ALLOW", "allowed by policy", "tools.allow[0]");
const denied = denyDecision("E_TOOL_DENIED", "tool is on the deny list", "tools.deny[1]");
const unavailable = evidenceUnavailableDecision();

const healthy: EvidenceState = { down: false, onFailure: "deny" };
const downClosed: EvidenceState = { down: true, onFailure: "deny" };
const downContinue: EvidenceState = { down: true, onFailure: "continue" };
const healthyContinue: EvidenceState = { down: false, onFailure: "continue" };

const forward = (decision = allow): CallFate => ({ action: "forward", consumesLimits: true, decision });
const deny = (decision = denied): CallFate => ({ action: "deny", consumesLimits: false, decision });
const refusal = deny(unavailable);

describe("governCall", () => {
  test("allow: recorded as allow, forwarded, limits consumed", () => {
    expect(governCall({ decision: allow, evidence: healthy, dryRun: false })).toEqual({
      record: { decision: "allow", reason_code: "P_ALLOW", reason: "allowed by policy", matched_rule: "tools.allow[0]" },
      ifRecorded: forward(),
      ifNotRecorded: refusal,
    });
  });

  test("deny: recorded as deny, answered with the policy's decision, limits untouched", () => {
    expect(governCall({ decision: denied, evidence: healthy, dryRun: false })).toEqual({
      record: { decision: "deny", reason_code: "E_TOOL_DENIED", reason: "tool is on the deny list", matched_rule: "tools.deny[1]" },
      ifRecorded: deny(),
      ifNotRecorded: refusal,
    });
  });

  test("dry run: a deny is recorded as would_deny and forwarded (and consumes limits)", () => {
    const call = governCall({ decision: denied, evidence: healthy, dryRun: true });
    expect(call.record).toEqual({ decision: "would_deny", reason_code: "E_TOOL_DENIED", reason: "tool is on the deny list", matched_rule: "tools.deny[1]" });
    expect(call.ifRecorded).toEqual(forward(denied));
    expect(call.ifNotRecorded).toEqual(refusal);
  });

  test("dry run leaves an allow an allow", () => {
    const call = governCall({ decision: allow, evidence: healthy, dryRun: true });
    expect(call.record.decision).toBe("allow");
    expect(call.ifRecorded).toEqual(forward());
  });

  test("evidence down, fail closed: E_EVIDENCE_UNAVAILABLE whatever the policy said, dry run included", () => {
    for (const decision of [allow, denied]) {
      for (const dryRun of [false, true]) {
        expect(governCall({ decision, evidence: downClosed, dryRun })).toEqual({
          record: { decision: "deny", reason_code: "E_EVIDENCE_UNAVAILABLE", reason: unavailable.reason, matched_rule: null },
          ifRecorded: refusal,
          ifNotRecorded: refusal,
        });
      }
    }
  });

  test("evidence down, continue: the policy decides, a lost record changes nothing", () => {
    expect(governCall({ decision: allow, evidence: downContinue, dryRun: false })).toEqual({
      record: { decision: "allow", reason_code: "P_ALLOW", reason: "allowed by policy", matched_rule: "tools.allow[0]" },
      ifRecorded: forward(),
      ifNotRecorded: forward(),
    });
    const deniedCall = governCall({ decision: denied, evidence: downContinue, dryRun: false });
    expect(deniedCall.ifRecorded).toEqual(deny());
    expect(deniedCall.ifNotRecorded).toEqual(deny());
    const dry = governCall({ decision: denied, evidence: downContinue, dryRun: true });
    expect(dry.record.decision).toBe("would_deny");
    expect(dry.ifNotRecorded).toEqual(forward(denied));
  });

  test("a record that cannot be written: fail closed refuses this very call, continue lets it proceed", () => {
    expect(governCall({ decision: allow, evidence: healthy, dryRun: false }).ifNotRecorded).toEqual(refusal);
    expect(governCall({ decision: allow, evidence: healthyContinue, dryRun: false }).ifNotRecorded).toEqual(forward());
  });

  test("limits are consumed exactly when the call is forwarded", () => {
    const inputs = [allow, denied].flatMap((decision) =>
      [healthy, healthyContinue, downClosed, downContinue].flatMap((evidence) =>
        [false, true].map((dryRun) => ({ decision, evidence, dryRun })),
      ),
    );
    for (const input of inputs) {
      const call = governCall(input);
      for (const fate of [call.ifRecorded, call.ifNotRecorded]) {
        expect(fate.consumesLimits).toBe(fate.action === "forward");
      }
    }
  });

  test("no_policy: an allow recorded with its own reason code", () => {
    const decision = noPolicyDecision("no policy: observe only (--allow-all)");
    const call = governCall({ decision, evidence: healthy, dryRun: false });
    expect(call.record).toEqual({ decision: "allow", reason_code: "no_policy", reason: "no policy: observe only (--allow-all)", matched_rule: null });
    expect(call.ifRecorded).toEqual(forward(decision));
    expect(call.ifNotRecorded).toEqual(refusal);
  });

  test("an E_INVALID_CALL deny is recorded and answered like any deny", () => {
    const invalid = denyDecision("E_INVALID_CALL", "tools/call params.name is missing or not a string", null);
    const call = governCall({ decision: invalid, evidence: healthy, dryRun: false });
    expect(call.record.reason_code).toBe("E_INVALID_CALL");
    expect(call.ifRecorded).toEqual(deny(invalid));
  });
});
