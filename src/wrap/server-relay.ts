/**
 * Server → client: forward lines byte-for-byte, drop stdout pollution, hold the cap, and parse only
 * the responses that must be parsed (initialize for the context record, tools/list for pins and
 * hide_denied). Everything else is classified by a top-level scan.
 */
import { logLine, preview } from "../shared/log.ts";
import { isRecord } from "../shared/guards.ts";
import { boundedInfo } from "./client-relay.ts";
import { recoverIdFromHead, recoverIdFromTail } from "../shared/ndjson/message-head.ts";
import { type Frame, joinParts } from "../shared/ndjson/line-splitter.ts";
import type { PendingRequest, ProxyState } from "./proxy-state.ts";
import { SERVER_GONE, encodeLine, errorLine } from "./rpc-replies.ts";
import { scanServerFrame } from "./server-frames.ts";

interface Completed {
  request: PendingRequest;
  outcome: "response" | "error";
  /** The bytes relayed for it, the last piece ending with the newline. */
  pieces: Uint8Array[];
}

/** Handles the frames of one chunk of server output; resolves once the client has taken them. */
export async function relayServerFrames(state: ProxyState, frames: Frame[]): Promise<void> {
  const out: Uint8Array[] = [];
  const completed: Completed[] = [];
  for (const frame of frames) {
    if (frame.kind === "oversized") {
      const reply = replaceOversized(state, frame.head, frame.tail, frame.length);
      if (reply) {
        out.push(...reply.pieces);
        completed.push(reply);
      }
      continue;
    }
    if (frame.kind === "parts") {
      relayLargeLine(state, frame, out, completed);
      continue;
    }
    const info = scanServerFrame(frame.bytes);
    if (info === null) {
      if (frame.bytes.length > 0) {
        state.counts.server_garbage_lines++;
        logLine(`dropped a non-JSON line from the server's stdout: "${preview(frame.bytes)}"`);
      }
      continue;
    }
    state.counts.server_messages++;
    const request = info.kind === "response" && info.idKey !== null ? state.pending.get(info.idKey) : undefined;
    if (!request) {
      out.push(frame.withNewline);
      continue;
    }
    state.pending.delete(info.idKey!);
    const line = inspectResponse(state, request, frame);
    out.push(line);
    completed.push({ request, outcome: info.outcome === "error" ? "error" : "response", pieces: [line] });
  }
  if (out.length === 0) return;
  await state.client.write(out);
  // A relayed multi-megabyte line is garbage now; ask for a collection so memory stays flat
  // across large results instead of growing until the collector's own heuristics kick in.
  if (frames.some((f) => f.kind === "parts")) Bun.gc(false);
  for (const c of completed) {
    if (c.request.inSession) state.receipt(c.request, c.outcome, c.pieces);
  }
  // The context record follows the first response relayed in the session (normally initialize's).
  if (completed.some((c) => c.request.inSession)) state.evidence.writeContext();
}

/** Parses the few responses vigil must understand; returns the bytes to forward. */
function inspectResponse(state: ProxyState, request: PendingRequest, frame: Extract<Frame, { kind: "line" }>): Uint8Array {
  if (request.method !== "initialize" && request.method !== "tools/list") return frame.withNewline;
  let message: unknown;
  try {
    message = JSON.parse(Buffer.from(frame.bytes.buffer, frame.bytes.byteOffset, frame.bytes.byteLength).toString("utf8"));
  } catch {
    return frame.withNewline;
  }
  const result = isRecord(message) ? message.result : undefined;
  if (!isRecord(result)) return frame.withNewline;
  if (request.method === "initialize") {
    state.evidence.noteHandshake({
      protocol_version: typeof result.protocolVersion === "string" ? result.protocolVersion.slice(0, 64) : null,
      server_info: isRecord(result.serverInfo) ? boundedInfo(result.serverInfo) : null,
    });
    return frame.withNewline;
  }
  if (!Array.isArray(result.tools)) return frame.withNewline;
  const visible = state.policy.observeTools(result.tools);
  if (visible === null) return frame.withNewline;
  // hide_denied changed the list: the only case where a server line is re-serialized.
  return encodeLine({ ...(message as Record<string, unknown>), result: { ...result, tools: visible } });
}

/** An over-cap server line: an error to the request it answers, otherwise dropped. */
function replaceOversized(state: ProxyState, head: Uint8Array, tail: Uint8Array, length: number): Completed | null {
  state.counts.oversized++;
  const id = recoverIdFromTail(tail) ?? recoverIdFromHead(head);
  const key = id === null ? null : JSON.stringify(id);
  const request = key === null ? undefined : state.pending.get(key);
  logLine(`server sent a ${length}-byte message (cap ${state.maxMessageBytes})${request ? "; answering its request with an error" : "; dropped"}`);
  if (!request) return null;
  state.pending.delete(key!);
  return { request, outcome: "error", pieces: [errorLine(request.id, SERVER_GONE, `response larger than ${state.maxMessageBytes} bytes`)] };
}

/**
 * A line of LARGE_LINE_BYTES or more that spanned several reads: relayed as its pieces without
 * joining them. Its kind and id come from its ends: an object ({…}), whose top-level id is the last
 * member ({"result":…,"id":7}, as most serializers write it) or the first ({"jsonrpc":"2.0","id":7,…}).
 * A multi-megabyte line is taken to be a result, not an error. initialize and tools/list responses
 * are still parsed whole.
 */
function relayLargeLine(state: ProxyState, frame: Extract<Frame, { kind: "parts" }>, out: Uint8Array[], completed: Completed[]): void {
  const { parts } = frame;
  if (firstNonWs(parts) !== 0x7b || lastNonWs(parts) !== 0x7d) {
    state.counts.server_garbage_lines++;
    logLine(`dropped a non-JSON line from the server's stdout: "${preview(parts[0]!)}"`);
    return;
  }
  const id = recoverIdFromTail(tailOf(parts)) ?? recoverIdFromHead(parts[0]!);
  const key = id === null ? null : JSON.stringify(id);
  const request = key === null ? undefined : state.pending.get(key);
  if (request && (request.method === "initialize" || request.method === "tools/list")) {
    const line = joinParts(frame);
    const info = scanServerFrame(line.bytes);
    if (info !== null) {
      state.counts.server_messages++;
      state.pending.delete(key!);
      const bytes = inspectResponse(state, request, line);
      out.push(bytes);
      completed.push({ request, outcome: info.outcome === "error" ? "error" : "response", pieces: [bytes] });
      return;
    }
  }
  state.counts.server_messages++;
  out.push(...parts);
  if (!request) return;
  state.pending.delete(key!);
  completed.push({ request, outcome: "response", pieces: parts });
}

function firstNonWs(parts: Uint8Array[]): number | undefined {
  for (const part of parts) for (const b of part) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return b;
  return undefined;
}

function lastNonWs(parts: Uint8Array[]): number | undefined {
  for (let i = parts.length - 1; i >= 0; i--) {
    const part = parts[i]!;
    for (let j = part.length - 1; j >= 0; j--) {
      const b = part[j]!;
      if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return b;
    }
  }
  return undefined;
}

/** The last 4 KiB of a line held as pieces. */
function tailOf(parts: Uint8Array[]): Uint8Array {
  const last = parts[parts.length - 1]!;
  if (last.length >= 4096 || parts.length === 1) return last.subarray(Math.max(0, last.length - 4096));
  const prev = parts[parts.length - 2]!;
  return Buffer.concat([prev.subarray(Math.max(0, prev.length - (4096 - last.length))), last]);
}

export type { PendingRequest };
