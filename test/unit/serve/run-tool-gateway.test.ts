import { describe, expect, test } from "bun:test";
import { parsePolicy } from "../../../src/policy/load.ts";
import { createToolGateway, resultText } from "../../../src/serve/run/tool-gateway.ts";
import type { McpServerPool, PoolTool } from "../../../src/mcp/server-pool.ts";
import { toolsTokens } from "../../../src/serve/context/estimate.ts";
import { setQuiet } from "../../../src/shared/log.ts";

const TOOLS: PoolTool[] = [
  { qualifiedName: "fx__echo", server: "fx", tool: "echo", description: "Echo", inputSchema: { type: "object" } },
  { qualifiedName: "fx__exec", server: "fx", tool: "exec", description: "", inputSchema: { type: "object" } },
];

function fakePool() {
  const calls: string[] = [];
  const pool: Pick<McpServerPool, "listTools" | "callTool" | "unavailable"> = {
    listTools: async () => TOOLS,
    unavailable: () => null,
    callTool: async (name) => {
      calls.push(name);
      return { content: [{ type: "text", text: "ran" }] };
    },
  };
  return { pool, calls };
}
const never = new AbortController().signal;

describe("tool gateway", () => {
  test("specs: qualified names, inputSchema as parameters, hide_denied honoured", async () => {
    const { pool } = fakePool();
    expect(await createToolGateway({ pool, policy: null, decisions: null, sessionId: "s" }).specs()).toEqual([
      { name: "fx__echo", description: "Echo", parameters: { type: "object" } },
      { name: "fx__exec", parameters: { type: "object" } },
    ]);
    const policy = { ...parsePolicy('version: 1\ntools:\n  deny: ["exec"]\n  hide_denied: true\n', "yaml", "p.yaml"), path: "p.yaml", file_sha256: "" };
    const specs = await createToolGateway({ pool, policy, decisions: null, sessionId: "s" }).specs();
    expect(specs.map((s) => s.name)).toEqual(["fx__echo"]);
  });

  test("the policy sees the unqualified name; an allow list admits only its tools", async () => {
    const { pool, calls } = fakePool();
    const policy = { ...parsePolicy('version: 1\ntools:\n  allow: ["echo"]\n', "yaml", "p.yaml"), path: "p.yaml", file_sha256: "" };
    const gw = createToolGateway({ pool, policy, decisions: null, sessionId: "s" });
    const ok = await gw.call("r", { id: "1", name: "fx__echo", arguments: {} }, never);
    expect(ok).toMatchObject({ decision: "allow", isError: false, text: "ran", server: "fx", tool: "echo", reasonCode: "P_ALLOW" });
    const no = await gw.call("r", { id: "2", name: "fx__exec", arguments: {} }, never);
    expect(no).toMatchObject({ decision: "deny", isError: true, reasonCode: "E_TOOL_NOT_ALLOWED" });
    expect(calls).toEqual(["fx__echo"]);
  });

  test("non-object arguments are an E_INVALID_CALL deny", async () => {
    const { pool, calls } = fakePool();
    const gw = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s" });
    const r = await gw.call("r", { id: "1", name: "fx__echo", arguments: [1, 2] }, never);
    expect(r).toMatchObject({ decision: "deny", isError: true, reasonCode: "E_INVALID_CALL" });
    expect(calls).toEqual([]);
  });

  test("over the tool budget: what is offered fits it, and a tool left out cannot be called", async () => {
    const calls: string[] = [];
    const big: PoolTool = {
      qualifiedName: "fx__big", server: "fx", tool: "big", description: "",
      inputSchema: { type: "object", properties: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`p${i}`, { type: "string" }])) },
    };
    const pool: Pick<McpServerPool, "listTools" | "callTool" | "unavailable"> = {
      listTools: async () => [TOOLS[0]!, big, TOOLS[1]!],
      unavailable: () => null,
      callTool: async (name) => (calls.push(name), { content: [{ type: "text", text: "ran" }] }),
    };
    setQuiet(true);
    try {
      const gw = createToolGateway({ pool, policy: null, decisions: null, sessionId: "s", toolsMaxTokens: 500 });
      const specs = await gw.specs();
      expect(specs.map((s) => s.name)).toEqual(["fx__echo", "fx__exec"]);
      expect(toolsTokens(specs)).toBeLessThanOrEqual(500);
      const decided: unknown[] = [];
      const refused = await gw.call("r", { id: "1", name: "fx__big", arguments: {} }, never, (d) => void decided.push(d));
      expect(refused).toMatchObject({ isError: true, decision: "deny", server: "fx", tool: "big", reasonCode: null });
      expect(refused.text).toContain('tool "fx__big" is not offered in this session');
      expect(decided).toEqual([{ server: "fx", tool: "big", argumentsSha256: expect.any(String), decision: "deny" }]);
      expect((await gw.call("r", { id: "2", name: "fx__echo", arguments: {} }, never)).text).toBe("ran");
      expect(calls).toEqual(["fx__echo"]);
    } finally {
      setQuiet(false);
    }
  });

  test("result text: text joined, placeholders for binary, bounded", () => {
    expect(
      resultText({
        content: [
          { type: "text", text: "a" },
          { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\n[image/png 5 bytes]\nb");
    expect(resultText({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
    const long = resultText({ content: [{ type: "text", text: "x".repeat(100) }] }, 10);
    expect(long.startsWith("xxxxxxxxxx\n[vigil: tool result truncated: 100 bytes")).toBe(true);
  });
});
