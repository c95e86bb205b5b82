/**
 * The spans of a run (issue 15 item 2), shaped by the OpenTelemetry GenAI semantic conventions —
 * GENAI_SEMCONV (shared/tracing.ts) names the version:
 *
 * - the run: `invoke_agent vigil` (INTERNAL, a root: a run is where a trace starts), with
 *   `gen_ai.conversation.id` = the session, the run id and trigger, and at its end the run_end
 *   status; a run that did not end `ok` has status ERROR and `error.type` = its stable code (or
 *   its status);
 * - each model request (a run's turns and its compaction summaries alike): `chat {model}` (CLIENT,
 *   child of the run) with the provider, the model and the token counts the API reported; a
 *   failure's `error.type` is the HTTP status (`429`, `503`) or the ModelError kind (`timeout`,
 *   `connect`, `protocol`, `aborted`, `exit`, `spawn`);
 * - each tool call: `execute_tool {tool}` (INTERNAL, child of the run) with `gen_ai.tool.name`,
 *   `gen_ai.tool.call.id`, the server and the policy's decision and reason code, and
 *   `mcp.method.name` = `tools/call`, `mcp.session.id` and `network.transport` when the call
 *   reached an MCP server (the MCP conventions put MCP attributes on the GenAI tool span rather
 *   than a second span). A denied call is a span too: status ERROR, `error.type` = the reason
 *   code; an `isError` result is `tool_error` (as the MCP conventions say). A tool name the model made up (not offered) is not put in the span name or
 *   attributes: a model must not mint span names; `error.type` says `unknown_tool`.
 *
 * No argument, prompt, message or result text goes in any attribute: names, ids, counts and codes only.
 */
import type { McpServerPool } from "../../mcp/server-pool.ts";
import { type Attributes, type TraceSpan, keepSpan, keptSpan, startSpan, tracingEnabled } from "../../shared/tracing.ts";
import type { ModelConfig } from "../models/registry.ts";
import { type ChatModel, ModelError, type ToolCall } from "../models/types.ts";
import type { ToolOutcome } from "./tool-gateway.ts";

/** What the spans of a session's runs say about where they run (no secret: names only). */
export interface RunTraceInfo {
  session: string;
  /** `gen_ai.provider.name`: `openai` (the Chat Completions API, whoever serves it) or `vigil.command`. */
  provider: string;
  /** `gen_ai.request.model`, when the provider has one (the `command` model has none). */
  model?: string;
  /** The MCP attributes of a call that reached `server` (read when the call ended). */
  mcp?: (server: string) => Attributes;
}

type PoolView = Pick<McpServerPool, "transport" | "serverConfig">;

export function runTraceInfo(session: string, model: ModelConfig, pool?: PoolView): RunTraceInfo {
  const info: RunTraceInfo = model.provider === "openai" ? { session, provider: "openai", model: model.model } : { session, provider: "vigil.command" };
  if (pool !== undefined) info.mcp = (server) => mcpAttributes(pool, server);
  return info;
}

/** The MCP conventions' connection attributes: the transport, and the MCP session id (HTTP servers). */
function mcpAttributes(pool: PoolView, server: string): Attributes {
  const transport = pool.serverConfig(server)?.transport;
  return {
    "network.transport": transport === "stdio" ? "pipe" : transport === "http" ? "tcp" : undefined,
    "mcp.session.id": boundedId(pool.transport(server)?.sessionId),
  };
}

/** The run's span, kept by its run id (the events coalescer parents a delivered batch on it). */
export function startRunSpan(runId: string, trigger: string, info: RunTraceInfo | undefined): TraceSpan {
  const span = startSpan("invoke_agent vigil", {
    attributes: {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "vigil",
      "gen_ai.conversation.id": info?.session,
      "gen_ai.provider.name": info?.provider,
      "gen_ai.request.model": info?.model,
      "vigil.session": info?.session,
      "vigil.run.id": runId,
      "vigil.run.trigger": trigger,
    },
  });
  keepSpan(runId, span);
  return span;
}

export function endRunSpan(span: TraceSpan, status: string, code: string | undefined): void {
  span.set({ "vigil.run.status": status, "vigil.run.code": code });
  if (status !== "ok") span.fail(code ?? status);
  span.end();
}

/** `chat` whose every request is a `chat {model}` span under `run`. */
export function tracedChat(chat: ChatModel, run: TraceSpan, info: RunTraceInfo | undefined): ChatModel {
  if (!run.recording) return chat;
  const name = info?.model === undefined ? "chat" : `chat ${info.model}`;
  return {
    acceptsTools: chat.acceptsTools,
    async turn(messages, tools, signal) {
      const span = startSpan(name, {
        kind: "client",
        parent: run,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": info?.provider,
          "gen_ai.request.model": info?.model,
          "gen_ai.conversation.id": info?.session,
        },
      });
      try {
        const answer = await chat.turn(messages, tools, signal);
        span.set({
          "gen_ai.usage.input_tokens": answer.usage?.inputTokens,
          "gen_ai.usage.output_tokens": answer.usage?.outputTokens,
          "vigil.model.tool_calls": answer.toolCalls.length,
        });
        return answer;
      } catch (e) {
        span.fail(modelErrorType(e));
        throw e;
      } finally {
        span.end();
      }
    },
  };
}

/** `error.type` of a failed model request: the HTTP status, else the ModelError kind. Pure. */
export function modelErrorType(e: unknown): string {
  if (e instanceof ModelError) return e.kind === "http" && e.status !== undefined ? String(e.status) : e.kind;
  return "_OTHER";
}

/**
 * A tool call's span under the run `runId` (if its span is kept). Its name is shown only when it is
 * one of the tools `offered` to the model this run (a low-cardinality name vigil listed).
 */
export function startToolSpan(runId: string, call: ToolCall, offered: readonly { name: string }[], session: string | undefined): TraceSpan {
  if (!tracingEnabled()) return startSpan("execute_tool");
  const known = offered.some((t) => t.name === call.name);
  return startSpan(known ? `execute_tool ${call.name}` : "execute_tool", {
    parent: keptSpan(runId),
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": known ? call.name : undefined,
      "gen_ai.tool.call.id": boundedId(call.id),
      "gen_ai.tool.type": "extension",
      "gen_ai.conversation.id": session,
    },
  });
}

/** What the gateway decided (`reasonCode`: the policy's, or vigil's own `no_tools`; null: no decision was made). */
type Outcome = Pick<ToolOutcome, "server" | "decision" | "isError"> & { reasonCode: string | null };

export function endToolSpan(span: TraceSpan, outcome: Outcome | { thrown: unknown }, info?: RunTraceInfo): void {
  if ("thrown" in outcome) {
    span.fail(outcome.thrown instanceof Error && outcome.thrown.name === "AbortError" ? "aborted" : "_OTHER");
    span.end();
    return;
  }
  const reached = outcome.decision === "allow" && outcome.server !== "";
  span.set({
    "vigil.tool.server": outcome.server === "" ? undefined : outcome.server,
    "vigil.tool.decision": outcome.decision,
    "vigil.policy.reason_code": outcome.reasonCode ?? undefined,
    "mcp.method.name": reached ? "tools/call" : undefined,
  });
  if (reached && span.recording && info?.mcp !== undefined) span.set(info.mcp(outcome.server));
  if (outcome.decision === "deny") span.fail(outcome.reasonCode ?? (outcome.server === "" ? "unknown_tool" : "not_offered"));
  else if (outcome.isError) span.fail("tool_error");
  span.end();
}

/** A provider's call id (or a server's session id) is an id, but bounded: it is another's text all the same. */
function boundedId<T extends string | undefined>(id: T): T {
  return (id !== undefined && id.length > 128 ? id.slice(0, 128) : id) as T;
}
