// A deliberate copy: src/wrap/client-relay.ts as it stood during issue 16 just before its
// allocation cuts (wrap-tail) — already writing a chunk's decision records in one write, so not the
// code of commit 35ee1c4, and held by no commit — with its imports re-pointed at src/. Kept only as
// the "before" of bench/wrap/hotpath-alloc.ts (run by bench/wrap/hotpath.ts), timed against the
// relay now in the same process: the start commit's relay would mix the record batching into the
// allocation numbers. Not used by vigil; do not edit it (it would stop being the before).
/**
 * Client → server: strict framing and classification, policy on tools/call, decisions on record
 * before anything is forwarded or answered (wrap.md §2, §5, §10).
 *
 * Per chunk: every frame is decided synchronously, the decision records of the chunk's tools/calls
 * are written in order in one write, and only then do the forwarded lines go to the server, in as
 * few writes as possible. A line is therefore never forwarded before its decision is on record.
 */
import type { DecisionFields } from "../../src/evidence/decision-recorder.ts";
import type { Decision } from "../../src/policy/decision.ts";
import { type GovernedCall, governCall } from "../../src/policy/governed-call.ts";
import { canonicalSha256, sha256Hex } from "../../src/shared/digest.ts";
import { isRecord } from "../../src/shared/guards.ts";
import { logLine } from "../../src/shared/log.ts";
import { sinkWrite } from "../../src/shared/sink.ts";
import { coalesceRuns } from "../../src/shared/ndjson/byte-runs.ts";
import { FLUSH_EVERY_BYTES } from "../../src/shared/ndjson/line-writer.ts";
import { recoverIdFromHead, recoverIdFromTail } from "../../src/shared/ndjson/message-head.ts";
import { type ClientFrame, classifyClientLine } from "../../src/wrap/client-frames.ts";
import { type Frame, joinParts } from "../../src/shared/ndjson/line-splitter.ts";
import { denyResultLine } from "../../src/wrap/policy-gate.ts";
import type { ProxyState } from "../../src/wrap/proxy-state.ts";
import { errorLine } from "../../src/wrap/rpc-replies.ts";

type Request = Extract<ClientFrame, { kind: "request" }>;
type Rejected = Extract<ClientFrame, { kind: "rejected" }>;

/** A reply vigil sends itself, with what its receipt needs. */
interface OwnReply {
  line: Uint8Array;
  receipt: { id: Request["id"]; method: string | null; tool?: string; request: Uint8Array; outcome: "denied" | "rejected" } | null;
  startedMs: number;
  startedWallMs: number;
}

/**
 * A tools/call decided but not yet on record: the records of one chunk are written together, in
 * one write, before any line of the chunk is forwarded (fail closed, wrap.md §5).
 */
interface HeldCall {
  msg: Request;
  tool: string | undefined;
  request: Uint8Array;
  call: GovernedCall;
  startedMs: number;
  /** Its line's slot in `forward` (held there until the record is written), or -1. */
  forwardAt: number;
  /** Its reply's slot in `replies` (filled only if it ends up denied). */
  replyAt: number;
}

/** What one chunk sends, in frame order; a slot is null when its frame turned out not to be sent. */
interface ChunkOut {
  forward: (Uint8Array | null)[];
  replies: (OwnReply | null)[];
  held: HeldCall[];
  fields: DecisionFields[];
  /** Ids of held calls tracked as pending ahead of their record. */
  heldIds: Set<string>;
}

/** Handles the frames of one chunk; resolves once forwarded lines and own replies are written. */
export async function relayClientFrames(state: ProxyState, frames: Frame[]): Promise<void> {
  const out: ChunkOut = { forward: [], replies: [], held: [], fields: [], heldIds: new Set() };
  for (const input of frames) {
    if (input.kind === "oversized") {
      const reply = refuseOversized(state, input.head, input.tail, input.length);
      if (reply) out.replies.push(reply);
      continue;
    }
    // Client lines are parsed whole; the client-side splitter is not asked for parts anyway.
    const frame = input.kind === "parts" ? joinParts(input) : input;
    if (isBlank(frame.bytes)) continue;
    state.counts.client_messages++;
    const msg = classifyClientLine(frame.bytes);
    if (msg.kind === "request") {
      if (msg.method !== "server/discover") state.evidence.start();
      // An id reused within the chunk depends on whether the earlier call was forwarded: settle first.
      if (out.heldIds.has(msg.idKey)) settle(state, out);
      if (state.pending.has(msg.idKey)) {
        const reply = refuse(state, { kind: "rejected", code: -32600, reason: "request id is already in use", id: msg.id, notification: false }, frame.bytes);
        if (reply) out.replies.push(reply);
        continue;
      }
      const tool = msg.method === "tools/call" ? toolName(msg.params) : undefined;
      if (msg.method === "tools/call") {
        admitToolCall(state, out, msg, tool, frame.bytes, frame.withNewline);
        continue;
      }
      if (msg.method === "initialize") state.evidence.noteHandshake({ client_info: clientInfo(msg.params) });
      state.track(msg.idKey, msg.id, msg.method, tool, frame.bytes);
    } else if (msg.kind === "rejected") {
      const reply = refuse(state, msg, frame.bytes);
      if (reply) out.replies.push(reply);
      continue;
    }
    out.forward.push(frame.withNewline);
  }
  settle(state, out);
  const forward = out.forward.filter((line) => line !== null);
  const replies = out.replies.filter((reply) => reply !== null);
  if (forward.length > 0) await forwardToServer(state, forward);
  if (replies.length > 0) await sendOwnReplies(state, replies);
}

/**
 * Evaluates a tools/call. With a decision log, the call is held until its record is written
 * (`settle`); one that would be forwarded is tracked and given its forward slot now, so that the
 * calls after it are decided as they would be after it (limits consumed, its id in use). Without
 * one, its decision stands as made.
 */
function admitToolCall(state: ProxyState, out: ChunkOut, msg: Request, tool: string | undefined, request: Uint8Array, line: Uint8Array): void {
  const startedMs = performance.now();
  const call = governCall({
    decision: state.policy.evaluate(msg.params),
    evidence: { down: state.evidence.unavailable, onFailure: state.onEvidenceFailure },
    dryRun: state.policy.dryRun,
  });
  if (!state.evidence.keepsDecisions) {
    const fate = call.ifRecorded;
    if (fate.action === "forward") {
      state.policy.forwarded();
      state.track(msg.idKey, msg.id, msg.method, tool, request);
      out.forward.push(line);
    } else out.replies.push(denyReply(msg, tool, request, fate.decision, startedMs));
    return;
  }
  out.fields.push({
    request_id: msg.id,
    tool: tool ?? null,
    decision: call.record.decision,
    reason_code: call.record.reason_code,
    reason: call.record.reason,
    matched_rule: call.record.matched_rule,
    arguments_sha256: canonicalSha256(toolArguments(msg.params)),
  });
  let forwardAt = -1;
  if (call.ifRecorded.action === "forward" || call.ifNotRecorded.action === "forward") {
    state.policy.forwarded();
    state.track(msg.idKey, msg.id, msg.method, tool, request);
    out.heldIds.add(msg.idKey);
    forwardAt = out.forward.push(line) - 1;
  }
  out.held.push({ msg, tool, request, call, startedMs, forwardAt, replyAt: out.replies.push(null) - 1 });
}

/**
 * Writes the records of the held calls in one write and decides their fate: a call whose record
 * was written goes as decided, one whose record was not goes as its `ifNotRecorded` says (denied
 * when failing closed). Nothing of the chunk has been sent yet.
 */
function settle(state: ProxyState, out: ChunkOut): void {
  if (out.held.length === 0) return;
  const written = state.evidence.recordDecisions(out.fields);
  out.held.forEach((h, i) => {
    const fate = i < written ? h.call.ifRecorded : h.call.ifNotRecorded;
    if (fate.action === "forward") return;
    if (h.forwardAt >= 0) {
      out.forward[h.forwardAt] = null;
      state.pending.delete(h.msg.idKey);
    }
    out.replies[h.replyAt] = denyReply(h.msg, h.tool, h.request, fate.decision, h.startedMs);
  });
  out.held = [];
  out.fields = [];
  out.heldIds.clear();
}

function denyReply(msg: Request, tool: string | undefined, request: Uint8Array, decision: Decision, startedMs: number): OwnReply {
  return {
    line: denyResultLine(msg.id, tool ?? null, decision),
    receipt: tool === undefined
      ? { id: msg.id, method: msg.method, request, outcome: "denied" }
      : { id: msg.id, method: msg.method, tool, request, outcome: "denied" },
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
