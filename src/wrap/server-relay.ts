/**
 * Server → client: forward lines byte-for-byte, drop stdout pollution, refuse what a client's
 * parser could read otherwise than vigil does, hold the cap, and parse only the responses that must
 * be parsed (initialize for the context record, tools/list for pins and hide_denied). Everything
 * else is classified by a walk of its structure that decodes keys and the id (server-frames.ts).
 */
import { logLine, preview } from "../shared/log.ts";
import { isRecord } from "../shared/guards.ts";
import { parseStrictJson } from "../shared/strict-json.ts";
import { boundedInfo } from "./client-relay.ts";
import { overCapFacts } from "../shared/ndjson/message-head.ts";
import { type Frame, joinParts } from "../shared/ndjson/line-splitter.ts";
import type { PendingRequest, ProxyState } from "./proxy-state.ts";
import { SERVER_GONE, encodeLine, errorLine } from "./rpc-replies.ts";
import { type ServerFrameInfo, scanServerFrame } from "./server-frames.ts";

/** tools/list results are parsed whole; tool schemas nest, but not without bound. */
export const TOOLS_LIST_MAX_DEPTH = 128;

interface Completed {
  request: PendingRequest;
  outcome: "response" | "error";
  /** The bytes relayed for it, the last piece ending with the newline. */
  pieces: Uint8Array[];
}

type WholeFrame = Exclude<Frame, { kind: "oversized" }>;

/** Handles the frames of one chunk of server output; resolves once the client has taken them. */
export async function relayServerFrames(state: ProxyState, frames: Frame[]): Promise<void> {
  const out: Uint8Array[] = [];
  const completed: Completed[] = [];
  for (const frame of frames) {
    const reply = frame.kind === "oversized" ? relayed(out, replaceOversized(state, frame.head, frame.tail, frame.length)) : relayFrame(state, frame, out);
    if (reply) completed.push(reply);
  }
  if (out.length === 0) return;
  await state.client.write(out);
  // The reads of a relayed multi-megabyte line are garbage now, and young (the line itself sits in
  // pooled blocks, run.ts): a collection hint frees them at once for ~0.3 ms, which keeps the peak
  // ~8 MiB lower than waiting for the collector's own allocation trigger.
  if (frames.some((f) => f.kind === "parts")) Bun.gc(false);
  for (const c of completed) {
    if (c.request.inSession) state.receipt(c.request, c.outcome, c.pieces);
  }
  // The context record follows the first response relayed in the session (normally initialize's).
  if (completed.some((c) => c.request.inSession)) state.evidence.writeContext();
}

/**
 * One complete line (contiguous, or the pieces of a large one, walked without joining them):
 * pushes what the client gets onto `out`; returns the request it completes, if any.
 */
function relayFrame(state: ProxyState, frame: WholeFrame, out: Uint8Array[]): Completed | null {
  const pieces = frame.kind === "parts" ? frame.parts : [frame.withNewline];
  const info = scanServerFrame(pieces);
  if (info === null) {
    const first = frame.kind === "parts" ? frame.parts[0]! : frame.bytes;
    if (first.length > 0) {
      state.counts.server_garbage_lines++;
      logLine(`dropped a non-JSON line from the server's stdout: "${preview(first)}"`);
    }
    return null;
  }
  const request = info.kind === "response" && info.idKey !== null ? state.pending.get(info.idKey) : undefined;
  if (info.refused) return relayed(out, refuseLine(state, info, request));
  state.counts.server_messages++;
  if (!request) {
    out.push(...pieces);
    return null;
  }
  state.pending.delete(info.idKey!);
  const outcome = info.outcome === "error" ? "error" : "response";
  if (request.method !== "initialize" && request.method !== "tools/list") {
    out.push(...pieces);
    return { request, outcome, pieces };
  }
  const inspected = inspectResponse(state, request, frame.kind === "parts" ? joinParts(frame) : frame);
  if (typeof inspected === "string") return relayed(out, refusal(request, inspected));
  out.push(inspected);
  return { request, outcome, pieces: [inspected] };
}

function relayed(out: Uint8Array[], reply: Completed | null): Completed | null {
  if (reply) out.push(...reply.pieces);
  return reply;
}

const REFUSAL_TEXT: Record<NonNullable<ServerFrameInfo["refused"]>, string> = {
  duplicate_key: "a key appears twice in one object",
  too_deep: "nested too deeply",
};

/**
 * A server line a client's parser could read otherwise than vigil did (wrap.md §10, as for client
 * lines): never forwarded; the request it answers, if any, gets an error instead. The log line does
 * not echo content (a duplicated key may be anything the server wrote).
 */
function refuseLine(state: ProxyState, info: ServerFrameInfo, request: PendingRequest | undefined): Completed | null {
  state.counts.server_garbage_lines++;
  const why = REFUSAL_TEXT[info.refused!];
  logLine(`refused a message from the server's stdout (${why})${request ? "; answering its request with an error" : "; dropped"}`);
  if (!request) return null;
  state.pending.delete(info.idKey!);
  return refusal(request, why);
}

function refusal(request: PendingRequest, why: string): Completed {
  return { request, outcome: "error", pieces: [errorLine(request.id, SERVER_GONE, `vigil: the server's response was refused: ${why}`)] };
}

/**
 * Parses the few responses vigil must understand, strictly and decoded as the client reads them;
 * returns the bytes to forward, or why a tools/list response is refused: vigil forwards no listing
 * it could not check for pins and hide_denied.
 */
function inspectResponse(state: ProxyState, request: PendingRequest, frame: Extract<Frame, { kind: "line" }>): Uint8Array | string {
  const parsed = parseStrictJson(frame.bytes, { maxDepth: TOOLS_LIST_MAX_DEPTH });
  if (!parsed.ok) {
    if (request.method !== "tools/list") return frame.withNewline;
    logLine(`refused the server's tools/list response: ${parsed.message}`);
    return `not strict JSON (${parsed.fault})`;
  }
  const message = parsed.value;
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

/**
 * An over-cap server line: an error to the request it answers, otherwise dropped. Its bounded ends
 * are read decoded; a head that shows a method is a request or notification, never an answer.
 */
function replaceOversized(state: ProxyState, head: Uint8Array, tail: Uint8Array, length: number): Completed | null {
  state.counts.oversized++;
  const facts = overCapFacts(head, tail);
  const key = facts.id === null || facts.hasMethod ? null : JSON.stringify(facts.id);
  const request = key === null ? undefined : state.pending.get(key);
  logLine(`server sent a ${length}-byte message (cap ${state.maxMessageBytes})${request ? "; answering its request with an error" : "; dropped"}`);
  if (!request) return null;
  state.pending.delete(key!);
  return { request, outcome: "error", pieces: [errorLine(request.id, SERVER_GONE, `response larger than ${state.maxMessageBytes} bytes`)] };
}

export type { PendingRequest };
