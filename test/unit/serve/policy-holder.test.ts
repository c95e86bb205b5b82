// The policy in force is read at decision time (src/serve/policy-holder.ts): a gateway and a
// decision recorder built before a reload decide under, and record the digest of, the policy the
// reload put in place; hide_denied specs follow it too.
import { describe, expect, test } from "bun:test";
import { DecisionRecorder } from "../../../src/evidence/decision-recorder.ts";
import type { McpServerPool, PoolTool } from "../../../src/mcp/server-pool.ts";
import { type LoadedPolicy, parsePolicy } from "../../../src/policy/load.ts";
import { PolicyHolder } from "../../../src/serve/policy-holder.ts";
import { createToolGateway } from "../../../src/serve/run/tool-gateway.ts";

const TOOLS: PoolTool[] = [
  { qualifiedName: "fx__echo", server: "fx", tool: "echo", description: "", inputSchema: { type: "object" } },
  { qualifiedName: "fx__exec", server: "fx", tool: "exec", description: "", inputSchema: { type: "object" } },
];
const pool: Pick<McpServerPool, "listTools" | "callTool" | "unavailable"> = {
  listTools: async () => TOOLS,
  unavailable: () => null,
  callTool: async () => ({ content: [{ type: "text", text: "ran" }] }),
};
const policy = (text: string): LoadedPolicy => ({ ...parsePolicy(text, "yaml", "p.yaml"), path: "p.yaml", file_sha256: "" });
const never = new AbortController().signal;

describe("PolicyHolder", () => {
  test("the next decision of an existing gateway takes the replaced policy, and its record carries the new digest", async () => {
    const before = policy('version: 1\ntools:\n  deny: ["exec"]\n');
    const after = policy('version: 1\ntools:\n  deny: ["echo"]\n  hide_denied: true\n');
    const holder = new PolicyHolder(before);
    const records: Record<string, unknown>[] = [];
    const recorder = new DecisionRecorder({ append: (e) => records.push(e) > 0 }, "vigil://t", () => holder.digest, false);
    const gw = createToolGateway({ pool, policy: holder, decisions: recorder, sessionId: "s" });

    expect(await gw.call("r", { id: "1", name: "fx__echo", arguments: {} }, never)).toMatchObject({ decision: "allow" });
    holder.replace(after);
    expect(await gw.call("r", { id: "2", name: "fx__echo", arguments: {} }, never)).toMatchObject({ decision: "deny", reasonCode: "E_TOOL_DENIED" });
    expect(await gw.call("r", { id: "3", name: "fx__exec", arguments: {} }, never)).toMatchObject({ decision: "allow" });
    expect((await gw.specs()).map((s) => s.name)).toEqual(["fx__exec"]);
    const digests = records.map((r) => (r.data as { policy_digest: string }).policy_digest);
    expect(digests).toEqual([before.digest, after.digest, after.digest]);

    holder.replace(null);
    expect(holder.digest).toBeNull();
    expect(await gw.call("r", { id: "4", name: "fx__echo", arguments: {} }, never)).toMatchObject({ decision: "allow", reasonCode: "no_policy" });
    expect((records.at(-1)!.data as { policy_digest: unknown }).policy_digest).toBeNull();
  });
});
