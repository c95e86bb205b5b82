/**
 * The answers to a session's commands (serve.md §4): each command gets exactly one `response`,
 * decided here from what the session offers (`CommandTarget`); the session stores and broadcasts
 * it (session.ts `respond`). A prompt accepted while idle gives a run to start: `after` starts it
 * once the response is stored, so the response precedes the run's `run_start`.
 */
import type { Command, CommandName } from "../protocol/commands.ts";
import { type ResponseFrame, errorResponse, okResponse } from "../protocol/frames.ts";
import type { ReadSinceOptions, ReadSinceResult } from "../state/transcript.ts";
import { isTranscriptPruned, prunedResponse } from "../state/transcript-pruned.ts";
import { errorMessage } from "../../shared/errors.ts";
import type { PendingItem } from "./queues.ts";
import type { EventsHandler, SessionStateData } from "./types.ts";

/** How a session took a message in: a run to start (idle), or its place in a queue (busy). */
export type Accepted = { start: { id: string; go: () => void } } | { queued: "follow_up"; position: number } | { queued: "steer" };

/** The part of a session the commands use. */
export interface CommandTarget {
  accept(item: PendingItem, behavior: "follow_up" | "steer", idleTrigger: string): Accepted;
  /** Aborts the run in flight, if any; returns its id (null: none). */
  abortRun(): string | null;
  stateData(): SessionStateData;
  replay(since: number, bounds: ReadSinceOptions): Promise<ReadSinceResult>;
  events: EventsHandler;
}

/** The response to `command` (not stored yet), and what to do once it is. Never rejects. */
export async function answerCommand(target: CommandTarget, command: Command): Promise<{ response: ResponseFrame; after: (() => void) | null }> {
  const id = command.id;
  const type = command.type as CommandName;
  try {
    switch (command.type) {
      case "prompt": {
        const r = target.accept({ text: command.message }, command.streaming_behavior ?? "follow_up", "prompt");
        if ("start" in r) return { response: okResponse(id, type, { run_id: r.start.id }), after: r.start.go };
        const data = r.queued === "follow_up" ? { queued: "follow_up", position: r.position } : { queued: "steer" };
        return { response: okResponse(id, type, data), after: null };
      }
      case "abort":
        return { response: okResponse(id, type, { aborted: target.abortRun() }), after: null };
      case "get_state":
        return { response: okResponse(id, type, target.stateData()), after: null };
      case "get_transcript": {
        const page = await target.replay(command.since ?? 0, command.limit === undefined ? {} : { limit: command.limit });
        return { response: okResponse(id, type, { frames: page.records, more: page.more }), after: null };
      }
      case "mcp_events_list":
      case "mcp_events_subscribe":
      case "mcp_events_unsubscribe": {
        const r = await target.events(command);
        return { response: { ...r, id: command.id, command: command.type } as ResponseFrame, after: null };
      }
      default:
        return { response: errorResponse(id, null, "unknown_command", "unknown command type"), after: null };
    }
  } catch (e) {
    const response = isTranscriptPruned(e) ? prunedResponse(id, type, e) : errorResponse(id, type, "internal", errorMessage(e));
    return { response, after: null };
  }
}
