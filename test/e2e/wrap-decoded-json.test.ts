/**
 * `vigil wrap` takes every decision about a message on decoded JSON, as the client's parser reads
 * it (issue 11 item 1): keys and values written with escapes (`"\u0069d"`, `"n\u0061me"`,
 * `"tools\/call"`) are the same keys and values, in both directions and for over-cap messages; a
 * server line with a duplicated key is refused as a client line with one is. A server that escapes
 * the id of its tools/list response must still be pin-checked and filtered by hide_denied, the
 * client must get exactly one response, and the receipt must record it.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { e2eSuite } from "../helpers/e2e.ts";
import type { JsonRpcResponse } from "../helpers/fixture.ts";
import { REPO_ROOT, type WrapSession, canonicalJson, sha256Hex, startWrap } from "../helpers/wrap.ts";
import { HONEST_ECHO } from "../fixtures/servers/escaping-server.ts";

e2eSuite();

const ESCAPING_SERVER = join(REPO_ROOT, "test/fixtures/servers/escaping-server.ts");
const HIDE_EXEC = { version: 1, tools: { allow: ["*"], deny: ["exec"], hide_denied: true } };
const ECHO_PIN = `sha256:${sha256Hex(canonicalJson(HONEST_ECHO))}`;

function escapingServer(switches: Record<string, string>): string[] {
  return ["/usr/bin/env", ...Object.entries(switches).map(([k, v]) => `${k}=${v}`), process.execPath, ESCAPING_SERVER];
}

/** Ends the session and returns every stdout line that came after the ones already read. */
async function finishAndDrain(s: WrapSession): Promise<any[]> {
  s.client.closeStdin();
  const rest: any[] = [];
  for (let line = await s.client.next(15_000); line !== null; line = await s.client.next(15_000)) rest.push(JSON.parse(line));
  await s.client.exited(15_000);
  return rest;
}

/** The one response to `id` reached the client, and its receipt says what it was. */
async function expectSingleAnswer(s: WrapSession, id: number, outcome: "response" | "error"): Promise<void> {
  const rest = await finishAndDrain(s);
  expect(rest.filter((m) => m.id === id)).toEqual([]);
  expect(s.client.unmatched.map((l) => JSON.parse(l)).filter((m) => m.id === id)).toEqual([]);
  const receipts = s.capture().receipts.filter((r) => r.data.request_id === id);
  expect(receipts.map((r) => r.data.outcome)).toEqual([outcome]);
}

function expectDenied(response: JsonRpcResponse, code: string): void {
  const result = response.result as any;
  expect(result?.isError).toBe(true);
  expect(result.structuredContent.vigil).toMatchObject({ decision: "deny", error_code: code });
}

function toolNames(response: JsonRpcResponse): string[] {
  return ((response.result as any)?.tools ?? []).map((t: any) => t.name);
}

describe("server → client: the tools/list response is read as the client reads it", () => {
  // "plain" is the control run: the same rug pull, written without escapes.
  for (const framing of ["plain", "escaped-id", "escaped-keys", "large-escaped-id"]) {
    test(`a rug-pulled definition is caught by the pin (${framing})`, async () => {
      const policy = { version: 1, tools: { allow: ["*"] }, pins: { echo: ECHO_PIN } };
      const s = startWrap({ policy, command: escapingServer({ LIST_FRAMING: framing, RUG_PULL: "1" }) });
      await s.initialize();
      await s.request("tools/list", {});
      expect((await s.call("echo", { text: "before" })).result).toEqual({ content: [{ type: "text", text: "before" }] });
      const pulled = await s.request("tools/list", {}, 15_000);
      expect((pulled.result as any).tools[0].description).toContain("id_rsa");
      expectDenied(await s.call("echo", { text: "after" }), "E_TOOL_DRIFT");
      await expectSingleAnswer(s, pulled.id as number, "response");
    });
  }

  for (const framing of ["escaped-id", "escaped-keys", "large-escaped-id"]) {
    test(`hide_denied filters the listing (${framing})`, async () => {
      const s = startWrap({ policy: HIDE_EXEC, command: escapingServer({ LIST_FRAMING: framing }) });
      await s.initialize();
      const listed = await s.request("tools/list", {}, 15_000);
      expect(toolNames(listed)).toEqual(["echo"]);
      await expectSingleAnswer(s, listed.id as number, "response");
    });
  }

  test("a listing with a duplicated key is refused: the client gets one error, not a list a first-wins parser reads otherwise", async () => {
    const s = startWrap({ policy: HIDE_EXEC, command: escapingServer({ LIST_FRAMING: "duplicate-name" }) });
    await s.initialize();
    const listed = await s.request("tools/list", {});
    expect(listed.result).toBeUndefined();
    expect(listed.error?.message).toContain("refused");
    await expectSingleAnswer(s, listed.id as number, "error");
    expect(s.client.stderrText()).toContain("a key appears twice in one object");
  });

  test("a server request whose method key is escaped reaches the client", async () => {
    const s = startWrap({ command: escapingServer({}) });
    await s.initialize();
    const answer = await s.call("ask_client", {});
    expect(answer.result).toEqual({ content: [{ type: "text", text: "done" }] });
    expect(s.client.unmatched.map((l) => JSON.parse(l))).toContainEqual({ jsonrpc: "2.0", id: "srv-ping-1", method: "ping" });
    await expectSingleAnswer(s, answer.id as number, "response");
  });

  test("an over-cap response whose id is escaped answers its request with an error", async () => {
    const s = startWrap({ flags: ["--allow-all", "--max-message-bytes", "4096"], command: escapingServer({ CALL_FRAMING: "escaped-id-last" }) });
    await s.initialize();
    const answer = await s.call("big", { bytes: 20_000 }, 5_000);
    expect(answer.error?.message).toContain("response larger than 4096 bytes");
    await expectSingleAnswer(s, answer.id as number, "error");
  });
});

describe("client → server: escaped keys and values are governed like plain ones", () => {
  const DENY_EXEC = { version: 1, tools: { allow: ["*"], deny: ["exec"] } };
  const calls = [
    ['{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"n\\u0061me":"exec","arguments":{"cmd":"x"}}}', "escaped name key"],
    ['{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"\\u0065xec","arguments":{"cmd":"x"}}}', "escaped name value"],
    ['{"jsonrpc":"2.0","id":101,"met\\u0068od":"tools/call","params":{"name":"exec","arguments":{"cmd":"x"}}}', "escaped method key"],
    ['{"jsonrpc":"2.0","id":101,"method":"tools\\/call","params":{"name":"exec","arguments":{"cmd":"x"}}}', "method value tools\\/call"],
    ['{"jsonrpc":"2.0","\\u0069d":101,"method":"tools/c\\u0061ll","params":{"name":"exec","arguments":{"cmd":"x"}}}', "escaped id key, method value tools/c\\u0061ll"],
  ] as const;
  for (const [line, what] of calls) {
    test(`a denied tool is denied (${what})`, async () => {
      const s = startWrap({ policy: DENY_EXEC });
      await s.initialize();
      s.client.send(`${line}\n`);
      const response = JSON.parse((await s.client.next(10_000))!);
      expect(response.id).toBe(101);
      expectDenied(response, "E_TOOL_DENIED");
      expect((await s.finish()).code).toBe(0);
      expect(s.recordedCalls()).toEqual([]);
      expect(s.capture().decisions.map((d) => [d.data.tool, d.data.decision])).toEqual([["exec", "deny"]]);
    });
  }

  test("an over-cap call whose id is escaped and last is answered with an error", async () => {
    const s = startWrap({ flags: ["--allow-all", "--max-message-bytes", "4096"] });
    await s.initialize();
    s.client.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"${"x".repeat(20_000)}"}},"\\u0069d":77}\n`);
    const response = JSON.parse((await s.client.next(5_000))!);
    expect(response).toMatchObject({ id: 77, error: { code: -32600 } });
    expect(response.error.message).toContain("larger than 4096 bytes");
    expect((await s.finish()).code).toBe(0);
    expect(s.recordedCalls()).toEqual([]);
  });
});
