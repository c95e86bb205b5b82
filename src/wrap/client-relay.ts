/**
 * Client → server: strict framing and classification, policy on tools/call, decisions on record
 * before anything is forwarded or answered (wrap.md §2, §5, §10).
 */
import { canonicalSha256 } from "../shared/digest.ts";
import { logLine } from "../shared/log.ts";
import { type ClientFrame, classifyClientLine, recoverIdFromHead, recoverIdFromTail } from "./client-frames.ts";
import type { Frame } from "./line-splitter.ts";
import { evidenceUnavailableDecision } from "../policy/decision.ts";
import { type GateDecision, denyResultLine } from "./policy-gate.ts";
import type { ProxyState } from "./proxy-state.ts";
import { errorLine } from "./rpc-replies.ts";
import { sha256Hex } from "../shared/digest.ts";

type Request = Extract<ClientFrame, { kind: "request" }>;

/** Handles the frames of one chunk; forwarded lines are written to the server's stdin in order. */
export async function relayClientFrames(state: ProxyState, frames: Frame[]): Promise<void> {
  let forwarded = false;
  for (const frame of frames) {
    if (frame.kind === "oversized") {
      await refuseOversized(state, frame.head, frame.tail, frame.length);
      continue;
    }
    if (isBlank(frame.bytes)) continue;
    state.counts.client_messages++;
    const msg = classifyClientLine(frame.bytes);
    if (msg.kind === "rejected") {
      await refuse(state, msg, frame.bytes);
      continue;
    }
    if (msg.kind === "request") {
      if (msg.method !== "server/discover") state.evidence.start();
      if (state.pending.has(msg.idKey)) {
        await refuse(state, { kind: "rejected", code: -32600, reason: "request id is already in use", id: msg.id, notification: false }, frame.bytes);
        continue;
      }
      if (msg.method === "tools/call" && !(await admitToolCall(state, msg, frame.bytes))) continue;
      if (msg.method === "initialize") state.evidence.noteHandshake({ client_info: clientInfo(msg.params) });
      const tool = msg.method === "tools/call" ? toolName(msg.params) : undefined;
      state.track(
        msg.idKey,
        { id: msg.id, method: msg.method, ...(tool === undefined ? {} : { tool }), startedMs: performance.now(), startedAt: new Date().toISOString() },
        frame.bytes,
      );
    }
    forwardToServer(state, frame.withNewline);
    forwarded = true;
  }
  if (forwarded) await flushServer(state);
}

/** Evaluates a tools/call and records the decision. True when the call may be forwarded. */
async function admitToolCall(state: ProxyState, msg: Request, line: Uint8Array): Promise<boolean> {
  const started = performance.now();
  const tool = toolName(msg.params);
  const args = toolArguments(msg.params);
  let decision = state.policy.evaluate(msg.params);
  const evidenceDown = state.evidence.unavailable && state.onEvidenceFailure === "deny";
  if (evidenceDown) decision = evidenceUnavailable();
  // Dry run never blocks on policy, but a failed evidence writer still closes the gate.
  let wouldDeny = state.policy.dryRun && decision.decision === "deny" && !evidenceDown;
  const recorded = state.evidence.recordDecision({
    request_id: msg.id,
    tool: tool ?? null,
    decision: wouldDeny ? "would_deny" : decision.decision,
    reason_code: decision.reason_code,
    reason: decision.reason,
    matched_rule: decision.matched_rule,
    arguments_sha256: canonicalSha256(args),
  });
  // Fail closed: a call is forwarded only after its decision is on record.
  if (!recorded && state.onEvidenceFailure === "deny") {
    decision = evidenceUnavailable();
    wouldDeny = false;
  }
  if (decision.decision === "allow" || wouldDeny) {
    state.policy.forwarded();
    return true;
  }
  const reply = denyResultLine(msg.id, tool ?? null, decision);
  await state.client.write([reply]);
  if (state.evidence.started) {
    state.receipt(
      {
        id: msg.id,
        method: msg.method,
        ...(tool === undefined ? {} : { tool }),
        startedMs: started,
        startedAt: new Date().toISOString(),
        requestSha256: sha256Hex(line),
        requestBytes: line.length,
      },
      "denied",
      reply.subarray(0, reply.length - 1),
    );
  }
  return false;
}

function evidenceUnavailable(): GateDecision {
  return evidenceUnavailableDecision();
}

async function refuse(state: ProxyState, msg: Extract<ClientFrame, { kind: "rejected" }>, line: Uint8Array): Promise<void> {
  state.counts.rejected_frames++;
  logLine(`refused a client frame (${msg.code}): ${msg.reason}`);
  if (msg.id === null) return;
  const reply = errorLine(msg.id, msg.code, `vigil: ${msg.code === -32700 ? "parse error" : "invalid request"}: ${msg.reason}`);
  await state.client.write([reply]);
  if (state.evidence.started) {
    const now = performance.now();
    state.receipt(
      { id: msg.id, method: null, startedMs: now, startedAt: new Date().toISOString(), requestSha256: sha256Hex(line), requestBytes: line.length },
      "rejected",
      reply.subarray(0, reply.length - 1),
    );
  }
}

async function refuseOversized(state: ProxyState, head: Uint8Array, tail: Uint8Array, length: number): Promise<void> {
  state.counts.oversized++;
  logLine(`refused a client message of ${length} bytes (cap ${state.maxMessageBytes})`);
  const id = recoverIdFromHead(head) ?? recoverIdFromTail(tail);
  if (id === null) return;
  await state.client.write([errorLine(id, -32600, `vigil: message larger than ${state.maxMessageBytes} bytes`)]);
}

function forwardToServer(state: ProxyState, bytes: Uint8Array): void {
  try {
    state.serverStdin.write(bytes);
  } catch {
    // The server has gone; its exit is handled by the lifecycle, pending requests get errors there.
  }
}

async function flushServer(state: ProxyState): Promise<void> {
  try {
    await state.serverStdin.flush();
  } catch {
    // as above: a dead server is noticed through its exit, not through EPIPE here
  }
}

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

function toolName(params: unknown): string | undefined {
  const name = isRecord(params) ? params.name : undefined;
  return typeof name === "string" ? name : undefined;
}

function toolArguments(params: unknown): unknown {
  const args = isRecord(params) ? params.arguments : undefined;
  return args === undefined ? {} : args;
}

function clientInfo(params: unknown): { name: string; version: string } | null {
  const info = isRecord(params) ? params.clientInfo : undefined;
  return isRecord(info) ? boundedInfo(info) : null;
}

export function boundedInfo(info: Record<string, unknown>): { name: string; version: string } {
  const text = (v: unknown) => (typeof v === "string" ? v.slice(0, 256) : "");
  return { name: text(info.name), version: text(info.version) };
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
