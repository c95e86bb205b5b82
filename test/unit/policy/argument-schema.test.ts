import { describe, expect, test } from "bun:test";
import { argumentViolations, createArgumentSchemaCompiler, MAX_VIOLATIONS } from "../../../src/policy/argument-schema.ts";
import { denyReplyResult } from "../../../src/policy/deny-reply.ts";
import { evaluateToolCall } from "../../../src/policy/evaluate.ts";
import { parsePolicy } from "../../../src/policy/load.ts";
import { createPolicySession } from "../../../src/policy/session.ts";

const SECRET = "ghp_SECRETTOKEN123";

function compile(schema: Record<string, unknown>) {
  const result = createArgumentSchemaCompiler()(schema);
  if (!result.ok) throw new Error(result.message);
  return result.validate;
}

describe("argument violations never carry argument values", () => {
  const policy = parsePolicy(
    JSON.stringify({
      version: 1,
      tools: {},
      arguments: {
        call_api: {
          type: "object",
          properties: {
            url: { type: "string", format: "uri", pattern: "^https://api\\.example\\.com/" },
            token: { type: "string", maxLength: 4 },
            mode: { enum: ["read", "write"] },
            kind: { const: "fixed" },
            count: { type: "integer", maximum: 3 },
            tags: { type: "array", items: { type: "string", minLength: 30 }, uniqueItems: true },
            nested: { type: "object", properties: { deep: { type: "number" } } },
          },
          propertyNames: { maxLength: 10 },
          additionalProperties: false,
          required: ["url"],
        },
      },
    }),
    "json",
    "p.json",
  ).policy;

  const args = {
    url: SECRET,
    token: SECRET,
    mode: SECRET,
    kind: SECRET,
    count: SECRET,
    tags: [SECRET, SECRET],
    nested: { deep: SECRET },
    [`x${SECRET}`]: SECRET,
  };

  test("no message, reason or reply text contains the secret", () => {
    const decision = evaluateToolCall(policy, createPolicySession(policy), { name: "call_api", arguments: args }, 0);
    expect(decision.reason_code).toBe("E_ARG_SCHEMA");
    expect(decision.violations.length).toBeGreaterThan(5);
    for (const v of decision.violations) expect(v.message).not.toContain(SECRET);
    expect(decision.reason).not.toContain(SECRET);
    expect(JSON.stringify(denyReplyResult(decision, "call_api"))).not.toContain(SECRET.slice(4));
    expect(JSON.stringify(decision)).not.toContain(SECRET.slice(4));
  });

  test("messages quote the schema side (the policy's pattern), paths are JSON pointers", () => {
    const decision = evaluateToolCall(policy, createPolicySession(policy), { name: "call_api", arguments: args }, 0);
    expect(decision.violations).toContainEqual({ path: "/url", message: 'must match pattern "^https://api\\.example\\.com/"' });
    expect(decision.violations).toContainEqual({ path: "/url", message: 'must match format "uri"' });
    expect(decision.violations).toContainEqual({ path: "/kind", message: "must be equal to constant" });
    expect(decision.violations).toContainEqual({ path: "/tags/0", message: "must NOT have fewer than 30 characters" });
    expect(decision.violations).toContainEqual({ path: "/nested/deep", message: "must be number" });
    expect(decision.violations).toContainEqual({ path: "", message: "must NOT have additional properties" });
  });
});

describe("argumentViolations", () => {
  test("identical violations are reported once and the list is bounded", () => {
    const validate = compile({ type: "array", items: { type: "string" } });
    const violations = argumentViolations(validate, Array.from({ length: 500 }, (_, i) => i));
    expect(violations.length).toBe(MAX_VIOLATIONS);
    expect(violations[0]).toEqual({ path: "/0", message: "must be string" });
    const dup = compile({ type: "object", additionalProperties: false });
    expect(argumentViolations(dup, { a: 1, b: 2, c: 3 })).toEqual([{ path: "", message: "must NOT have additional properties" }]);
  });

  test("validation never modifies the arguments (no defaults, no coercion)", () => {
    const validate = compile({ type: "object", properties: { n: { type: "number", default: 5 } } });
    const args = { m: "1" };
    expect(argumentViolations(validate, args)).toEqual([]);
    expect(args).toEqual({ m: "1" });
  });

  test("tools are compiled in isolation: a shared $id does not clash, a cross-tool $ref does not resolve", () => {
    const policy = parsePolicy(
      JSON.stringify({
        version: 1,
        tools: {},
        arguments: {
          a: { $id: "https://vigil.test/args", type: "object" },
          b: { $id: "https://vigil.test/args", type: "object", required: [], properties: {} },
        },
      }),
      "json",
      "p.json",
    ).policy;
    expect(policy.argumentValidators.size).toBe(2);
    expect(() =>
      parsePolicy(
        JSON.stringify({
          version: 1,
          tools: {},
          arguments: { a: { $id: "https://vigil.test/a", type: "object" }, b: { $ref: "https://vigil.test/a" } },
        }),
        "json",
        "p.json",
      ),
    ).toThrow("policy p.json: arguments.b: invalid JSON Schema: can't resolve reference https://vigil.test/a");
  });

  test("union types are allowed in strict mode", () => {
    const validate = compile({ type: ["string", "null"] });
    expect(argumentViolations(validate, null)).toEqual([]);
    expect(argumentViolations(validate, 1)).toEqual([{ path: "", message: "must be string,null" }]);
  });
});
