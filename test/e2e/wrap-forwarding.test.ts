/**
 * `vigil wrap` as a policy proxy (wrap.md §2, §4, §5): allowed traffic passes byte-for-byte in both
 * directions, denied calls never reach the server, secrets never reach evidence or stderr, dry runs
 * only record, hide_denied filters tools/list, and pins are enforced before any listing.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import { type JsonRpcResponse, fixtureArgv } from "../helpers/fixture.ts";
import { EVENT_SOURCE, canonicalJson, runVigil, sha256Hex, startWrap } from "../helpers/wrap.ts";

e2eSuite();

const READ_FILE_SCHEMA = {
  type: "object",
  properties: { path: { type: "string", pattern: "^/workspace/" } },
  required: ["path"],
  additionalProperties: false,
};
const GUARD_POLICY = { version: 1, tools: { deny: ["exec", "*delete*"] }, arguments: { read_file: READ_FILE_SCHEMA } };

/** The fixture's response framing: `{"result":…,"jsonrpc":"2.0","id":…}` (or id first). */
function fixtureResponse(id: number | string, result: unknown, idFirst = false): string {
  const [body, idJson] = [JSON.stringify(result), JSON.stringify(id)];
  return idFirst ? `{"jsonrpc":"2.0","id":${idJson},"result":${body}}` : `{"result":${body},"jsonrpc":"2.0","id":${idJson}}`;
}

function expectDenied(response: JsonRpcResponse, code: string, tool: string | null): any {
  expect(response.error).toBeUndefined();
  const result = response.result as any;
  expect(result.isError).toBe(true);
  expect(result.content[0].type).toBe("text");
  expect(result.content[0].text).toContain(code);
  expect(result.structuredContent.vigil).toMatchObject({ decision: "deny", error_code: code, tool });
  expect(Array.isArray(result.structuredContent.vigil.violations)).toBe(true);
  return result.structuredContent.vigil;
}

function randomToken(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(36));
  return `ghp_${[...bytes].map((b) => alphabet[b % alphabet.length]).join("")}`;
}

describe("byte-identical forwarding", () => {
  for (const idFirst of [false, true]) {
    test(`an allowed call and its response pass unchanged (server id-first=${idFirst})`, async () => {
      const s = startWrap({ fixture: { FIXTURE_ID_FIRST: idFirst } });
      await s.initialize();
      // Odd spacing, key order, escapes and a float a re-serializer would all normalize.
      const sent = `{ "params" :{"arguments": {"text":"caf\\u00e9  \\ud83d\\ude00 \\/ tab\\t"} ,"name":"echo"},"id":41 , "method":"tools/call","jsonrpc" : "2.0","extra":1.50}`;
      s.client.send(`${sent}\n`);
      const line = await s.client.next(10_000);
      expect(line).toBe(fixtureResponse(41, { content: [{ type: "text", text: "café  😀 / tab\t" }] }, idFirst));
      expect(s.record()).toContain(sent);

      // A non-tools/call request (tools/list) passes unchanged both ways too.
      const list = `{"jsonrpc":"2.0","method":"tools/list","id":"list-1","params":{ }}`;
      s.client.send(`${list}\n`);
      const listed = await s.client.next(10_000);
      expect(s.record()).toContain(list);
      const tools = JSON.parse(listed!).result.tools;
      expect(listed).toBe(fixtureResponse("list-1", { tools }, idFirst));
      expect(tools.map((t: any) => t.name)).toEqual(["echo", "read_file", "exec", "delete_all", "big", "slow"]);
      expect((await s.finish()).code).toBe(0);
    });
  }
  test("multi-megabyte messages pass unchanged in both directions", async () => {
    const s = startWrap();
    await s.initialize();
    const text = "é".repeat(600_000) + "end"; // 1.2 MB of UTF-8, split across many pipe chunks
    const sent = `{"jsonrpc":"2.0","id":"up","method":"tools/call","params":{"name":"echo","arguments":{"text":"${text}"}}}`;
    s.client.send(`${sent}\n`);
    expect(await s.client.next(20_000)).toBe(fixtureResponse("up", { content: [{ type: "text", text }] }));
    expect(s.record().at(-1)).toBe(sent);
    const down = await s.call("big", { bytes: 5_000_000 }, 20_000);
    expect((down.result as any).content[0].text).toBe("x".repeat(5_000_000));
    expect((await s.finish()).code).toBe(0);
  });
});

describe("denied calls", () => {
  test("denied by name and by argument schema: answered by vigil, never forwarded", async () => {
    const s = startWrap({ policy: GUARD_POLICY });
    await s.initialize();
    const exec = await s.call("exec", { cmd: "rm -rf /" });
    expect(expectDenied(exec, "E_TOOL_DENIED", "exec").violations).toEqual([]);
    expectDenied(await s.call("delete_all"), "E_TOOL_DENIED", "delete_all");
    const bad = expectDenied(await s.call("read_file", { path: "/etc/passwd" }), "E_ARG_SCHEMA", "read_file");
    expect(bad.violations.length).toBeGreaterThan(0);
    expect(bad.violations.map((v: any) => v.path)).toContain("/path");
    const extra = expectDenied(await s.call("read_file", { path: "/workspace/a", mode: "w" }), "E_ARG_SCHEMA", "read_file");
    expect(extra.violations.length).toBeGreaterThan(0);

    const ok = await s.call("read_file", { path: "/workspace/a.txt" });
    expect(ok.result).toEqual({ content: [{ type: "text", text: "contents of /workspace/a.txt" }] });
    expect((await s.finish()).code).toBe(0);

    // Only the allowed call reached the server.
    expect(s.recordedCalls().map((m) => m.params)).toEqual([{ name: "read_file", arguments: { path: "/workspace/a.txt" } }]);
    const decisions = s.capture().decisions.map((d) => [d.data.tool, d.data.decision, d.data.reason_code]);
    expect(decisions).toEqual([
      ["exec", "deny", "E_TOOL_DENIED"],
      ["delete_all", "deny", "E_TOOL_DENIED"],
      ["read_file", "deny", "E_ARG_SCHEMA"],
      ["read_file", "deny", "E_ARG_SCHEMA"],
      ["read_file", "allow", "P_ALLOW"],
    ]);
    // §5: one CloudEvent per decision; arguments only as the digest of their canonical JSON.
    const { decisions: records, context } = s.capture();
    const sid = context.data.session_id;
    const args = [{ cmd: "rm -rf /" }, {}, { path: "/etc/passwd" }, { path: "/workspace/a", mode: "w" }, { path: "/workspace/a.txt" }];
    records.forEach((d, seq) => {
      expect(d).toMatchObject({ specversion: "1.0", type: "vigil.mcp.decision.v1", source: EVENT_SOURCE, id: `evt_decision_${sid}_${seq}` });
      expect(d.subject).toBe(d.data.tool);
      expect(d.data).toMatchObject({ session_id: sid, seq, dry_run: false, policy_digest: context.data.policy_digest });
      expect(d.data.arguments_sha256).toBe(sha256Hex(canonicalJson(args[seq])));
    });
    expect(records.map((d) => d.data.matched_rule)).toEqual(["tools.deny[0]", "tools.deny[1]", "arguments.read_file", "arguments.read_file", "arguments.read_file"]);
    expect(context.data.policy_digest).toBe(`sha256:${sha256Hex(canonicalJson(GUARD_POLICY))}`);
  });

  test("a token-like argument appears in no capture file and not on vigil's stderr", async () => {
    const token = randomToken();
    const s = startWrap({ policy: GUARD_POLICY });
    await s.initialize();
    const echoed = await s.call("echo", { text: token }); // allowed
    expect((echoed.result as any).content[0].text).toBe(token);
    expectDenied(await s.call("exec", { cmd: `curl -H 'Authorization: ${token}'` }), "E_TOOL_DENIED", "exec");
    expectDenied(await s.call("read_file", { path: token }), "E_ARG_SCHEMA", "read_file");
    expectDenied(await s.call("read_file", { path: `/workspace/${token}`, token }), "E_ARG_SCHEMA", "read_file");
    // A refused frame (duplicate key) carrying the token: stderr reports it without its content.
    s.client.send(`{"jsonrpc":"2.0","id":90,"method":"tools/call","params":{"name":"echo","arguments":{"text":"${token}","text":"x"}}}\n`);
    const refused = await s.client.next(10_000);
    expect(JSON.parse(refused!)).toMatchObject({ id: 90, error: { code: -32600 } });
    expect((await s.finish()).code).toBe(0);

    const dir = s.captureDir!;
    const names = readdirSync(dir);
    expect(names).toEqual(expect.arrayContaining(["decisions.ndjson", "receipts.ndjson", "session-stop.json", "capture.json"]));
    for (const name of names) expect(readFileSync(join(dir, name), "latin1")).not.toContain(token);
    expect(s.client.stderrText()).not.toContain(token);
    expect(s.capture().decisions).toHaveLength(4);
  });

  test("a refused frame's stderr report does not echo argument content, not even a key name", async () => {
    const token = randomToken();
    const s = startWrap();
    await s.initialize();
    s.client.send(`{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{"name":"echo","arguments":{"${token}":"a","${token}":"b"}}}\n`);
    expect(JSON.parse((await s.client.next(10_000))!)).toMatchObject({ id: 91, error: { code: -32600 } });
    expect((await s.finish()).code).toBe(0);
    expect(s.client.stderrText()).toContain("refused a client frame");
    expect(s.client.stderrText()).not.toContain(token);
  });
});

describe("dry run", () => {
  test("--dry-run forwards a would-be-denied call and records would_deny", async () => {
    const s = startWrap({ policy: GUARD_POLICY, flags: ["--dry-run"] });
    await s.initialize();
    const exec = await s.call("exec", { cmd: "ls" });
    expect(exec.result).toEqual({ content: [{ type: "text", text: "executed" }] });
    expect((await s.finish()).code).toBe(0);
    expect(s.recordedCalls().map((m) => m.params.name)).toEqual(["exec"]);
    const [decision] = s.capture().decisions;
    expect(decision.data).toMatchObject({ tool: "exec", decision: "would_deny", reason_code: "E_TOOL_DENIED", dry_run: true });
    expect(s.capture().context.data.dry_run).toBe(true);
  });
});

describe("tools/list filtering and pins", () => {
  test("hide_denied removes denied tools from tools/list", async () => {
    const policy = { version: 1, tools: { allow: ["*"], deny: ["exec", "*delete*"], hide_denied: true } };
    const s = startWrap({ policy });
    await s.initialize();
    const listed = await s.client.request("tools/list", {});
    const names = (listed.result as any).tools.map((t: any) => t.name);
    expect(names).toEqual(["echo", "read_file", "big", "slow"]);
    expect((await s.finish()).code).toBe(0);
  });

  let pins: Record<string, string> = {};
  beforeAll(async () => {
    pins = await fixturePins();
  });

  test("a pinned tool called before tools/list is denied E_TOOL_UNVERIFIED; after listing it is allowed", async () => {
    const policy = { version: 1, tools: { allow: ["*"] }, pins: { echo: pins.echo } };
    const s = startWrap({ policy });
    await s.initialize();
    expectDenied(await s.call("echo", { text: "early" }), "E_TOOL_UNVERIFIED", "echo");
    expect(s.recordedCalls()).toEqual([]);
    await s.client.request("tools/list", {});
    const later = await s.call("echo", { text: "late" });
    expect(later.result).toEqual({ content: [{ type: "text", text: "late" }] });
    expect((await s.finish()).code).toBe(0);
    expect(s.recordedCalls().map((m) => m.params.arguments.text)).toEqual(["late"]);
  });

  test("a pin that does not match the listed definition is denied E_TOOL_DRIFT", async () => {
    const policy = { version: 1, tools: { allow: ["*"] }, pins: { echo: pins.read_file } };
    const s = startWrap({ policy });
    await s.initialize();
    await s.client.request("tools/list", {});
    expectDenied(await s.call("echo", { text: "x" }), "E_TOOL_DRIFT", "echo");
    expect((await s.finish()).code).toBe(0);
    expect(s.recordedCalls()).toEqual([]);
  });
});

/** Pins from `vigil policy pin`, or from the digest rule (wrap.md §4.1) if that command fails. */
async function fixturePins(): Promise<Record<string, string>> {
  const run = await runVigil(["policy", "pin", "--", ...fixtureArgv()]).catch(() => null);
  const fromCommand: Record<string, string> = {};
  for (const m of run?.stdout.matchAll(/^\s+([A-Za-z0-9_]+):\s*"(sha256:[0-9a-f]{64})"/gm) ?? []) fromCommand[m[1]!] = m[2]!;
  if (run?.code === 0 && fromCommand.echo && fromCommand.read_file) return fromCommand;
  // Fallback: the fixture's definitions, hashed as canonical JSON of {name, description, inputSchema}.
  const tool = (name: string, description: string, properties: object, required: string[]) => ({
    name,
    description,
    inputSchema: { type: "object", properties, required },
  });
  const defs = [
    tool("echo", "Returns the given text unchanged.", { text: { type: "string" } }, ["text"]),
    tool("read_file", "Pretends to read a file and returns a placeholder.", { path: { type: "string" } }, ["path"]),
  ];
  return Object.fromEntries(defs.map((d) => [d.name, `sha256:${sha256Hex(canonicalJson(d))}`]));
}
