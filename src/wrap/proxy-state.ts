/**
 * What both relay directions share: requests awaiting a response, counters for the stop record,
 * and the session's evidence and policy. One instance per wrap run.
 */
import type { FileSink } from "bun";
import type { Counts } from "../evidence/records.ts";
import { sha256Hex } from "../shared/digest.ts";
import type { JsonRpcId } from "./client-frames.ts";
import type { LineWriter } from "../shared/ndjson/line-writer.ts";
import type { PolicyGate } from "./policy-gate.ts";
import { SERVER_GONE, errorLine } from "./rpc-replies.ts";
import type { SessionEvidence } from "./session-evidence.ts";

export interface PendingRequest {
  id: JsonRpcId;
  method: string;
  tool?: string;
  /** performance.now() at arrival (durations). */
  startedMs: number;
  /** Date.now() at arrival (formatted only when a receipt is written). */
  startedWallMs: number;
  requestSha256: string;
  requestBytes: number;
  /** Part of the evidence session (false only for a pre-session server/discover). */
  inSession: boolean;
}

/** What a receipt says about the request (a refused frame may have no method). */
export type ReceiptSubject = Omit<PendingRequest, "inSession" | "method"> & { method: string | null };

export class ProxyState {
  readonly pending = new Map<string, PendingRequest>();
  readonly counts: Counts = {
    client_messages: 0,
    server_messages: 0,
    rejected_frames: 0,
    server_garbage_lines: 0,
    oversized: 0,
  };

  constructor(
    readonly evidence: SessionEvidence,
    readonly policy: PolicyGate,
    readonly client: LineWriter,
    readonly serverStdin: FileSink,
    readonly maxMessageBytes: number,
    readonly onEvidenceFailure: "deny" | "continue",
  ) {}

  track(idKey: string, id: JsonRpcId, method: string, tool: string | undefined, line: Uint8Array): void {
    const request: PendingRequest = {
      id,
      method,
      startedMs: performance.now(),
      startedWallMs: Date.now(),
      // Hashing a large request costs; only receipts need the digest.
      requestSha256: this.evidence.keepsReceipts ? sha256Hex(line) : "",
      requestBytes: line.length,
      inSession: this.evidence.started,
    };
    // Set, not spread: a spread of `{ tool }` is one more object per request (issue 16, garbage per message).
    if (tool !== undefined) request.tool = tool;
    this.pending.set(idKey, request);
  }

  /** Writes the receipt of a request vigil has answered or seen answered. */
  receipt(
    request: ReceiptSubject,
    outcome: "response" | "error" | "denied" | "rejected" | "no_response",
    /** The response line's bytes, as one view or as pieces; a final newline is not digested. */
    response?: Uint8Array | Uint8Array[],
  ): void {
    if (!this.evidence.keepsReceipts) return;
    const digest = response === undefined ? undefined : digestLine(Array.isArray(response) ? response : [response]);
    this.evidence.recordReceipt({
      request_id: request.id,
      method: request.method,
      ...(request.tool === undefined ? {} : { tool: request.tool }),
      outcome,
      request_sha256: request.requestSha256,
      ...(digest === undefined ? {} : { response_sha256: digest.sha256, response_bytes: digest.bytes }),
      request_bytes: request.requestBytes,
      started_at: new Date(request.startedWallMs).toISOString(),
      duration_us: Math.round((performance.now() - request.startedMs) * 1000),
    });
  }

  /**
   * The server is gone: every request still waiting gets a JSON-RPC error (so the client does not
   * hang), and its receipt says no response came from the server.
   */
  async failPending(message: string): Promise<void> {
    const replies: Uint8Array[] = [];
    for (const request of this.pending.values()) {
      replies.push(errorLine(request.id, SERVER_GONE, message));
      if (request.inSession) this.receipt(request, "no_response");
    }
    this.pending.clear();
    if (replies.length > 0) await this.client.write(replies);
  }
}

/** SHA-256 and length of a line held as pieces, excluding its terminating newline. */
function digestLine(pieces: Uint8Array[]): { sha256: string; bytes: number } {
  const hasher = new Bun.CryptoHasher("sha256");
  let bytes = 0;
  pieces.forEach((piece, i) => {
    const last = i === pieces.length - 1;
    const view = last && piece[piece.length - 1] === 0x0a ? piece.subarray(0, piece.length - 1) : piece;
    hasher.update(view);
    bytes += view.length;
  });
  return { sha256: hasher.digest("hex"), bytes };
}
