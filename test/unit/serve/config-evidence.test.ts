/**
 * serve's `evidence` signing options (serve.md "Evidence"): `signing_key` expands `${VAR}` and
 * resolves against the config's directory, `checkpoint_every` / `checkpoint_seconds` are bounded
 * and need a key, and the startup summary names the key by its id only, never by its path.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { parseServeConfig } from "../../../src/serve/config/load.ts";
import { describeConfig } from "../../../src/serve/config/redact.ts";
import { VigilError } from "../../../src/shared/errors.ts";

const BASE = "/etc/vigil";
const model = { provider: "command", command: ["m"] };

function parse(evidence: Record<string, unknown>, env: Record<string, string> = {}) {
  return parseServeConfig(JSON.stringify({ model, evidence }), { source: "t.json", env, baseDir: BASE });
}

function refusal(evidence: Record<string, unknown>, env: Record<string, string> = {}): string {
  try {
    parse(evidence, env);
  } catch (e) {
    if (!(e instanceof VigilError)) throw e;
    expect(e.exitCode).toBe(2);
    return e.message;
  }
  throw new Error("expected a refusal");
}

test("signing_key: ${VIGIL_SIGNING_KEY_FILE} expands; a relative path resolves against the config's directory", () => {
  const c = parse({ event_source: "vigil://h", signing_key: "${VIGIL_SIGNING_KEY_FILE}" }, { VIGIL_SIGNING_KEY_FILE: "keys/serve.key" });
  expect(c.evidence?.signing_key).toBe(join(BASE, "keys/serve.key"));
  expect(parse({ event_source: "vigil://h", signing_key: "/abs/k.key" }).evidence?.signing_key).toBe("/abs/k.key");
  expect(refusal({ event_source: "vigil://h", signing_key: "${VIGIL_SIGNING_KEY_FILE}" })).toContain("evidence.signing_key: environment variable VIGIL_SIGNING_KEY_FILE is not set");
});

test("checkpoint_every / checkpoint_seconds: optional (the defaults apply at use), bounded, and only with a key", () => {
  const c = parse({ event_source: "vigil://h", signing_key: "/k", checkpoint_every: 5, checkpoint_seconds: 0.5 });
  expect(c.evidence).toEqual({ event_source: "vigil://h", decision_log: true, signing_key: "/k", checkpoint_every: 5, checkpoint_seconds: 0.5 });
  expect(parse({ event_source: "vigil://h" }).evidence).toEqual({ event_source: "vigil://h", decision_log: true });
  expect(refusal({ event_source: "vigil://h", signing_key: "/k", checkpoint_every: 0 })).toContain("evidence.checkpoint_every: expected an integer from 1 to");
  expect(refusal({ event_source: "vigil://h", signing_key: "/k", checkpoint_every: 1.5 })).toContain("evidence.checkpoint_every: expected an integer");
  expect(refusal({ event_source: "vigil://h", signing_key: "/k", checkpoint_seconds: 0 })).toContain("evidence.checkpoint_seconds: expected a number of seconds over 0");
  expect(refusal({ event_source: "vigil://h", checkpoint_every: 5 })).toContain("evidence.checkpoint_every: needs evidence.signing_key");
  expect(refusal({ event_source: "vigil://h", checkpoint_seconds: 5 })).toContain("evidence.checkpoint_seconds: needs evidence.signing_key");
});

test("the startup summary names the key by a key-id prefix, never by its path", () => {
  const c = parse({ event_source: "vigil://h", signing_key: "/secret/place/serve.key" });
  const line = describeConfig(c, "0123456789abcdef0123456789abcdef");
  expect(line).toContain("signing_key=0123456789abcdef");
  expect(line).not.toContain("0123456789abcdef0");
  expect(line).not.toContain("/secret/place");
  expect(describeConfig(c)).not.toContain("signing_key");
});
