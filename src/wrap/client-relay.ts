/**
 * Client → server: strict framing and classification, policy on tools/call, decisions on record
 * before anything is forwarded or answered (wrap.md §2, §5, §10).
 *
 * Per chunk: every frame is decided synchronously (decision records are written in order as they
 * are decided), then the forwarded lines go to the server in as few writes as possible. A line is
 * therefore never forwarded before its decision is on record.
 */
import { governCall } from "../policy/governed-call.ts";
import { canonicalSha256, sha256Hex } from "../shared/digest.ts";
import { isRecord } from "../shared/guards.ts";
import { logLine } from "../shared/log.ts";
import { sinkWrite } from "../shared/sink.ts";
import { coalesceRuns } from "../shared/ndjson/byte-runs.ts";
import { FLUSH_EVERY_BYTES } from "../shared/ndjson/line-writer.ts";
import { recoverIdFromHead, recoverIdFromTail } from "../shared/ndjson/message-head.ts";
import { type ClientFrame, classifyClientLine } from "./client-frames.ts";
import { type Frame, joinParts } from "../shared/ndjson/line-splitter.ts";
import { denyResultLine } from "./policy-gate.ts";
import type { ProxyState } from "./proxy-state.ts";
import { errorLine } from "./rpc-replies.ts";

type Request = Extract<ClientFrame, { kind: "request" }>;
type Rejected = Extract<ClientFrame, { kind: "rejected" }>;

/** A reply vigil sends itself, with what its receipt needs. */
interface OwnReply {
  line: Uint8Array;
  receipt: { id: Request["id"]; method: string | null; tool?: string; request: Uint8Array; outcome: "denied" | "rejected" } | null;
  startedMs: number;
  startedWallMs: number;
}

/** Handles the frames of one chunk; resolves once forwarded lines and own replies are written. */
export async function relayClientFrames(state: ProxyState, frames: Frame[]): Promise<void> {
  const forward: Uint8Array[] = [];
  const replies: OwnReply[] = [];
  for (const input of frames) {
    if (input.kind === "oversized") {
      const reply = refuseOversized(state, input.head, input.tail, input.length);
      if (reply) replies.push(reply);
      continue;
    }
    // Client lines are parsed whole; the client-side splitter is not asked for parts anyway.
    const frame = input.kind === "parts" ? joinParts(input) : input;
    if (isBlank(frame.bytes)) continue;
    state.counts.client_messages++;
    const msg = classifyClientLine(frame.bytes);
    if (msg.kind === "request") {
      if (msg.method !== "server/discover") state.evidence.start();
      if (state.pending.has(msg.idKey)) {
        const reply = refuse(state, { kind: "rejected", code: -32600, reason: "request id is already in use", id: msg.id, notification: false }, frame.bytes);
        if (reply) replies.push(reply);
        continue;
      }
      const tool = msg.method === "tools/call" ? toolName(msg.params) : undefined;
      if (msg.method === "tools/call") {
        const denied = admitToolCall(state, msg, tool, frame.bytes);
        if (denied) {
          replies.push(denied);
          continue;
        }
      }
      if (msg.method === "initialize") state.evidence.noteHandshake({ client_info: clientInfo(msg.params) });
      state.track(msg.idKey, msg.id, msg.method, tool, frame.bytes);
    } else if (msg.kind === "rejected") {
      const reply = refuse(state, msg, frame.bytes);
      if (reply) replies.push(reply);
      continue;
    }
    forward.push(frame.withNewline);
  }
  if (forward.length > 0) await forwardToServer(state, forward);
  if (replies.length > 0) await sendOwnReplies(state, replies);
}

/** Evaluates a tools/call and records the decision; returns the deny reply, or null to forward. */
function admitToolCall(state: ProxyState, msg: Request, tool: string | undefined, line: Uint8Array): OwnReply | null {
  const startedMs = performance.now();
  const call = governCall({
    decision: state.policy.evaluate(msg.params),
    evidence: { down: state.evidence.unavailable, onFailure: state.onEvidenceFailure },
    dryRun: state.policy.dryRun,
  });
  const recorded =
    !state.evidence.keepsDecisions ||
    state.evidence.recordDecision({
      request_id: msg.id,
      tool: tool ?? null,
      ...call.record,
      arguments_sha256: canonicalSha256(toolArguments(msg.params)),
    });
  const fate = recorded ? call.ifRecorded : call.ifNotRecorded;
  if (fate.action === "forward") {
    state.policy.forwarded();
    return null;
  }
  return {
    line: denyResultLine(msg.id, tool ?? null, fate.decision),
    receipt: { id: msg.id, method: msg.method, ...(tool === undefined ? {} : { tool }), request: line, outcome: "denied" },
    startedMs,
    startedWallMs: Date.now(),
  };
}

function refuse(state: ProxyState, msg: Rejected, line: Uint8Array): OwnReply | null {
  state.counts.rejected_frames++;
  logLine(`refused a client frame (${msg.code}): ${msg.reason}`);
  if (msg.id === null) return null;
  return {
    line: errorLine(msg.id, msg.code, `vigil: ${msg.code === -32700 ? "parse error" : "invalid request"}: ${msg.reason}`),
    receipt: { id: msg.id, method: null, request: line, outcome: "rejected" },
    startedMs: performance.now(),
    startedWallMs: Date.now(),
  };
}

function refuseOversized(state: ProxyState, head: Uint8Array, tail: Uint8Array, length: number): OwnReply | null {
  state.counts.oversized++;
  logLine(`refused a client message of ${length} bytes (cap ${state.maxMessageBytes})`);
  const id = recoverIdFromHead(head) ?? recoverIdFromTail(tail);
  if (id === null) return null;
  // No receipt: the request's bytes were never held, so there is nothing exact to digest.
  return { line: errorLine(id, -32600, `vigil: message larger than ${state.maxMessageBytes} bytes`), receipt: null, startedMs: 0, startedWallMs: 0 };
}

async function sendOwnReplies(state: ProxyState, replies: OwnReply[]): Promise<void> {
  await state.client.write(replies.map((r) => r.line));
  if (!state.evidence.started) return;
  for (const r of replies) {
    if (!r.receipt) continue;
    const { request, outcome, ...subject } = r.receipt;
    state.receipt(
      { ...subject, startedMs: r.startedMs, startedWallMs: r.startedWallMs, requestSha256: state.evidence.keepsReceipts ? sha256Hex(request) : "", requestBytes: request.length },
      outcome,
      r.line,
    );
  }
}

async function forwardToServer(state: ProxyState, lines: Uint8Array[]): Promise<void> {
  try {
    let unflushed = 0;
    for (const run of coalesceRuns(lines)) {
      sinkWrite(state.serverStdin, run);
      unflushed += run.byteLength;
      if (unflushed >= FLUSH_EVERY_BYTES) {
        await state.serverStdin.flush();
        unflushed = 0;
      }
    }
    await state.serverStdin.flush();
  } catch {
    // The server has gone; its exit is handled by the lifecycle, pending requests get errors there.
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
