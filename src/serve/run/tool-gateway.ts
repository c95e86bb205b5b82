/**
 * The governed tool calls of a `vigil serve` run (serve.md §5): the tools of the configured MCP
 * servers are offered to the model as `<server>__<tool>`, and every call the model makes goes
 * through the policy engine (wrap.md §4) and the decision log (wrap.md §5) before it may reach a
 * server, exactly as `vigil wrap` governs a client's `tools/call`.
 *
 * Decisions made here (documented because serve.md leaves them open):
 * - The policy sees the **unqualified** tool name (`read_file`, not `fs__read_file`) as
 *   `params.name`. Policies are written per server tool (the same file works under `vigil wrap`,
 *   where the server's own names are all there is), and the `<server>__` prefix is serve's
 *   presentation to the model, not part of the tool's identity.
 * - One policy session (limits, rate bucket, seen definitions for pins) per MCP server: under wrap a
 *   session governs one server, and two servers may list the same tool name with different
 *   definitions, so pins must be checked against the right server's listing.
 * - Arguments that were not JSON (`ToolArgumentsError`) or not a JSON object are recorded as an
 *   `E_INVALID_CALL` deny (every evaluated call is on record, as in wrap); the model gets the
 *   error's message so it can retry. `arguments_sha256` is then the digest of the raw string.
 * - A qualified name that matches no listed server tool is not a governed call (there is no server
 *   to attribute it to): it is answered with an error text and not recorded. When its prefix names
 *   a configured server that is down, the text names that server's state (serve.md §6 item 10:
 *   reconnecting since when, why, the next attempt), so the model can tell "gone for now" from
 *   "no such tool"; a listed tool whose server went down gets the same from the pool.
 * - Without a policy every call is allowed and recorded with reason_code `no_policy`.
 * - The policy is read at each decision (a reload replaces it: policy-holder.ts). Limits, rate
 *   buckets and seen definitions belong to one policy, so a replaced one starts them afresh and
 *   the tools are listed (and observed for pins) again before the next call.
 * - With a decision log, a failed write denies the call with `E_EVIDENCE_UNAVAILABLE` (fail closed,
 *   the default) unless `onEvidenceFailure` is "continue"; once the log is poisoned every later
 *   call is denied the same way. These rules are wrap's, applied by the one pure function
 *   (policy/governed-call.ts); serve has no dry run, and its evidence is down once this session's
 *   decision log has failed.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { DecisionRecorder } from "../../evidence/decision-recorder.ts";
import type { McpServerPool, PoolTool } from "../../mcp/server-pool.ts";
import { type Decision, type ReasonCode, denyDecision, noPolicyDecision } from "../../policy/decision.ts";
import { denyReplyResult } from "../../policy/deny-reply.ts";
import { evaluateToolCall } from "../../policy/evaluate.ts";
import { type EvidenceFailureMode, governCall } from "../../policy/governed-call.ts";
import type { LoadedPolicy } from "../../policy/load.ts";
import { type PolicySession, createPolicySession, recordForwardedCall } from "../../policy/session.ts";
import { observeToolsList, visibleTools } from "../../policy/tool-definition.ts";
import type { PolicySource } from "../policy-holder.ts";
import { canonicalSha256 } from "../../shared/digest.ts";
import { isRecord } from "../../shared/guards.ts";
import { type ToolCall, type ToolSpec, isToolArgumentsError } from "../models/types.ts";
import { countToolCall, countUnplacedCall, toolCallTimer } from "./run-metrics.ts";
import { ToolOffer } from "./tool-offer.ts";

/** Largest tool result text handed to the model (UTF-8 bytes); the rest is cut with a note. */
export const MAX_TOOL_RESULT_BYTES = 64 * 1024;

export interface ToolGatewayOptions {
  pool: Pick<McpServerPool, "listTools" | "callTool" | "unavailable">;
  /** The policy, or where the one in force is read at each decision. */
  policy: LoadedPolicy | null | PolicySource;
  /** The decision log writer; null when no decision log is configured. */
  decisions: DecisionRecorder | null;
  sessionId: string;
  /** What a failed decision write does to the call: "deny" (default, fail closed) or "continue". */
  onEvidenceFailure?: EvidenceFailureMode;
  /** Per tool call bound passed to the pool (default: the pool's). */
  callTimeoutMs?: number;
  /** The most the tool schemas may take (context/budget.ts `toolsMax`); absent: every tool as listed. */
  toolsMaxTokens?: number;
}

export interface ToolOutcome {
  /** What the model gets as the tool message. */
  text: string;
  isError: boolean;
  decision: "allow" | "deny";
  /** "" when the qualified name matched no server tool. */
  server: string;
  /** The unqualified tool name, or the name as requested when it matched nothing. */
  tool: string;
  argumentsSha256: string;
  /** The policy's reason code (or "no_policy"); null when no decision was made (unknown tool). */
  reasonCode: ReasonCode | null;
}

export type DecidedCall = Pick<ToolOutcome, "server" | "tool" | "argumentsSha256" | "decision">;

export interface ToolGateway {
  /** The tools offered to the model (hidden when the policy says `hide_denied`). */
  specs(): Promise<ToolSpec[]>;
  /**
   * Decides, records, and (if allowed) performs one call. `onDecided` runs after the decision is
   * recorded and before the server is called (the run loop emits `tool_call` there). Rejects only
   * when `signal` aborts a call in flight (or `onDecided` throws).
   */
  call(runId: string, call: ToolCall, signal: AbortSignal, onDecided?: (d: DecidedCall) => void | Promise<void>): Promise<ToolOutcome>;
}

export function createToolGateway(options: ToolGatewayOptions): ToolGateway {
  const { pool, decisions, sessionId } = options;
  const source: PolicySource = options.policy !== null && "current" in options.policy ? options.policy : { current: options.policy };
  const onEvidenceFailure = options.onEvidenceFailure ?? "deny";
  const sessions = new Map<string, PolicySession>();
  let known = new Map<string, PoolTool>();
  let governing = source.current;
  const policyNow = (): LoadedPolicy | null => {
    const p = source.current;
    if (p !== governing) {
      governing = p;
      sessions.clear();
      known = new Map();
    }
    return p;
  };
  let evidenceDown = false;
  // A tool left out to fit the model's context is not offered, so it cannot be called (tool-offer.ts).
  const offer = options.toolsMaxTokens === undefined ? null : new ToolOffer(options.toolsMaxTokens, sessionId);

  const sessionOf = (server: string): PolicySession | null => {
    const policy = policyNow();
    if (policy === null) return null;
    let s = sessions.get(server);
    if (s === undefined) {
      s = createPolicySession(policy.policy);
      sessions.set(server, s);
    }
    return s;
  };

  async function refresh(): Promise<PoolTool[]> {
    const tools = await pool.listTools();
    const policy = policyNow();
    known = new Map(tools.map((t) => [t.qualifiedName, t]));
    if (policy !== null) {
      // Pins are checked against the definitions last listed, per server (as wrap observes tools/list).
      const byServer = new Map<string, PoolTool[]>();
      for (const t of tools) byServer.set(t.server, [...(byServer.get(t.server) ?? []), t]);
      for (const [server, list] of byServer) {
        const defs = list.map((t) => ({ name: t.tool, ...(t.description === "" ? {} : { description: t.description }), inputSchema: t.inputSchema }));
        sessions.set(server, observeToolsList(sessionOf(server)!, defs));
      }
    }
    return tools;
  }

  async function specs(): Promise<ToolSpec[]> {
    const tools = await refresh();
    const policy = policyNow();
    const shown =
      policy === null
        ? tools
        : tools.filter((t) => visibleTools(policy.policy, [{ name: t.tool }]).length === 1);
    const listed = shown.map((t) => ({
      name: t.qualifiedName,
      ...(t.description === "" ? {} : { description: t.description }),
      parameters: t.inputSchema as Record<string, unknown>,
    }));
    return offer === null ? listed : offer.offer(listed);
  }

  function decide(server: string, tool: string, args: unknown): Decision {
    if (isToolArgumentsError(args)) return denyDecision("E_INVALID_CALL", "tools/call params.arguments is not valid JSON", null);
    if (args !== undefined && args !== null && !isRecord(args)) {
      return denyDecision("E_INVALID_CALL", "tools/call params.arguments is not an object", null);
    }
    const policy = policyNow();
    if (policy === null) return noPolicyDecision("no policy is configured");
    return evaluateToolCall(policy.policy, sessionOf(server)!, { name: tool, arguments: args ?? {} }, performance.now());
  }

  async function call(
    _runId: string,
    tc: ToolCall,
    signal: AbortSignal,
    onDecided?: (d: DecidedCall) => void | Promise<void>,
  ): Promise<ToolOutcome> {
    const argumentsSha256 = canonicalSha256(isToolArgumentsError(tc.arguments) ? tc.arguments.raw : (tc.arguments ?? {}));
    policyNow(); // a replaced policy empties `known`: the tools are observed again first
    if (known.size === 0 || !known.has(tc.name)) await refresh();
    const target = known.get(tc.name);
    if (target === undefined) {
      await onDecided?.({ server: "", tool: tc.name, argumentsSha256, decision: "deny" });
      const down = pool.unavailable(tc.name);
      countUnplacedCall(down !== null ? "server_unavailable" : "unknown_tool");
      return {
        text: down !== null ? `vigil: ${down}` : `vigil: unknown tool ${JSON.stringify(tc.name.slice(0, 200))}; use one of the tools offered`,
        isError: true,
        decision: "deny",
        server: "",
        tool: tc.name,
        argumentsSha256,
        reasonCode: null,
      };
    }
    const { server, tool } = target;
    const withheld = offer?.refusal(tc.name) ?? null;
    if (withheld !== null) {
      // Not a governed call (the model was never offered it): answered, not recorded, like an unknown tool.
      await onDecided?.({ server, tool, argumentsSha256, decision: "deny" });
      countToolCall(server, tool, "deny", "not_offered");
      return { text: withheld, isError: true, decision: "deny", server, tool, argumentsSha256, reasonCode: null };
    }
    const governed = governCall({
      decision: decide(server, tool, tc.arguments),
      evidence: { down: evidenceDown, onFailure: onEvidenceFailure },
      dryRun: false, // serve.md §5 has no dry run
    });
    let recorded = true;
    if (decisions !== null) {
      // Recorded before the call is made: a call reaches the server only once its decision is on record.
      recorded = decisions.record(sessionId, server, { request_id: tc.id, tool, ...governed.record, arguments_sha256: argumentsSha256 });
      if (!recorded) evidenceDown = true;
    }
    const fate = recorded ? governed.ifRecorded : governed.ifNotRecorded;
    const base = { server, tool, argumentsSha256, reasonCode: fate.decision.reason_code };
    await onDecided?.({ server, tool, argumentsSha256, decision: fate.action === "forward" ? "allow" : "deny" });
    countToolCall(server, tool, fate.action === "forward" ? "allow" : "deny", fate.decision.reason_code);
    if (fate.action === "deny") {
      const text = isToolArgumentsError(tc.arguments) && fate.decision.reason_code === "E_INVALID_CALL"
        ? `vigil: ${tc.arguments.message}`
        : denyReplyResult(fate.decision, tool).content[0].text;
      return { ...base, text, isError: true, decision: "deny" };
    }
    const s = sessionOf(server);
    if (fate.consumesLimits && s !== null) sessions.set(server, recordForwardedCall(s, performance.now()));
    const started = performance.now();
    const result = await pool.callTool(tc.name, (tc.arguments ?? {}) as Record<string, unknown>, {
      signal,
      ...(options.callTimeoutMs === undefined ? {} : { timeoutMs: options.callTimeoutMs }),
    }).finally(() => toolCallTimer(server, tool).observeSince(started));
    return { ...base, text: resultText(result), isError: result.isError === true, decision: "allow" };
  }

  return { specs, call };
}

/**
 * The text the model gets for a tool result: text items joined by newlines, a short placeholder for
 * every other item (`[image/png 1234 bytes]`), the structured content when there is nothing else,
 * bounded to MAX_TOOL_RESULT_BYTES.
 */
export function resultText(result: CallToolResult, maxBytes = MAX_TOOL_RESULT_BYTES): string {
  const parts: string[] = [];
  for (const item of (Array.isArray(result.content) ? result.content : []) as unknown[]) {
    if (!isRecord(item)) continue;
    switch (item.type) {
      case "text":
        parts.push(typeof item.text === "string" ? item.text : "");
        break;
      case "image":
      case "audio":
        parts.push(`[${String(item.mimeType ?? item.type)} ${base64Bytes(item.data)} bytes]`);
        break;
      case "resource": {
        const r = isRecord(item.resource) ? item.resource : {};
        if (typeof r.text === "string") parts.push(r.text);
        else parts.push(`[resource ${String(r.uri ?? "")} ${String(r.mimeType ?? "application/octet-stream")} ${base64Bytes(r.blob)} bytes]`);
        break;
      }
      case "resource_link":
        parts.push(`[resource link ${String(item.uri ?? "")}]`);
        break;
      default:
        parts.push(`[${String(item.type)} content]`);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return bound(parts.join("\n"), maxBytes);
}

function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const clean = data.replace(/\s+/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - pad);
}

function bound(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.byteLength <= maxBytes) return text;
  const head = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD+$/, "");
  return `${head}\n[vigil: tool result truncated: ${bytes.byteLength} bytes, the first ${maxBytes} shown]`;
}
