import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalSha256, sha256Hex } from "../../../src/shared/digest.ts";
import { VigilError } from "../../../src/shared/errors.ts";
import { MAX_POLICY_BYTES } from "../../../src/policy/document-source.ts";
import { loadPolicyFile, parsePolicy } from "../../../src/policy/load.ts";

const dir = mkdtempSync(join(tmpdir(), "vigil-policy-load-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const PIN = `sha256:${"a".repeat(64)}`;

const YAML_POLICY = `
version: 1
tools:
  allow: ["read_*", "list_directory"]
  deny: ["*delete*", exec]
  hide_denied: true
arguments:
  read_file:
    type: object
    properties: { path: { type: string, pattern: "^/workspace/" } }
    required: [path]
    additionalProperties: false
unconstrained: warn
limits:
  max_tool_calls: 1000
  rate: { calls: 60, per_seconds: 60 }
pins:
  read_file: "${PIN}"
`;

const JSON_POLICY = JSON.stringify({
  pins: { read_file: PIN },
  limits: { rate: { per_seconds: 60, calls: 60 }, max_tool_calls: 1000 },
  unconstrained: "warn",
  arguments: {
    read_file: {
      additionalProperties: false,
      required: ["path"],
      properties: { path: { pattern: "^/workspace/", type: "string" } },
      type: "object",
    },
  },
  tools: { hide_denied: true, deny: ["*delete*", "exec"], allow: ["read_*", "list_directory"] },
  version: 1,
});

/** The message of the policy_invalid error that parsing `text` throws. */
function failure(text: string, format: "yaml" | "json" = "yaml"): string {
  try {
    parsePolicy(text, format, `p.${format}`);
  } catch (e) {
    expect(e).toBeInstanceOf(VigilError);
    expect((e as VigilError).code).toBe("policy_invalid");
    expect((e as VigilError).exitCode).toBe(2);
    const message = (e as VigilError).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error("expected the policy to be refused");
}

describe("loadPolicyFile", () => {
  test("YAML and JSON spellings of one policy load to the same digest", async () => {
    const fromYaml = await loadPolicyFile(write("p.yaml", YAML_POLICY));
    const fromJson = await loadPolicyFile(write("p.json", JSON_POLICY));
    expect(fromYaml.digest).toBe(fromJson.digest);
    expect(fromYaml.digest).toBe(`sha256:${canonicalSha256(JSON.parse(JSON_POLICY))}`);
    expect(fromYaml.file_sha256).toBe(sha256Hex(YAML_POLICY));
    expect(fromJson.file_sha256).toBe(sha256Hex(JSON_POLICY));
    expect(fromYaml.file_sha256).not.toBe(fromJson.file_sha256);
    expect(fromYaml.path).toBe(join(dir, "p.yaml"));
  });

  test(".yml is YAML", async () => {
    const loaded = await loadPolicyFile(write("p.yml", YAML_POLICY));
    expect(loaded.policy.unconstrained).toBe("warn");
  });

  test("the compiled policy carries the document's rules and defaults", () => {
    const { policy } = parsePolicy(YAML_POLICY, "yaml", "p.yaml");
    expect(policy.allow?.map((p) => p.source)).toEqual(["read_*", "list_directory"]);
    expect(policy.deny.map((p) => p.source)).toEqual(["*delete*", "exec"]);
    expect(policy.hideDenied).toBe(true);
    expect([...policy.argumentValidators.keys()]).toEqual(["read_file"]);
    expect(policy.maxToolCalls).toBe(1000);
    expect(policy.rate).toEqual({ calls: 60, perSeconds: 60 });
    expect(policy.pins.get("read_file")).toBe(PIN);

    const minimal = parsePolicy("version: 1\ntools: {}\n", "yaml", "m.yaml").policy;
    expect(minimal.allow).toBeNull();
    expect(minimal.unconstrained).toBe("allow");
    expect(minimal.hideDenied).toBe(false);
    expect(minimal.rate).toBeNull();
    expect(minimal.maxToolCalls).toBeNull();
  });

  test("the digest is of the document as written, so a spelled-out default changes it", () => {
    const a = parsePolicy("version: 1\ntools: {}\n", "yaml", "a.yaml").digest;
    const b = parsePolicy("version: 1\ntools: {}\nunconstrained: allow\n", "yaml", "b.yaml").digest;
    expect(a).not.toBe(b);
  });

  test("an oversize file is refused before parsing", async () => {
    const path = write("big.yaml", `version: 1\ntools: {}\n#${"x".repeat(MAX_POLICY_BYTES)}\n`);
    await expect(loadPolicyFile(path)).rejects.toThrow(/^policy .*big\.yaml: file is \d+ bytes, larger than the 1048576-byte limit$/);
    expect(failure(`# ${"x".repeat(MAX_POLICY_BYTES)}`)).toContain("larger than the 1048576-byte limit");
  });

  test("other extensions are refused", async () => {
    const path = write("p.toml", "version = 1");
    await expect(loadPolicyFile(path)).rejects.toThrow("p.toml: unsupported file extension (expected .yaml, .yml or .json)");
  });

  test("a missing file or a directory is a clear error", async () => {
    await expect(loadPolicyFile(join(dir, "absent.yaml"))).rejects.toThrow("absent.yaml: cannot read: no such file");
    const sub = join(dir, "sub.json");
    mkdirSync(sub);
    await expect(loadPolicyFile(sub)).rejects.toThrow("sub.json: not a regular file");
  });

  test("invalid UTF-8 is refused", async () => {
    const path = write("bad.yaml", new Uint8Array([0x76, 0x3a, 0x20, 0xff, 0x0a]));
    await expect(loadPolicyFile(path)).rejects.toThrow("bad.yaml: not valid UTF-8");
  });
});

describe("parsePolicy refusals name the file, the path and what was expected", () => {
  const cases: [string, string, "yaml" | "json", string][] = [
    ["unknown key (typo)", "version: 1\ntools: {alow: [x]}\n", "yaml", "policy p.yaml: tools.alow: unknown key (expected one of: allow, deny, hide_denied)"],
    ["unknown top-level key", "version: 1\ntools: {}\nsequences: []\n", "yaml", "policy p.yaml: sequences: unknown key (expected one of: version, tools, arguments, unconstrained, limits, pins)"],
    ["unknown key in JSON", '{"version":1,"tools":{},"limits":{"rate":{"calls":1,"per_seconds":1,"burst":2}}}', "json", "policy p.json: limits.rate.burst: unknown key"],
    ["duplicate key in YAML", "version: 1\ntools:\n  deny: [a]\n  deny: [b]\n", "yaml", "policy p.yaml: tools.deny: duplicate key (line 4, column 3)"],
    ["duplicate key in JSON", '{"version":1,\n "tools":{"deny":["a"],\n  "deny":["b"]}}', "json", 'policy p.json: tools.deny: duplicate key "deny" (line 3, column 3)'],
    ["duplicate top-level key in JSON", '{"version":1,"version":1,"tools":{}}', "json", 'policy p.json: version: duplicate key "version"'],
    ["wrong version", "version: 2\ntools: {}\n", "yaml", "policy p.yaml: version: expected 1, got 2"],
    ["version as a string", '{"version":"1","tools":{}}', "json", 'policy p.json: version: expected 1, got "1"'],
    ["missing version", "tools: {}\n", "yaml", "policy p.yaml: version: required key is missing"],
    ["missing version", "tools: {}\n", "yaml", "policy p.yaml: version: required key is missing"],
    ["bad pattern type", "version: 1\ntools:\n  allow: [read_file, 7, list]\n", "yaml", "policy p.yaml: tools.allow[1]: expected a tool name pattern (a string), got 7"],
    ["empty pattern", "version: 1\ntools: {deny: ['']}\n", "yaml", 'policy p.yaml: tools.deny[0]: expected a non-empty pattern, got ""'],
    ["patterns not a list", "version: 1\ntools: {deny: exec}\n", "yaml", 'policy p.yaml: tools.deny: expected a list of tool name patterns, got "exec"'],
    ["tools as a list", "version: 1\ntools: [exec]\n", "yaml", "policy p.yaml: tools: expected a mapping, got a list"],
    ["root not a mapping", "[1]", "json", "policy p.json: expected a mapping at the top level, got a list"],
    ["empty YAML", "", "yaml", "policy p.yaml: expected a mapping at the top level, got null"],
    ["rate per_seconds as a string", "version: 1\ntools: {}\nlimits: {rate: {calls: 60, per_seconds: '60'}}\n", "yaml", 'policy p.yaml: limits.rate.per_seconds: expected a positive number, got "60"'],
    ["rate calls not an integer", "version: 1\ntools: {}\nlimits: {rate: {calls: 1.5, per_seconds: 1}}\n", "yaml", "policy p.yaml: limits.rate.calls: expected a positive integer, got 1.5"],
    ["max_tool_calls zero", "version: 1\ntools: {}\nlimits: {max_tool_calls: 0}\n", "yaml", "policy p.yaml: limits.max_tool_calls: expected a positive integer, got 0"],
    ["unconstrained typo", "version: 1\ntools: {}\nunconstrained: block\n", "yaml", 'policy p.yaml: unconstrained: expected "allow", "warn" or "deny", got "block"'],
    ["bad pin", "version: 1\ntools: {}\npins: {read_file: 'sha256:ABC'}\n", "yaml", 'policy p.yaml: pins.read_file: expected "sha256:" followed by 64 lowercase hex digits, got "sha256:ABC"'],
    ["reserved tool key", '{"version":1,"tools":{},"pins":{"__proto__":"x"}}', "json", 'policy p.json: pins.__proto__: this tool name is not supported as a policy key'],
    ["argument schema not an object", "version: 1\ntools: {}\narguments: {read_file: [path]}\n", "yaml", "policy p.yaml: arguments.read_file: expected a JSON Schema object, got a list"],
    ["schema with an unknown keyword", "version: 1\ntools: {}\narguments:\n  read_file: {type: object, propertes: {}}\n", "yaml", 'policy p.yaml: arguments.read_file: invalid JSON Schema: strict mode: unknown keyword: "propertes"'],
    ["schema with a bad regex", "version: 1\ntools: {}\narguments:\n  read_file: {type: string, pattern: '('}\n", "yaml", "policy p.yaml: arguments.read_file: invalid JSON Schema:"],
    ["schema with an unknown format", '{"version":1,"tools":{},"arguments":{"my.tool":{"type":"string","format":"nope"}}}', "json", 'policy p.json: arguments["my.tool"]: invalid JSON Schema: unknown format "nope"'],
    ["schema with a remote $ref", '{"version":1,"tools":{},"arguments":{"t":{"$ref":"https://example.com/s.json"}}}', "json", "policy p.json: arguments.t: invalid JSON Schema: can't resolve reference"],
    ["YAML alias", "version: 1\ntools:\n  allow: &names [a]\n  deny: *names\n", "yaml", "policy p.yaml: tools.allow: YAML anchors are not allowed"],
    ["YAML tag", "version: 1\ntools: {deny: [!!str 1]}\n", "yaml", "policy p.yaml: tools.deny[0]: YAML tags are not allowed"],
    ["YAML non-string key", "version: 1\ntools: {}\npins:\n  1: x\n", "yaml", "policy p.yaml: pins: keys must be strings, got 1 (quote it)"],
    ["YAML two documents", "version: 1\ntools: {}\n---\nversion: 1\n", "yaml", "policy p.yaml: a policy file holds exactly one YAML document"],
    ["YAML 1.1 directive", "%YAML 1.1\n---\nversion: 1\ntools: {}\n", "yaml", "policy p.yaml: %YAML directives are not allowed"],
    ["YAML .inf", "version: 1\ntools: {}\nlimits: {rate: {calls: 1, per_seconds: .inf}}\n", "yaml", "policy p.yaml: limits.rate.per_seconds: numbers must be finite"],
    ["JSON 1e400", '{"version":1,"tools":{},"limits":{"max_tool_calls":1e400}}', "json", "policy p.json: limits.max_tool_calls: number 1e400 is not finite"],
    ["YAML key without a value", "version: 1\n? tools\n", "yaml", "policy p.yaml: tools: expected a mapping, got null"],
    ["YAML empty value", "version: 1\ntools:\n", "yaml", "policy p.yaml: tools: expected a mapping, got null"],
    ["YAML syntax error", "version: 1\ntools: {deny: [x\n", "yaml", "(line 3, column 1)"],
    ["JSON syntax error", '{"version":1,\n"tools":{}', "json", "policy p.json: expected ',' or '}' (line 2, column 11)"],
    ["deeply nested YAML", `version: 1\ntools: {}\narguments: {t: ${"[".repeat(100)}${"]".repeat(100)}}\n`, "yaml", "nesting deeper than 64 levels"],
    ["deeply nested JSON", `{"version":1,"tools":{},"x":${"[".repeat(100)}${"]".repeat(100)}}`, "json", "nesting deeper than 64 levels"],
  ];
  for (const [name, text, format, fragment] of cases) {
    test(name, () => {
      expect(failure(text, format)).toContain(fragment);
    });
  }

  test("only the first problem is described, with a count of the rest", () => {
    expect(failure("version: 2\ntools: {alow: 1, deny: 2}\n")).toBe(
      "policy p.yaml: version: expected 1, got 2 (and 2 more problems)",
    );
  });
});

test("a policy without a tools section governs arguments only (no name rules)", () => {
  const { policy } = parsePolicy("version: 1\nunconstrained: deny\narguments:\n  echo: {type: object}\n", "yaml", "p.yaml");
  expect(policy.allow).toBeNull();
  expect(policy.deny).toEqual([]);
  expect(policy.hideDenied).toBe(false);
});
