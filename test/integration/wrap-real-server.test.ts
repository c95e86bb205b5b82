/**
 * A real MCP server from npm (@modelcontextprotocol/server-everything), behind the compiled
 * dist/vigil, driven by the MCP SDK's own client: what an operator's MCP host does.
 */
import { afterEach, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { VIGIL_BIN, requireBinary } from "../helpers/bin.ts";
import { waitFor } from "../helpers/wait.ts";

const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const POLICY = `version: 1
tools:
  allow: ["echo", "get-sum", "get-tiny-image"]
  deny: ["get-env"]
  hide_denied: true
arguments:
  get-sum:
    type: object
    properties: { a: { type: number, maximum: 1000 }, b: { type: number } }
    required: [a, b]
    additionalProperties: false
unconstrained: allow
`;

let dir = "";
beforeAll(() => requireBinary());
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("server-everything works through vigil wrap with the SDK client; policy holds; evidence is written", async () => {
  dir = mkdtempSync(join(tmpdir(), "vigil-everything-"));
  writeFileSync(join(dir, "policy.yaml"), POLICY);
  const capture = join(dir, "cap");
  const transport = new StdioClientTransport({
    command: VIGIL_BIN,
    args: ["wrap", "--policy", join(dir, "policy.yaml"), "--capture-dir", capture, "--event-source", "vigil://test/everything",
      "--server-id", "everything", "--", "node", EVERYTHING, "stdio"],
    stderr: "pipe",
  });
  const client = new Client({ name: "vigil-test", version: "1.0.0" });
  await client.connect(transport);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  expect(names).toContain("echo");
  expect(names).not.toContain("get-env"); // hidden: denied by name
  expect(names).not.toContain("toggle-simulated-logging"); // hidden: not on the allow list

  const secret = `ghp_${crypto.randomUUID().replaceAll("-", "")}`;
  const echoed = await client.callTool({ name: "echo", arguments: { message: secret } });
  expect(JSON.stringify(echoed.content)).toContain(secret); // the real server answered
  expect(echoed.isError).toBeFalsy();

  const sum = await client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } });
  expect(JSON.stringify(sum.content)).toContain("5");

  const env = await client.callTool({ name: "get-env", arguments: {} });
  expect(env.isError).toBe(true);
  expect((env.structuredContent as { vigil: { error_code: string } }).vigil.error_code).toBe("E_TOOL_DENIED");

  const bad = await client.callTool({ name: "get-sum", arguments: { a: 5000, b: 1 } });
  expect((bad.structuredContent as { vigil: { error_code: string } }).vigil.error_code).toBe("E_ARG_SCHEMA");

  await client.close();
  await waitFor(() => readdirSync(capture).includes("capture.json"), { timeoutMs: 15_000, label: "capture.json in the capture dir" });

  const decisions = readFileSync(join(capture, "decisions.ndjson"), "utf8").trim().split("\n").map((l) => JSON.parse(l).data);
  expect(decisions.map((d) => [d.tool, d.decision, d.reason_code])).toEqual([
    ["echo", "allow", "P_ALLOW"],
    ["get-sum", "allow", "P_ALLOW"],
    ["get-env", "deny", "E_TOOL_DENIED"],
    ["get-sum", "deny", "E_ARG_SCHEMA"],
  ]);
  const stop = JSON.parse(readFileSync(join(capture, "session-stop.json"), "utf8")).data;
  expect(stop.decision_log).toBe("complete");
  expect(stop.decision_events_written).toBe(4);
  const context = JSON.parse(readFileSync(join(capture, "session-context.json"), "utf8")).data;
  expect(context.server_info.name).toBe("mcp-servers/everything");
  expect(context.client_info).toEqual({ name: "vigil-test", version: "1.0.0" });
  for (const name of readdirSync(capture)) expect(readFileSync(join(capture, name), "utf8")).not.toContain(secret.slice(4));
}, 60_000);
