/**
 * The proxy's view of the policy engine: one mutable holder around the pure engine
 * (src/policy), so the relays need not thread session state through every call.
 */
import { type Decision, denyDecision, noPolicyDecision } from "../policy/decision.ts";
import { denyReplyResult } from "../policy/deny-reply.ts";
import { evaluateToolCall } from "../policy/evaluate.ts";
import { loadPolicyFile } from "../policy/load.ts";
import { createPolicySession, recordForwardedCall } from "../policy/session.ts";
import { observeToolsList, visibleTools } from "../policy/tool-definition.ts";
import { isRecord } from "../shared/guards.ts";
import type { JsonRpcId } from "./client-frames.ts";
import type { WrapOptions } from "./options.ts";
import { resultLine } from "./rpc-replies.ts";

export interface PolicyGate {
  readonly digest: string | null;
  readonly fileSha256: string | null;
  readonly dryRun: boolean;
  evaluate(params: unknown): Decision;
  /** The call was forwarded to the server (consumes limits). */
  forwarded(): void;
  /** Records listed tool definitions (pins); returns the filtered list when hide_denied changed it, else null. */
  observeTools(tools: unknown[]): unknown[] | null;
}

export async function openPolicyGate(o: WrapOptions): Promise<PolicyGate> {
  if (o.policyPath === null) return allowAllGate();
  const loaded = await loadPolicyFile(o.policyPath);
  const policy = loaded.policy;
  let session = createPolicySession(policy);
  return {
    digest: loaded.digest,
    fileSha256: loaded.file_sha256,
    dryRun: o.dryRun,
    evaluate: (params) => evaluateToolCall(policy, session, params, performance.now()),
    forwarded: () => {
      session = recordForwardedCall(session, performance.now());
    },
    observeTools: (tools) => {
      session = observeToolsList(session, tools);
      const visible = visibleTools(policy, tools);
      return visible.length === tools.length ? null : [...visible];
    },
  };
}

/** --allow-all: observe only. Every well-formed call is allowed and recorded as no_policy. */
function allowAllGate(): PolicyGate {
  return {
    digest: null,
    fileSha256: null,
    dryRun: false,
    evaluate: (params) => {
      const name = isRecord(params) ? params.name : undefined;
      if (typeof name !== "string") return denyDecision("E_INVALID_CALL", "tools/call params.name is missing or not a string", null);
      return noPolicyDecision("no policy: observe only (--allow-all)");
    },
    forwarded: () => {},
    observeTools: () => null,
  };
}

/** The JSON-RPC line answering a denied call (wrap.md §4.4). */
export function denyResultLine(id: JsonRpcId, tool: string | null, decision: Decision): Uint8Array {
  return resultLine(id, denyReplyResult(decision, tool));
}
