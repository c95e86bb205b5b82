/**
 * A read from a range that transcript retention deleted (issue 12 item A): `?since=` and
 * `get_transcript` answer it with the stable code `transcript_pruned` and the oldest seq still
 * stored, so a client can resume from there (`since = oldest_seq - 1`) knowing what it missed.
 */
import { StateError, isStateError } from "../../shared/durable/state-error.ts";
import type { CommandId, CommandName } from "../protocol/commands.ts";
import type { ResponseError } from "../protocol/frames.ts";

export const TRANSCRIPT_PRUNED = "transcript_pruned";

export class TranscriptPrunedError extends StateError {
  constructor(readonly since: number, readonly oldestSeq: number) {
    super(TRANSCRIPT_PRUNED, prunedMessage(since, oldestSeq));
  }
}

export function isTranscriptPruned(e: unknown): e is TranscriptPrunedError {
  return isStateError(e, TRANSCRIPT_PRUNED) && e instanceof TranscriptPrunedError;
}

export function prunedMessage(since: number, oldestSeq: number): string {
  return `frames after since=${since} are no longer all stored: transcript retention deleted frames before seq ${oldestSeq}, the oldest still available; resume with since=${oldestSeq - 1} or later`;
}

/** The body of the daemon's HTTP answer (410) to `?since=` in a pruned range. */
export function prunedBody(e: TranscriptPrunedError): { error: { code: string; message: string; oldest_seq: number } } {
  return { error: { code: TRANSCRIPT_PRUNED, message: e.message, oldest_seq: e.oldestSeq } };
}

/** The `get_transcript` answer: a response error whose `error` also carries `oldest_seq`. */
export function prunedResponse(id: CommandId | null, command: CommandName | null, e: TranscriptPrunedError): ResponseError {
  return { type: "response", id, command, success: false, error: { code: TRANSCRIPT_PRUNED, message: e.message, oldest_seq: e.oldestSeq } as ResponseError["error"] };
}

/** The refusal of `?since=N` when frames after N were pruned (N + 1 is before the oldest stored), else null. */
export function sincePruned(since: number | null, oldestSeq: number): TranscriptPrunedError | null {
  return since !== null && since + 1 < oldestSeq ? new TranscriptPrunedError(since, oldestSeq) : null;
}
