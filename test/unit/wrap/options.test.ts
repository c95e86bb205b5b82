import { expect, test } from "bun:test";
import { VigilError } from "../../../src/shared/errors.ts";
import { parseWrapArgs } from "../../../src/wrap/options.ts";

const parse = (s: string) => parseWrapArgs(s.split(" ").filter(Boolean));
const refusal = (s: string) => {
  try {
    parse(s);
  } catch (e) {
    expect(e).toBeInstanceOf(VigilError);
    expect((e as VigilError).exitCode).toBe(2);
    return (e as VigilError).message;
  }
  throw new Error(`accepted: ${s}`);
};

test("defaults and the server command after --", () => {
  const o = parse("--allow-all -- npx -y server --port 3");
  expect(o.command).toEqual(["npx", "-y", "server", "--port", "3"]);
  expect(o.serverId).toBe("npx");
  expect(o.maxMessageBytes).toBe(33554432);
  expect(o.shutdownGraceMs).toBe(3000);
  expect(o.onEvidenceFailure).toBe("deny");
});

test("--flag=value and --flag value both work", () => {
  const o = parse("--policy=p.yaml --server-id fs --event-source vigil://h/a --capture-dir /tmp/x -- srv");
  expect([o.policyPath, o.serverId, o.eventSource, o.captureDir]).toEqual(["p.yaml", "fs", "vigil://h/a", "/tmp/x"]);
});

test.each([
  ["-- srv", "a policy is required"],
  ["--policy p.yaml --allow-all -- srv", "exclude each other"],
  ["--allow-all srv", "missing '--'"],
  ["--allow-all --", "no server command"],
  ["--allow-all --bogus -- srv", "unknown flag --bogus"],
  ["--allow-all --decision-log d.ndjson -- srv", "--event-source URI is required"],
  ["--allow-all --capture-dir c -- srv", "--event-source URI is required"],
  ["--allow-all --event-source nope --capture-dir c -- srv", "scheme://"],
  ["--allow-all --event-source vigil://a/b --decision-log d --session-stop-out s -- srv", "requires --decision-log-new"],
  ["--allow-all --event-source vigil://a/b --capture-dir c --receipts-out r -- srv", "cannot be combined"],
  ["--allow-all --decision-log-new -- srv", "needs --decision-log"],
  ["--allow-all --max-message-bytes 12x -- srv", "--max-message-bytes must be an integer"],
  ["--allow-all --shutdown-grace-ms -1 -- srv", "--shutdown-grace-ms"],
  ["--allow-all --on-evidence-failure ignore -- srv", "deny or continue"],
  ["--allow-all --policy -- srv", "--policy needs a value"],
  ["--allow-all --dry-run -- srv", "needs a --policy"],
  ["--allow-all --server-id a --server-id b -- srv", "given twice"],
])("%p is refused (%p)", (args, fragment) => {
  expect(refusal(args)).toContain(fragment);
});

test("signing: --signing-key needs --capture-dir; checkpoint flags need a key and sane values", () => {
  const cap = "--allow-all --event-source vigil://a/b --capture-dir c";
  const o = parse(`${cap} --signing-key k.key -- srv`);
  expect([o.signingKey, o.checkpointEvery, o.checkpointSeconds]).toEqual(["k.key", 1000, 60]);
  const tuned = parse(`${cap} --signing-key k.key --checkpoint-every 1 --checkpoint-seconds 0.5 -- srv`);
  expect([tuned.checkpointEvery, tuned.checkpointSeconds]).toEqual([1, 0.5]);
  expect(parse("--allow-all -- srv").signingKey).toBeNull();
  for (const [args, fragment] of [
    ["--allow-all --signing-key k.key -- srv", "--signing-key needs --capture-dir"],
    ["--allow-all --event-source vigil://a/b --decision-log d --signing-key k.key -- srv", "--signing-key needs --capture-dir"],
    [`${cap} --checkpoint-every 5 -- srv`, "--checkpoint-every needs --signing-key"],
    [`${cap} --checkpoint-seconds 5 -- srv`, "--checkpoint-seconds needs --signing-key"],
    [`${cap} --signing-key k --checkpoint-every 0 -- srv`, "--checkpoint-every must be an integer from 1"],
    [`${cap} --signing-key k --checkpoint-every 1.5 -- srv`, "--checkpoint-every must be an integer from 1"],
    [`${cap} --signing-key k --checkpoint-seconds 0 -- srv`, "--checkpoint-seconds must be a number of seconds above 0"],
    [`${cap} --signing-key k --checkpoint-seconds -1 -- srv`, "--checkpoint-seconds must be"],
    [`${cap} --signing-key k --checkpoint-seconds 1e3 -- srv`, "--checkpoint-seconds must be"],
    [`${cap} --signing-key k --checkpoint-seconds 86401 -- srv`, "--checkpoint-seconds must be"],
  ] as const) {
    expect(refusal(args)).toContain(fragment);
  }
});

